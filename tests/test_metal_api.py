"""The Metal backend's Objective-C++ parsed and type-checked on any machine
(tests/metal_api/check.py): clang, the macOS target triple and declarations of
the Apple API written from Apple's documentation. Also checks that the check
itself catches what it claims to: an unknown selector or class, a wrong
argument type, API newer than the deployment target outside @available, and
declarations nothing uses."""
import re
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "metal_api"))
import check  # noqa: E402

CLANG = check.find_clang()
needs_clang = pytest.mark.skipif(CLANG is None, reason="clang++ is not installed (.ci/run installs Debian's clang)")


@needs_clang
def test_backend_parses_and_uses_exactly_the_declared_api():
    report = check.run(clang=CLANG)
    assert report.files, "no .mm files found"
    assert not report.errors, "clang reports:\n" + "\n".join(report.errors)
    unused = report.unused()
    assert not unused, "declared but unused:\n" + "\n".join(f"{d.header}:{d.line} {d.page}" for d in unused)
    assert report.used, "the census saw no use at all: the deprecation markers are not reaching clang"


def test_every_declaration_cites_a_page_and_a_version():
    decls = check.parse_declarations()
    assert len(decls) > 100
    pages = [d.page for d in decls]
    assert len(pages) == len(set(pages)), "two declarations cite one page"
    for d in decls:
        assert re.fullmatch(r"\d+\.\d+", d.macos), d
        assert re.fullmatch(r"[a-z0-9]+(/[^\s/]+)+", d.page), d
    for page in check.IMPLICIT_USES:
        assert page in pages


def _snippet(tmp_path, body):
    src = tmp_path / "snippet.mm"
    src.write_text(textwrap.dedent("""\
        #import <Foundation/Foundation.h>
        #import <Metal/Metal.h>
        #import <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>
        """) + textwrap.dedent(body))
    return check.run(files=[src], clang=CLANG)


@needs_clang
@pytest.mark.parametrize("body, expected", [
    ("MPSGraphTensor* f(MPSGraph* g, MPSGraphTensor* x) { return [g exponentialWithTensor:x name:nil]; }",
     "exponentialWithTensor"),
    ("MPSGraphTensor* f(MPSGraph* g, MPSGraphTensor* x) { return [g additionWithPrimaryTensor:x secondaryTensor:@3"
     " name:nil]; }", "NSNumber"),
    ("void f() { MPSGraphFoo* x = nil; (void)x; }", "MPSGraphFoo"),
    ("MPSDataType f() { return MPSDataTypeBFloat16; }", "only available on macOS 14.0"),
])
def test_the_check_catches_misuse(tmp_path, body, expected):
    report = _snippet(tmp_path, body)
    assert any(expected in e for e in report.errors), report.errors


@needs_clang
def test_guarded_newer_api_passes_and_unused_declarations_are_reported(tmp_path):
    report = _snippet(tmp_path, """\
        MPSDataType f() {
          if (@available(macOS 14.0, *)) return MPSDataTypeBFloat16;
          return MPSDataTypeFloat32;
        }
        """)
    assert not report.errors, report.errors
    assert "metalperformanceshaders/mpsdatatype/bfloat16" in report.used
    unused = {d.page for d in report.unused()}
    assert "metalperformanceshadersgraph/mpsgraph/cast(_:to:name:)" in unused
    assert "metalperformanceshaders/mpsdatatype/bfloat16" not in unused


def _declared_selectors():
    """Selectors of the methods declared in the MPSGraph header."""
    text = (check.API_INCLUDE / "MetalPerformanceShadersGraph" / "MetalPerformanceShadersGraph.h").read_text()
    out = set()
    for decl in re.findall(r"^[-+] \(.*?(?=LUCID_DOC)", text, flags=re.S | re.M):
        parts = re.findall(r"(\w+):\(", decl)
        out.add("".join(p + ":" for p in parts) if parts else re.findall(r"\)\s*(\w+)", decl)[0])
    return out


def test_plan_operations_are_declared_selectors():
    """plan.h names the MPSGraph selector of every plan operation; each must be
    one the declarations (and so the check) know."""
    plan_h = (check.ROOT / "csrc" / "lucid" / "backend" / "metal" / "plan.h").read_text()
    selectors = re.findall(r'X\(\w+, "([^"]+)"\)', plan_h)
    assert len(selectors) > 60
    missing = sorted(set(selectors) - _declared_selectors())
    assert not missing, missing
