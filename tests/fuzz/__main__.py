"""The soak: ``python -m tests.fuzz --minutes N [--seed S] [--family F]``.

Generates programs from consecutive seeds, runs every oracle on each, and
prints the programs checked and the mismatches found per oracle; each
mismatch is shrunk and printed as a runnable pytest function (the form kept
in tests/test_fuzz_regressions.py). ``--seed S --count 1`` replays one
program.
"""
import argparse
import os
import sys
import time

from . import soak


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=None,
                    help="wall-clock budget (default 1, or none when --count is given)")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock)")
    ap.add_argument("--count", type=int, default=None, help="stop after this many programs")
    ap.add_argument("--family", default="graph", choices=sorted(soak.FAMILIES), help="program family")
    ap.add_argument("--oracles", default=None, help="comma-separated subset of: " + ", ".join(soak.ORACLES))
    ap.add_argument("--no-shrink", action="store_true", help="report mismatches without shrinking them")
    ap.add_argument("--shrink-seconds", type=float, default=120.0, help="budget per shrink (default 120)")
    ap.add_argument("--max-shrinks", type=int, default=3, help="shrinks per kind of mismatch (default 3)")
    ap.add_argument("--out", default=None, help="directory for the shrunk reproductions (one .py each)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every program's seed and result")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else int(time.time()) % 1_000_000
    oracles = a.oracles.split(",") if a.oracles else None
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    minutes = a.minutes if a.minutes is not None else (1e9 if a.count else 1.0)
    stats = soak.run(minutes=minutes, seed=seed, count=a.count, family=a.family, oracles=oracles,
                     shrink=not a.no_shrink, shrink_seconds=a.shrink_seconds, max_shrinks=a.max_shrinks,
                     out_dir=a.out, verbose=a.verbose, stream=sys.stdout)
    return 1 if stats.total_mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
