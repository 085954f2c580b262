"""lucid.utils._pytree against torch.utils._pytree: the same leaves, specs
(as structure), rebuilt trees, maps and errors for tuples, lists, dicts,
namedtuples, OrderedDicts, defaultdicts, deques and registered types."""
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch.utils._pytree as tp

import lucid
import lucid.utils._pytree as lp

Point = namedtuple("Point", "x y")

TREES = [
    1,
    None,
    (),
    [1, (2, 3), {"b": 4, "a": [5, None]}],
    Point(1, [2, 3]),
    OrderedDict([("z", 1), ("y", (2,))]),
    defaultdict(list, {"k": 1, "j": [2]}),
    deque([1, [2, 3]], maxlen=5),
    {"nested": {"deeper": (Point(1, 2), [OrderedDict(q=3)])}},
]


def _describe(spec):
    """A spec as plain data, to compare the two libraries' specs."""
    if spec.is_leaf():
        return "*"
    kind = spec.type if isinstance(spec.type, str) else spec.type.__name__
    return (kind, spec.context, [_describe(c) for c in spec.children()])


@pytest.mark.parametrize("tree", TREES, ids=lambda t: type(t).__name__)
def test_flatten_and_unflatten_match_torch(tree):
    tl, ts = tp.tree_flatten(tree)
    ll, ls = lp.tree_flatten(tree)
    assert ll == tl
    assert _describe(ls) == _describe(ts)
    assert (ls.num_leaves, ls.num_nodes) == (ts.num_leaves, ts.num_nodes)
    rebuilt = lp.tree_unflatten([("leaf", i) for i in range(len(ll))], ls)
    assert rebuilt == tp.tree_unflatten([("leaf", i) for i in range(len(tl))], ts)
    assert ls.is_leaf() or type(rebuilt) is type(tree)
    assert lp.tree_leaves(tree) == tp.tree_leaves(tree)
    assert lp.tree_structure(tree) == ls


def test_tree_map_over_several_trees_matches_torch():
    a = {"w": [1, 2], "b": (3, Point(4, 5))}
    b = {"w": [10, 20], "b": (30, Point(40, 50))}
    assert lp.tree_map(lambda x, y: x * y, a, b) == tp.tree_map(lambda x, y: x * y, a, b)
    assert lp.tree_map_only(int, str, [1, "s", 2.0]) == tp.tree_map_only(int, str, [1, "s", 2.0])
    assert lp.tree_all(lambda x: x > 0, a) and not lp.tree_any(lambda x: x > 5, [1, 2])
    assert lp.tree_any_only(str, lambda s: s == "s", [1, "s"]) and lp.tree_all_only(int, bool, [1, "x"])
    seen = []
    assert lp.tree_map_(seen.append, a) is a and seen == tp.tree_leaves(a)


@pytest.mark.parametrize("other, message", [
    ({"w": (10, 20), "b": (30, Point(40, 50))}, "Node type mismatch"),
    ({"w": [10], "b": (30, Point(40, 50))}, "Node arity mismatch"),
    ({"v": [10, 20], "b": (30, Point(40, 50))}, "Node keys mismatch"),
])
def test_mismatched_structures_raise_like_torch(other, message):
    a = {"w": [1, 2], "b": (3, Point(4, 5))}
    with pytest.raises(ValueError, match=message):
        tp.tree_map(lambda x, y: x, a, other)
    with pytest.raises(ValueError, match=message):
        lp.tree_map(lambda x, y: x, a, other)


def test_dict_keys_in_another_order_map_in_the_first_trees_order():
    a, b = {"x": 1, "y": 2}, {"y": 20, "x": 10}
    assert lp.tree_map(lambda u, v: u + v, a, b) == tp.tree_map(lambda u, v: u + v, a, b) == {"x": 11, "y": 22}


def test_unflatten_checks_the_leaf_count():
    _, spec = lp.tree_flatten([1, (2, 3)])
    with pytest.raises(ValueError, match="`leaves` has length 2 but the spec refers to a pytree that holds 3 items"):
        lp.tree_unflatten([1, 2], spec)
    with pytest.raises(TypeError, match="Expected `treespec` to be instance of TreeSpec"):
        lp.tree_unflatten([1], "spec")


def test_is_leaf_stops_the_descent():
    tree = [1, [2, 3], [4]]
    leaf = lambda x: isinstance(x, list) and len(x) == 1  # noqa: E731
    assert lp.tree_flatten(tree, is_leaf=leaf)[0] == tp.tree_flatten(tree, is_leaf=leaf)[0] == [1, 2, 3, [4]]


def test_tensors_are_leaves():
    t = lucid.ones(2)
    leaves, spec = lp.tree_flatten({"a": t, "b": [t * 2]})
    assert len(leaves) == 2 and leaves[0] is t
    out = lp.tree_map(lambda x: x + 1, {"a": t, "b": [t * 2]})
    assert out["b"][0].tolist() == [3.0, 3.0]


def test_registered_node_types_flatten_through_their_functions():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    lp.register_pytree_node(Pair, lambda p: ([p.a, p.b], "ctx"), lambda children, ctx: Pair(*children))
    leaves, spec = lp.tree_flatten([Pair(1, (2, 3))])
    assert leaves == [1, 2, 3] and spec.children()[0].context == "ctx"
    rebuilt = lp.tree_unflatten([7, 8, 9], spec)[0]
    assert (rebuilt.a, rebuilt.b) == (7, (8, 9))
    with pytest.raises(ValueError, match="already registered"):
        lp.register_pytree_node(Pair, lambda p: ([], None), lambda c, x: Pair(0, 0))


def test_key_paths_match_torch():
    tree = {"a": [1, Point(2, 3)], "b": OrderedDict(c=4)}
    theirs = [(tp.keystr(k), v) for k, v in tp.tree_flatten_with_path(tree)[0]]
    ours = [(lp.keystr(k), v) for k, v in lp.tree_flatten_with_path(tree)[0]]
    assert ours == theirs
    path, _ = lp.tree_flatten_with_path(tree)[0][2]
    assert lp.key_get(tree, path) == 3
    assert lp.tree_map_with_path(lambda k, v: lp.keystr(k), tree) == tp.tree_map_with_path(lambda k, v: tp.keystr(k), tree)


def test_namedtuple_checks():
    assert lp.is_namedtuple(Point) and lp.is_namedtuple_instance(Point(1, 2)) and not lp.is_namedtuple((1, 2))
