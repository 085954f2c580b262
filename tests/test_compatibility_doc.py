"""docs/compatibility.md stays true: every name it lists under "Has (ns)"
exists in that Lucid namespace and every name under "Missing (ns)" does not
(so adding a feature means moving it in the doc)."""
import importlib
import os
import re

import pytest

import lucid

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "compatibility.md")
LINE = re.compile(r"^- (Has|Missing) \(([\w.]+)\): (.*)$")


def _entries():
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            m = LINE.match(line.strip())
            if m:
                kind, namespace, rest = m.groups()
                yield kind, namespace, re.findall(r"`([\w.]+)`", rest)


def _resolve(namespace):
    if namespace == "lucid.Tensor":
        return lucid.Tensor
    if namespace == "lucid.nn.Module":
        return lucid.nn.Module
    return importlib.import_module(namespace)


ENTRIES = list(_entries())


def test_doc_has_checked_lists():
    kinds = {(k, ns) for k, ns, _ in ENTRIES}
    assert ("Has", "lucid.nn") in kinds and ("Missing", "lucid.nn.functional") in kinds
    assert sum(len(names) for _, _, names in ENTRIES) > 300


@pytest.mark.parametrize("kind,namespace,names", ENTRIES, ids=[f"{k}-{ns}" for k, ns, _ in ENTRIES])
def test_doc_lists_match_lucid(kind, namespace, names):
    target = _resolve(namespace)
    wrong = [n for n in names if hasattr(target, n) != (kind == "Has")]
    assert not wrong, f"docs/compatibility.md lists these under {kind} ({namespace}), but they are " \
                      f"{'absent' if kind == 'Has' else 'present'}: {wrong}"
