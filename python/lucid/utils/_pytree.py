"""Nested containers as trees, as torch.utils._pytree: ``tree_flatten`` turns
a structure of tuples, lists, dicts, namedtuples, OrderedDicts, defaultdicts
and deques (and types given to ``register_pytree_node``) into its leaves and
a ``TreeSpec``; ``tree_unflatten`` rebuilds it; ``tree_map`` applies a
function leaf-wise over one or more trees of the same structure. Anything
else (a tensor, a number, None) is a leaf. Dicts keep their insertion order."""
import dataclasses
from collections import OrderedDict, defaultdict, deque

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "TreeSpec", "LeafSpec", "keystr", "key_get",
           "register_pytree_node", "tree_is_leaf", "tree_flatten", "tree_flatten_with_path", "tree_unflatten",
           "tree_iter", "tree_leaves", "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any", "tree_all_only",
           "tree_any_only", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
           "SequenceKey", "MappingKey", "GetAttrKey"]

PyTree = object
Context = object
FlattenFn = object
UnflattenFn = object


# ---------------------------------------------------------------- key paths
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: object

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp):
    """A key path as the source text that reaches the leaf (``"[0]['a'].x"``)."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    for k in kp:
        obj = k.get(obj)
    return obj


# ---------------------------------------------------------------- node kinds
@dataclasses.dataclass(frozen=True)
class _NodeDef:
    flatten: object      # node -> (children, context)
    unflatten: object    # (children, context) -> node
    keys: object         # (node, context) -> the key of each child


_registry = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None):
    """Makes ``cls`` a container: ``flatten_fn(node) -> (children, context)``,
    ``unflatten_fn(children, context) -> node``."""
    if cls in _registry:
        raise ValueError(f"{cls} is already registered as pytree node.")

    def keys(node, context):
        if flatten_with_keys_fn is not None:
            return [k for k, _ in flatten_with_keys_fn(node)[0]]
        return [SequenceKey(i) for i in range(len(flatten_fn(node)[0]))]

    _registry[cls] = _NodeDef(flatten_fn, unflatten_fn, keys)


def _seq_keys(node, context):
    return [SequenceKey(i) for i in range(len(node))]


def _map_keys(node, context):
    return [MappingKey(k) for k in node]


_registry[tuple] = _NodeDef(lambda t: (list(t), None), lambda c, _: tuple(c), _seq_keys)
_registry[list] = _NodeDef(lambda t: (list(t), None), lambda c, _: list(c), _seq_keys)
_registry[dict] = _NodeDef(lambda d: (list(d.values()), list(d.keys())), lambda c, k: dict(zip(k, c)), _map_keys)
_registry[OrderedDict] = _NodeDef(lambda d: (list(d.values()), list(d.keys())),
                                  lambda c, k: OrderedDict(zip(k, c)), _map_keys)
_registry[defaultdict] = _NodeDef(lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                                  lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)), _map_keys)
_registry[deque] = _NodeDef(lambda d: (list(d), d.maxlen), lambda c, maxlen: deque(c, maxlen=maxlen), _seq_keys)
_NAMEDTUPLE = _NodeDef(lambda t: (list(t), type(t)), lambda c, cls: cls(*c),
                       lambda t, cls: [GetAttrKey(f) for f in cls._fields])


def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple) \
        and all(isinstance(f, str) for f in cls._fields)


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj):
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def _node_kind(tree):
    """(the node's spec type, its definition), or None for a leaf."""
    cls = type(tree)
    if cls in _registry:
        return cls, _registry[cls]
    if is_namedtuple_class(cls):
        return "namedtuple", _NAMEDTUPLE
    return None


def tree_is_leaf(tree, is_leaf=None):
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_kind(tree) is None


# ---------------------------------------------------------------- specs
class TreeSpec:
    """The structure of a tree: a node's ``type`` (``"namedtuple"`` for any
    namedtuple), its ``context`` (dict keys, the namedtuple class...) and
    the specs of its children. A leaf's spec is ``LeafSpec()``."""

    def __init__(self, type, context, children_specs):  # noqa: A002
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self):
        return False

    def children(self):
        return list(self.children_specs)

    def child(self, index):
        return self.children_specs[index]

    def _definition(self):
        return _NAMEDTUPLE if self.type == "namedtuple" else _registry[self.type]

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves):
        children = [c._build(leaves) for c in self.children_specs]
        return self._definition().unflatten(children, self.context)

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have
        this spec's structure down to them)."""
        out = []
        self._flatten_up_to(tree, out)
        return out

    def _flatten_up_to(self, tree, out):
        kind = _node_kind(tree)
        expected = "namedtuple" if self.type == "namedtuple" else self.type
        if kind is None or kind[0] != expected:
            raise ValueError(f"Node type mismatch; expected {self._type_name()}, but got {type(tree)}.")
        children, context = kind[1].flatten(tree)
        if len(children) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(children)}.")
        if self.type in (dict, OrderedDict, defaultdict):
            keys = context if self.type is not defaultdict else context[1]
            mine = self.context if self.type is not defaultdict else self.context[1]
            if set(keys) != set(mine):
                raise ValueError(f"Node keys mismatch; expected key(s): {mine}, but got key(s): {keys}.")
            children = [tree[k] for k in mine]
        elif self.type == "namedtuple" and context is not self.context:
            raise ValueError(f"Node context mismatch for custom node type {self.context}.")
        for spec, child in zip(self.children_specs, children):
            spec._flatten_up_to(child, out)

    def _type_name(self):
        return "namedtuple" if self.type == "namedtuple" else self.type

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and not other.is_leaf() and self.type == other.type and \
            self.context == other.context and self.children_specs == other.children_specs

    __hash__ = None

    def __repr__(self):
        name = self.type if isinstance(self.type, str) else self.type.__name__
        return f"TreeSpec({name}, {self.context!r}, [{', '.join(repr(c) for c in self.children_specs)}])"


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type = None
        self.context = None
        self.children_specs = []
        self.num_nodes = 1
        self.num_leaves = 1
        self.num_children = 0

    def is_leaf(self):
        return True

    def _build(self, leaves):
        return next(leaves)

    def _flatten_up_to(self, tree, out):
        out.append(tree)

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and other.is_leaf()

    __hash__ = None

    def __repr__(self):
        return "*"


