"""Syntax and type check of the Metal backend's Objective-C++ on any machine.

Clang parses every csrc/lucid/backend/metal/*.mm file as Objective-C++ with
ARC for macOS at the wheels' deployment target, against declarations of the
Apple API written from Apple's documentation (tests/metal_api/include; see
lucid_apple_doc.h there). No Apple SDK is involved, so the check runs on Linux.

It proves that the files parse, that every class, method, property, enum
and function they use is declared with the documented types (a misspelt
selector or a wrong argument type is an error under ARC), that nothing newer
than the deployment target is used outside an @available check, and that the
declarations are exactly the used surface (the census: an API declared but
never used is reported too). It does not prove that the backend links, runs,
or that MPSGraph accepts the shapes and types it is given at run time.

    python tests/metal_api/check.py            # report; exit status 1 on findings
    python tests/metal_api/check.py --quiet    # only the summary line

The standard library comes from the host (libstdc++ and the C library headers
clang would use for a Linux build), parsed with the macOS target triple of the
host's architecture; the two differences that matter (macOS's `__nonnull`
keyword macro and the GNU feature macros) are undone on the command line.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API_INCLUDE = Path(__file__).resolve().parent / "include"
BACKEND = ROOT / "csrc" / "lucid" / "backend" / "metal"

MARKERS = ("LUCID_DOC", "LUCID_DOC_FAMILY", "LUCID_DOC_IMPLICIT", "LUCID_DOC_STRUCTURAL")
_MARKER_RE = re.compile(r'\b(LUCID_DOC(?:_FAMILY|_IMPLICIT|_STRUCTURAL)?)\(\s*([0-9.]+)\s*,\s*((?:"[^"]*"\s*)+)\)')
_DEPRECATED_RE = re.compile(r"is deprecated: lucid-apple-api (.+?) \[-Wdeprecated-declarations\]")
_DIAG_RE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|warning|fatal error): (?P<msg>.*)$")

# Declarations the compiler uses by itself, each with the source syntax that
# needs it; a source using none of these makes the declaration unused.
IMPLICIT_USES = {
    "foundation/nsarray/init(objects:count:)": re.compile(r"@\["),
    "foundation/nsnumber/init(value:)-3jgc4": re.compile(r"@-?\d"),
    "foundation/nsfastenumeration/countbyenumerating(with:objects:count:)": re.compile(
        r"\bfor\s*\(\s*[A-Za-z_][\w<>* ]*\*?\s*\w+\s+in\s"),
}


@dataclasses.dataclass
class Declaration:
    marker: str
    macos: str
    page: str
    header: str
    line: int


@dataclasses.dataclass
class Report:
    errors: list[str]            # error diagnostics, each with its location
    used: set[str]               # pages of LUCID_DOC/LUCID_DOC_FAMILY declarations the sources use
    structural_used: set[str]    # pages of LUCID_DOC_STRUCTURAL declarations something names
    declarations: list[Declaration]
    files: list[Path]

    def by_marker(self, *markers: str) -> list[Declaration]:
        return [d for d in self.declarations if d.marker in markers]

    def unused(self) -> list[Declaration]:
        """Declarations nothing uses (the census and the implicit-use rules)."""
        sources = "\n".join(f.read_text() for f in self.files)
        out = []
        for d in self.declarations:
            if d.marker in ("LUCID_DOC", "LUCID_DOC_FAMILY") and d.page not in self.used:
                out.append(d)
            elif d.marker == "LUCID_DOC_STRUCTURAL" and d.page not in self.structural_used:
                out.append(d)
            elif d.marker == "LUCID_DOC_IMPLICIT":
                rule = IMPLICIT_USES.get(d.page)
                if rule is None or not rule.search(sources):
                    out.append(d)
        return out


def find_clang() -> str | None:
    for name in ("clang++", "clang++-19", "clang++-18", "clang++-17", "clang++-16", "clang++-15", "clang++-14"):
        path = shutil.which(name)
        if path:
            return path
    return None


def deployment_target() -> str:
    """The macOS version CMakeLists.txt builds the wheels for (one definition)."""
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r'set\(CMAKE_OSX_DEPLOYMENT_TARGET\s+"([0-9.]+)"', text)
    if not m:
        raise RuntimeError("CMakeLists.txt does not set a default CMAKE_OSX_DEPLOYMENT_TARGET")
    return m.group(1)


@functools.lru_cache(maxsize=None)
def host_include_dirs(clang: str) -> tuple[str, ...]:
    """The C and C++ include directories clang uses for a host build, minus its
    own resource directory (the macOS target brings its own)."""
    proc = subprocess.run([clang, "-x", "c++", "-std=c++17", "-E", "-v", "-"], input="", capture_output=True,
                          text=True, check=True)
    dirs, inside = [], False
    for line in proc.stderr.splitlines():
        if line.startswith("#include <...> search starts here:"):
            inside = True
        elif line.startswith("End of search list."):
            break
        elif inside:
            d = line.strip()
            if "/lib/clang/" not in d and "/lib64/clang/" not in d:
                dirs.append(d)
    return tuple(dirs)


def clang_command(clang: str, source: Path, mode: str) -> list[str]:
    """`mode`: "check" (errors, availability), "census" (which declarations the
    source uses) or "structural" (which structural declarations are named)."""
    arch = "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"
    cmd = [clang, f"--target={arch}-apple-macos{deployment_target()}", "-fsyntax-only", "-x", "objective-c++",
           "-std=c++17", "-fobjc-arc", "-fobjc-exceptions", "-nostdinc++", "-U__nonnull", "-D_GNU_SOURCE",
           "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror", "-Werror=unguarded-availability-new",
           "-ferror-limit=0", "-fno-color-diagnostics", "-fno-caret-diagnostics", f"-I{ROOT / 'csrc'}"]
    # A deprecation hides the availability diagnostic of the same use, so the
    # census runs separately from the check.
    if mode == "census":
        cmd += ["-DLUCID_APPLE_CENSUS", "-Wno-error=deprecated-declarations", f"-isystem{API_INCLUDE}"]
    elif mode == "structural":
        cmd += ["-DLUCID_APPLE_CENSUS_STRUCTURAL", "-Wno-error=deprecated-declarations", f"-I{API_INCLUDE}"]
    else:
        cmd += [f"-isystem{API_INCLUDE}"]
    for d in host_include_dirs(clang):
        cmd.append(f"-isystem{d}")
    cmd.append(str(source))
    return cmd


def parse_declarations() -> list[Declaration]:
    out = []
    for header in sorted(API_INCLUDE.rglob("*.h")):
        if header.name == "lucid_apple_doc.h":
            continue
        text = header.read_text()
        for m in _MARKER_RE.finditer(text):
            page = "".join(re.findall(r'"([^"]*)"', m.group(3)))
            out.append(Declaration(m.group(1), m.group(2), page, str(header.relative_to(API_INCLUDE)),
                                   text.count("\n", 0, m.start()) + 1))
    return out


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.stderr


def run(files: list[Path] | None = None, clang: str | None = None) -> Report:
    clang = clang or find_clang()
    if clang is None:
        raise FileNotFoundError("clang++ is not installed (Debian: apt-get install clang)")
    files = sorted(files if files is not None else BACKEND.glob("*.mm"))
    with tempfile.TemporaryDirectory() as tmp:
        # The structural census needs only the declarations themselves.
        headers = Path(tmp) / "all_headers.mm"
        headers.write_text("".join(f"#import <{h.relative_to(API_INCLUDE)}>\n" for h in sorted(API_INCLUDE.rglob("*.h"))
                                   if h.name != "lucid_apple_doc.h"))
        jobs = [(f, mode) for f in files for mode in ("check", "census")] + [(headers, "structural")]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            outputs = list(pool.map(lambda job: _run(clang_command(clang, job[0], job[1])), jobs))
    errors: list[str] = []
    used: set[str] = set()
    structural: set[str] = set()
    for (source, mode), text in zip(jobs, outputs):
        for line in text.splitlines():
            dm = _DEPRECATED_RE.search(line)
            if dm:
                (structural if mode == "structural" else used).add(dm.group(1))
                continue
            m = _DIAG_RE.match(line)
            if mode != "census" and m and m.group("kind") in ("error", "fatal error"):
                where = os.path.relpath(m.group("file"), ROOT) if os.path.isabs(m.group("file")) else m.group("file")
                errors.append(f"{where}:{m.group('line')}:{m.group('col')}: {m.group('msg')}")
    return Report(errors, used, structural, parse_declarations(), files)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quiet", action="store_true", help="print only the summary line")
    args = ap.parse_args(argv)
    try:
        report = run()
    except FileNotFoundError as e:
        print(f"metal API check: {e}", file=sys.stderr)
        return 2
    unused = report.unused()
    if not args.quiet:
        for e in report.errors:
            print(e)
        for d in unused:
            print(f"{d.header}:{d.line}: unused declaration ({d.marker}): {d.page}")
    decls = report.declarations
    read = len(report.by_marker("LUCID_DOC"))
    print(f"metal API check: {len(report.files)} .mm files, {len(report.errors)} errors; "
          f"{len(decls)} declarations ({read} from pages read, {len(report.by_marker('LUCID_DOC_FAMILY'))} by family, "
          f"{len(report.by_marker('LUCID_DOC_IMPLICIT'))} implicit, {len(report.by_marker('LUCID_DOC_STRUCTURAL'))} "
          f"structural), {len(unused)} unused")
    return 0 if not report.errors and not unused else 1


if __name__ == "__main__":
    sys.exit(main())
