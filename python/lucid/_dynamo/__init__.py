"""torch._dynamo's entry points that training code calls around
torch.compile. Lucid's compiler (lucid.compile) traces the Python once per
signature, like torch.jit.trace: it has no bytecode capture, graph breaks
or guards, so the decorators here return the function unchanged (its ops
are traced with the rest), ``reset()`` drops nothing Lucid could reuse
wrongly, and ``config`` keeps the settings without effect."""
from .. import _C
from . import config  # noqa: F401

__all__ = ["allow_in_graph", "assume_constant_result", "config", "disable", "disallow_in_graph", "explain",
           "graph_break", "is_compiling", "list_backends", "mark_dynamic", "mark_static", "mark_static_address",
           "maybe_mark_dynamic", "optimize", "reset", "run"]


def is_compiling():
    """True while Lucid traces a compiled step or forward."""
    return _C._is_tracing()


def reset():
    """PyTorch clears Dynamo's code caches; Lucid's compiled functions each own
    their cache (``cache_info()``), so there is nothing global to clear."""


def disable(fn=None, recursive=True, *, reason=None):
    """Marks ``fn`` to run outside a graph. Lucid traces it with the rest
    (the values are the same): returns ``fn`` (or a decorator)."""
    if fn is None:
        return lambda f: f
    return fn


def _identity_decorator(fn=None, *args, **kwargs):
    return fn


allow_in_graph = disallow_in_graph = assume_constant_result = run = _identity_decorator


def graph_break():
    """Nothing to break: a Lucid trace is one graph."""


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):  # noqa: A002
    """Shapes are part of Lucid's signature: a new size traces again."""


maybe_mark_dynamic = mark_dynamic


def mark_static(t, index=None):
    pass


def mark_static_address(t, guard=True):
    pass


def list_backends(exclude_tags=("debug", "experimental")):
    return []


def optimize(*args, **kwargs):
    raise NotImplementedError("torch._dynamo.optimize: use lucid.compile (torch.compile)")


def explain(f, *extra_args, **extra_kwargs):
    raise NotImplementedError("torch._dynamo.explain: Lucid's compiler has no graph breaks to explain")
