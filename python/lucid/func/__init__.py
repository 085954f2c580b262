"""lucid.func (torch.func): function transforms built on the autograd
engine. `grad`, `grad_and_value`, `vjp`, `jacrev`, `jacfwd` and `hessian`
differentiate with create_graph, so they nest; `vmap` maps a function over a
dim by calling it once per slice and stacking the results (the semantics of
torch.func.vmap for functions without side effects, not its speed);
`functional_call` runs a module with other parameters and buffers."""
import contextlib
import threading

from .. import _C
from ..autograd import enable_grad

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "stack_module_state"]


def _lucid():
    import lucid

    return lucid


# ------------------------------------------------------------ functional_call
@contextlib.contextmanager
def _swapped(module, tensors, strict):
    """The module's parameters and buffers named in `tensors` replaced by
    those tensors for the duration (restored even if the call raises)."""
    saved = []
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = sorted(set(own) - set(tensors))
        unexpected = sorted(set(tensors) - set(own))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: missing keys {missing}, "
                               f"unexpected keys {unexpected}")
    try:
        for name, value in tensors.items():
            path, _, leaf = name.rpartition(".")
            sub = module.get_submodule(path)
            store = sub._parameters if leaf in sub._parameters else sub._buffers if leaf in sub._buffers else None
            if store is None:
                raise AttributeError(f"{type(sub).__name__} has no parameter or buffer `{leaf}` ({name})")
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        yield
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with the named parameters and buffers taken
    from the dict(s) instead of the module's own."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        tensors = dict(dicts)
    else:
        tensors = {}
        for d in dicts:
            clash = set(tensors) & set(d)
            if clash:
                raise ValueError(f"{sorted(clash)} appeared in multiple dictionaries; behavior of functional call "
                                 "is ambiguous")
            tensors.update(d)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, tensors, strict):
        return module(*args, **(kwargs or {}))


# ---------------------------------------------------------------- autograd
def _stacked_leaf(tensors, name):
    requires = [t.requires_grad for t in tensors]
    if any(requires) and not all(requires):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _lucid().stack(tensors)
    return result.detach().requires_grad_() if all(requires) else result