_LEAF = LeafSpec()


# ---------------------------------------------------------------- flatten / map
def _flatten(tree, is_leaf, leaves):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    kind = _node_kind(tree)
    if kind is None:
        leaves.append(tree)
        return _LEAF
    spec_type, definition = kind
    children, context = definition.flatten(tree)
    return TreeSpec(spec_type, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree, is_leaf=None):
    """(the leaves in order, the TreeSpec that rebuilds ``tree`` from them)."""
    leaves = []
    spec = _flatten(tree, is_leaf, leaves)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree, is_leaf=None):
    yield from tree_leaves(tree, is_leaf)


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """``tree``'s structure with ``func(leaf, *matching leaves of rests)`` at each leaf."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Calls ``func`` on the leaves for its effect; returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _only(type_or_types, func):
    if isinstance(type_or_types, type) or isinstance(type_or_types, tuple):
        def wrapped(x):
            return func(x) if isinstance(x, type_or_types) else x
        return wrapped
    raise TypeError(f"tree_map_only: expected a type or a tuple of types, got {type_or_types!r}")


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """``func`` applied to the leaves of the given type(s); other leaves kept."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func, tree, is_leaf=None):
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


# ---------------------------------------------------------------- key paths
def _flatten_with_path(tree, is_leaf, path, out):
    if (is_leaf is not None and is_leaf(tree)) or _node_kind(tree) is None:
        out.append((path, tree))
        return
    _, definition = _node_kind(tree)
    children, context = definition.flatten(tree)
    for key, child in zip(definition.keys(tree, context), children):
        _flatten_with_path(child, is_leaf, path + (key,), out)


def tree_flatten_with_path(tree, is_leaf=None):
    """([(key path, leaf)...], TreeSpec); ``keystr(path)`` spells a path."""
    out = []
    _flatten_with_path(tree, is_leaf, (), out)
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """``func(key path, leaf, *matching leaves of rests)`` at each leaf."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(path, leaf, *xs) for (path, leaf), *xs in zip(pairs, *others))

