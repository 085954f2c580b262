"""The soak loop shared by ``python -m tests.fuzz`` and the CI budget."""
import collections
import os
import time
import traceback

from .generate import FAMILIES, generate
from .oracles import ORACLES, check
from .repro import standalone
from .runtime import Invalid
from .shrink import shrink, signature


class Stats:
    def __init__(self, oracles):
        self.oracles = oracles
        self.programs = 0
        self.invalid = 0
        self.checked = collections.Counter()
        self.skipped = collections.Counter()
        self.mismatched = collections.Counter()
        self.kinds = collections.Counter()
        self.known = collections.Counter()  # (oracle, KNOWN kind) -> programs
        self.failures = []  # (seed, oracle, first mismatch, shrunk source or None)

    @property
    def total_mismatches(self):
        return sum(self.mismatched.values())

    def table(self):
        rows = [f"{'oracle':<18} {'checked':>8} {'mismatches':>10} {'not applicable':>15}"]
        for o in self.oracles:
            rows.append(f"{o:<18} {self.checked[o]:>8} {self.mismatched[o]:>10} {self.skipped[o]:>15}")
        return "\n".join(rows)


def run(minutes=1.0, seed=0, count=None, family="graph", oracles=None, shrink=True, shrink_seconds=120.0,
        max_shrinks=3, out_dir=None, verbose=False, stream=None):
    say = (lambda *a: print(*a, file=stream, flush=True)) if stream else (lambda *a: None)
    oracles = oracles or ORACLES
    stats = Stats(oracles)
    deadline = time.monotonic() + 60.0 * minutes
    start = time.monotonic()
    s = seed
    budget = f"{minutes:g} min" if minutes < 1e8 else f"{count} programs"
    say(f"fuzz: family {family}, seeds from {seed}, {budget}, oracles {', '.join(oracles)}")
    while time.monotonic() < deadline and (count is None or stats.programs < count):
        try:
            prog = generate(s, family)
        except Exception as e:  # noqa: BLE001
            say(f"seed {s}: the generator failed: {e!r}")
            stats.failures.append((s, "generator", repr(e), None))
            s += 1
            continue
        stats.programs += 1
        try:
            res = check(prog, oracles)
        except Invalid as e:
            stats.invalid += 1
            if verbose:
                say(f"seed {s}: ill-formed ({e})")
            s += 1
            continue
        line = []
        for o, r in res.items():
            if isinstance(r, str):
                stats.skipped[o] += 1
                line.append(f"{o}=skip")
                continue
            stats.checked[o] += 1
            for kind, _, _ in r.known[:1]:
                stats.known[(o, kind)] += 1
            if not r.found:
                line.append(f"{o}=ok" + ("(known)" if r.known else ""))
                continue
            r = r.found
            stats.mismatched[o] += 1
            line.append(f"{o}=MISMATCH")
            sig = signature(r)
            stats.kinds[sig] += 1
            say(f"seed {s}: {r[0]}")
            src = None
            if shrink and stats.kinds[sig] <= max_shrinks:
                try:
                    small, n = shrink_fn(prog, r, shrink_seconds)
                    name = f"{o}_seed{s}"
                    src = standalone(small, o, name, note=f"python -m tests.fuzz --seed {s} --count 1 ({o})")
                    say(f"seed {s}: shrunk to {len(small.nodes)} nodes in {n} checks:\n{src}")
                    if out_dir:
                        with open(os.path.join(out_dir, f"{name}.py"), "w") as f:
                            f.write(src)
                except Exception:  # noqa: BLE001
                    say(f"seed {s}: shrinking failed:\n{traceback.format_exc()}")
            stats.failures.append((s, o, str(r[0]), src))
        if verbose:
            say(f"seed {s}: {prog.dtype} {len(prog.nodes)} nodes {prog.train.optimizer}: {' '.join(line)}")
        s += 1
    elapsed = time.monotonic() - start
    say(f"\nfuzz: {stats.programs} programs ({stats.invalid} ill-formed) from seeds {seed}..{s - 1} in "
        f"{elapsed / 60:.1f} min")
    say(stats.table())
    say(f"mismatches: {stats.total_mismatches}")
    for sig, n in stats.kinds.most_common():
        say(f"  {n:5d}  {sig}")
    if stats.known:
        say("known deviations (programs; see tests/fuzz/oracles.py KNOWN and the xfails in "
            "tests/test_fuzz_regressions.py):")
        for (o, kind), n in sorted(stats.known.items()):
            say(f"  {n:5d}  {o}: {kind}")
    return stats


def shrink_fn(prog, mismatches, budget):
    return shrink(prog, mismatches, budget_s=budget)


__all__ = ["FAMILIES", "ORACLES", "run"]