def stack_module_state(models):
    """({name: parameters of every model stacked on a new dim 0}, {name:
    buffers stacked}): the state of an ensemble for functional_call over
    vmap. Stacked parameters are new leaves that require grad."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _tree_flatten(x):
    if isinstance(x, (tuple, list)):
        leaves, specs = [], []
        for item in x:
            sub, spec = _tree_flatten(item)
            leaves += sub
            specs.append(spec)
        return leaves, (type(x), specs)
    if isinstance(x, dict):
        leaves, specs = [], []
        for k in x:
            sub, spec = _tree_flatten(x[k])
            leaves += sub
            specs.append((k, spec))
        return leaves, (dict, specs)
    return [x], None


def _tree_unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, items = s
        if kind is dict:
            return {k: build(sub) for k, sub in items}
        return kind(build(sub) for sub in items)

    return build(spec)


_state = threading.local()  # .depth: differentiation transforms running in this thread (grad inside grad, ...)


def _depth():
    return getattr(_state, "depth", 0)


@contextlib.contextmanager
def _level(args, nums):
    """Runs one transform; yields a function that detaches its results when
    it is the outermost and no differentiated input requires grad (the
    results then carry no history, as torch.func's)."""
    outer_history = any(isinstance(t, _C.Tensor) and t.requires_grad
                        for n in nums for t in _tree_flatten(args[n])[0])
    _state.depth = _depth() + 1
    try:
        yield lambda tree: tree if _depth() > 1 or outer_history else _detached(tree)
    finally:
        _state.depth -= 1


def _detached(tree):
    leaves, spec = _tree_flatten(tree)
    return _tree_unflatten([t.detach() if isinstance(t, _C.Tensor) else t for t in leaves], spec)


def _nums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _prepare(args, argnums):
    """The differentiated arguments as fresh leaves that require grad (their
    history kept through an identity, so transforms nest)."""
    nums = _nums(argnums)
    for n in nums:
        if not -len(args) <= n < len(args):
            raise RuntimeError(f"Got argnums={argnums}, but only {len(args)} positional inputs")
    args = list(args)
    flat = {}
    for n in nums:
        leaves, spec = _tree_flatten(args[n])
        fresh = []
        for t in leaves:
            if not isinstance(t, _C.Tensor) or not t.dtype.is_floating_point:
                raise RuntimeError("grad: the differentiated inputs must be floating point Tensors")
            fresh.append(t.view_as(t) if t.requires_grad else t.detach().requires_grad_())
        flat[n] = (fresh, spec)
        args[n] = _tree_unflatten(fresh, spec)
    return args, nums, flat, isinstance(argnums, int)


def _regroup(gs, nums, flat):
    """Flat per-leaf results back into one nest per differentiated argument."""
    out, k = [], 0
    for n in nums:
        count = len(flat[n][0])
        out.append(_tree_unflatten(gs[k:k + count], flat[n][1]))
        k += count
    return out


def grad_and_value(func, argnums=0, has_aux=False):
    """(d func / d args[argnums], func(*args)) for a scalar func."""
    def wrapper(*args, **kwargs):
        with enable_grad(), _level(args, _nums(argnums)) as finish:
            args, nums, flat, single = _prepare(args, argnums)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, "
                                       "aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, _C.Tensor) or out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"{type(out).__name__}" + (f" of shape {tuple(out.shape)}"
                                                              if isinstance(out, _C.Tensor) else ""))
            inputs = [t for n in nums for t in flat[n][0]]
            gs = _lucid().autograd.grad(out, inputs, create_graph=True, allow_unused=True) if out.requires_grad \
                else [None] * len(inputs)
            grads = _regroup([_lucid().zeros_like(t) if g is None else g for g, t in zip(gs, inputs)], nums, flat)
            result = grads[0] if single else tuple(grads)
            return finish((result, (out, aux)) if has_aux else (result, out))

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """d func / d args[argnums] for a scalar func (nests: grad(grad(f)))."""
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn): vjp_fn(cotangents) gives one gradient per
    primal."""
    everything = tuple(range(len(primals)))
    with enable_grad(), _level(primals, everything):
        args, nums, flat, _ = _prepare(primals, everything)
        out = func(*args)
        aux = None
        if has_aux:
            out, aux = out
    outs, _ = _tree_flatten(out)
    detach = _depth() == 0 and not any(isinstance(t, _C.Tensor) and t.requires_grad for t in primals)
    inputs = [t for n in nums for t in flat[n][0]]

    def vjp_fn(cotangents):
        cots, _ = _tree_flatten(cotangents)
        if len(cots) != len(outs):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(cots)} vs {len(outs)} tensors")
        with enable_grad():
            gs = _lucid().autograd.grad(outs, inputs, cots, retain_graph=True, create_graph=True, allow_unused=True)
        res = tuple(_regroup([_lucid().zeros_like(t) if g is None else g for g, t in zip(gs, inputs)], nums, flat))
        return _detached(res) if detach else res

    shown = _detached(out) if detach else out
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents): the forward-mode product, computed from
    the recorded graph by the double-backward trick (see
    lucid.autograd.forward_ad); ``primals`` and ``tangents`` are tuples of
    matching tensors (or nests of them)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    flat_p, spec_p = _tree_flatten(primals)
    flat_t, spec_t = _tree_flatten(tangents)
    if len(flat_p) != len(flat_t) or any(tuple(p.shape) != tuple(t.shape) for p, t in zip(flat_p, flat_t)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure and shapes")
    from ..autograd.forward_ad import jvp_by_double_backward

    everything = tuple(range(len(primals)))
    with enable_grad(), _level(primals, everything) as finish:
        args, nums, flat, _ = _prepare(primals, everything)
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            out, aux = out
        outs, spec_o = _tree_flatten(out)
        inputs = [t for n in nums for t in flat[n][0]]
        jvps = jvp_by_double_backward(outs, inputs, flat_t)
        jvps = [_lucid().zeros_like(o) if j is None else j for j, o in zip(jvps, outs)]
        result = (out, _tree_unflatten(jvps, spec_o))
        return finish((*result, aux) if has_aux else result)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is J·tangents at primals."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def jacrev(func, argnums=0, has_aux=False):
    """The Jacobian of func w.r.t. args[argnums], [*out.shape, *arg.shape],
    one reverse pass per output element."""
    def wrapper(*args, **kwargs):
        lucid = _lucid()
        with enable_grad(), _level(args, _nums(argnums)) as finish:
            args, nums, flat, single = _prepare(args, argnums)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                out, aux = out
            if not isinstance(out, _C.Tensor):
                raise RuntimeError("jacrev: only a single Tensor output is supported by lucid")
            inputs = [t for n in nums for t in flat[n][0]]
            rows = []
            flat_out = out.reshape(-1)
            for i in range(flat_out.numel()):
                gs = lucid.autograd.grad(flat_out[i], inputs, retain_graph=True, create_graph=True,
                                         allow_unused=True) if out.requires_grad else [None] * len(inputs)
                rows.append([lucid.zeros_like(t) if g is None else g for g, t in zip(gs, inputs)])
            jac = []
            for j, t in enumerate(inputs):
                col = lucid.stack([r[j] for r in rows]) if rows else lucid.zeros(0, *t.shape, dtype=t.dtype)
                jac.append(col.reshape(tuple(out.shape) + tuple(t.shape)))
            res = _regroup(jac, nums, flat)
            result = res[0] if single else tuple(res)
            return finish((result, aux) if has_aux else result)

    return wrapper


jacfwd = jacrev  # the same Jacobian; Lucid has no forward mode


def hessian(func, argnums=0):
    return jacrev(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------- vmap
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over dim `in_dims` of its inputs (None: not mapped; an int
    applies to every tensor of a nested input), the results (tensors or
    nests of them) stacked along `out_dims`."""
    def wrapper(*args, **kwargs):
        lucid = _lucid()
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims is not compatible with the structure of `inputs`: in_dims has "
                             f"{len(dims)} elements but there are {len(args)} inputs")
        flat = [(_tree_flatten(a), d) for a, d in zip(args, dims)]
        sizes = {t.shape[d] for (leaves, _), d in flat if d is not None for t in leaves if isinstance(t, _C.Tensor)}
        if not sizes:
            raise ValueError("vmap: at least one input must be a Tensor mapped over a dim (in_dims not None)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got "
                             f"sizes {sorted(sizes)} for the mapped dimension")
        (n,) = sizes

        def slice_arg(leaves, spec, d, i):
            if d is None:
                return _tree_unflatten(leaves, spec)
            return _tree_unflatten([t.select(d, i) if isinstance(t, _C.Tensor) else t for t in leaves], spec)

        results = [func(*[slice_arg(leaves, spec, d, i) for (leaves, spec), d in flat], **kwargs)
                   for i in range(n)]
        per_result = [_tree_flatten(r)[0] for r in results]
        spec = _tree_flatten(results[0])[1]
        count = len(per_result[0])
        od = list(out_dims) if isinstance(out_dims, (tuple, list)) else [out_dims] * count
        if len(od) != count:
            raise ValueError(f"vmap: out_dims has {len(od)} elements but the function returned {count} outputs")
        return _tree_unflatten([lucid.stack([r[k] for r in per_result], od[k]) for k in range(count)], spec)

    return wrapper
