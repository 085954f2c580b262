"""The optimizer base class.

An :class:`Optimizer` holds ``param_groups`` (plain dicts: ``"params"`` plus
every hyper-parameter) and ``state``, with torch.optim's semantics, argument
names, errors and ``state_dict`` layout.

The element-wise optimizers run on engine optimizers (``lucid._C.optim``):
one C++ object per param group owns the state buffers and applies the update
in one fused, multi-threaded pass over each parameter. Every step reads the
hyper-parameters from ``param_groups`` again (so schedulers and hand edits
take effect) and validates them first: a bad value raises
``lucid.InvalidArgument`` and nothing is updated.

A compiled wrapper (``lucid.compile.compile_optimizer``) takes over an
instance by setting ``optimizer._compiled``: ``step``, ``state_dict`` and
``load_state_dict`` then delegate to it.
"""
from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Mapping

import numpy as np

from .. import _C
from ..autograd import enable_grad
from ..utils.hooks import RemovableHandle

Tensor = _C.Tensor

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _wrap_step(step):
    if getattr(step, "_lucid_step", False):
        return step

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        own_pre = self.__dict__.get("_optimizer_step_pre_hooks")
        own_post = self.__dict__.get("_optimizer_step_post_hooks")
        if own_pre or own_post or _global_optimizer_pre_hooks or _global_optimizer_post_hooks:
            return _step_with_hooks(self, step, args, kwargs)
        return _run_step(self, step, args, kwargs)

    wrapper._lucid_step = True
    return wrapper


def _run_step(optimizer, step, args, kwargs):
    compiled = optimizer.__dict__.get("_compiled")
    if compiled is not None:
        return compiled.step(*args, **kwargs)
    return step(optimizer, *args, **kwargs)


def _step_with_hooks(optimizer, step, args, kwargs):
    """PyTorch's order: every optimizer's pre-hooks, then this one's (each may
    return new (args, kwargs)); the step; the post-hooks the same way."""
    args = (optimizer, *args)  # the hooks see the optimizer as the first argument, as PyTorch's
    for hook in (*_global_optimizer_pre_hooks.values(), *optimizer._optimizer_step_pre_hooks.values()):
        result = hook(optimizer, args, kwargs)
        if result is not None:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
            args, kwargs = result
    out = _run_step(optimizer, step, args[1:], kwargs)
    for hook in (*optimizer._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()):
        hook(optimizer, args, kwargs)
    return out


# Hooks around every optimizer's step (register_optimizer_step_pre_hook / _post_hook).
_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``
    before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


# ---------------------------------------------------------------- conversions
def _as_array(value, name):
    """A state value from a checkpoint (NumPy array, Lucid or torch tensor,
    number) as a NumPy array."""
    if isinstance(value, Tensor):
        value = value.detach()
        if value.dtype == _C.dtype.bfloat16:
            value = _C.cast(value, _C.dtype.float32)
        return np.array(value.cpu().numpy())
    try:
        return np.array(value)
    except Exception as e:  # noqa: BLE001
        raise TypeError(f"state entry '{name}' is not an array or number: {type(value).__name__}") from e


def _to_lucid(value, name, dtype=None):
    arr = _as_array(value, name)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"state entry '{name}' must be numeric, got an array of {arr.dtype}")
    t = _C.from_numpy_copy(np.ascontiguousarray(arr))
    if dtype is not None and t.dtype != dtype:
        t = _C.cast(t, dtype)
    return t


def _export(t):
    """An engine state tensor as a NumPy array (sharing memory where NumPy can
    represent the dtype, as torch's state_dict shares its tensors); an
    integer step count (SparseAdam's) as a Python int, as torch keeps it."""
    t = t.detach()
    if t.device.type != "cpu":  # NumPy cannot hold device memory: a host copy
        t = t.cpu()
    if t.dtype == _C.dtype.int64 and t.ndim == 0:
        return int(t.item())
    if t.dtype == _C.dtype.bfloat16:
        return _C.cast(t, _C.dtype.float32).cpu().numpy()
    return t.cpu().numpy()


def _export_tree(value):
    if isinstance(value, Tensor):
        return _export(value)
    if isinstance(value, list):
        return [_export_tree(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_export_tree(v) for v in value)
    return value


def _import_tree(value, param):
    """Arrays (and torch tensors) in a Python-side state back to Lucid
    tensors on the parameter's device, floating ones in its dtype (as torch's
    load_state_dict casts them)."""
    if isinstance(value, Tensor):
        t = _C.clone(value.detach())
    elif isinstance(value, (list, tuple)):
        return type(value)(_import_tree(v, param) for v in value)
    elif isinstance(value, (bool, int, float, str)) or value is None:
        return value
    elif isinstance(value, np.generic) and value.ndim == 0 and not isinstance(value, np.ndarray):
        return value.item()
    else:
        t = _C.from_numpy_copy(np.ascontiguousarray(_as_array(value, "value")))
    if t.dtype.is_floating_point and t.dtype != param.dtype:
        t = _C.cast(t, param.dtype)
    return t if t.device == param.device else _C.to_device(t, param.device)


class _EngineState(Mapping):
    """``optimizer.state`` of an engine optimizer: param -> dict of its live
    state (buffers are the engine's tensors; "step" and other per-parameter
    scalars are 0-d tensors holding the current value)."""

    def __init__(self, optimizer):
        self._opt = optimizer

    def _locate(self, param):
        for gi, group in enumerate(self._opt.param_groups):
            for j, p in enumerate(group["params"]):
                if p is param:
                    return gi, j
        return None

    def _engines(self):
        # a group's list edited by hand is followed, as torch reads it each time
        for engine, group in zip(self._opt._engines, self._opt.param_groups):
            engine.set_params(group["params"])
        return self._opt._engines

    def __getitem__(self, param):
        loc = self._locate(param)
        if loc is None:
            return {}
        entries = dict(self._engines()[loc[0]].state_entries(loc[1]))
        step = entries.get("step")
        if step is not None and step.dtype == _C.dtype.int64:
            entries["step"] = int(step.item())  # an integer count (SparseAdam's) is a Python int, as torch keeps it
        return entries

    def __contains__(self, param):
        loc = self._locate(param)
        return loc is not None and self._engines()[loc[0]].has_state(loc[1])

    def __iter__(self):
        for engine, group in zip(self._engines(), self._opt.param_groups):
            for j, p in enumerate(group["params"]):
                if engine.has_state(j):
                    yield p

    def __len__(self):
        return sum(1 for _ in self)

    def __repr__(self):
        return repr({f"param {i}": v for i, v in enumerate(self.values())})


@functools.lru_cache(maxsize=None)
def _kind_info(kind):
    """The kind's table (csrc/lucid/optim/kind_table.h): defaults, the keys a
    loaded group gets, forced values, state at construction."""
    return _C.optim.kind_info(kind)


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of
            dicts (param groups: ``"params"`` plus hyper-parameters that
            override ``defaults``).
        defaults: the default value of every hyper-parameter.

    Subclasses set ``_kind``, the name of their entry in the C++ kind table
    (csrc/lucid/optim/kind_table.h: defaults, validation, state layout), and
    build ``defaults`` with ``_defaults_from(locals())``: their signature
    states the values once, the table names the keys and their order.
    """

    _kind: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _wrap_step(cls.__dict__["step"])

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._compiled = None
        self._engines = []
        self.param_groups = []
        self._uses_engine = self._kind is not None and _C.optim.has_engine(self._kind)
        self.state = _EngineState(self) if self._uses_engine else defaultdict(dict)
        # The constructor's own values, as torch checks them.
        self._validate(defaults)

        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + _typename(params)
            )
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        self._constructing = True
        try:
            for group in param_groups:
                self.add_param_group(group)
        finally:
            self._constructing = False

    # ------------------------------------------------------------- groups
    def _validate(self, group):
        lr = group.get("lr")
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if self._kind is not None:
            _C.optim.validate(self._kind, group)

    def _defaults_from(self, given):
        """The constructor's hyper-parameters (its ``locals()``) in the kind's order."""
        return {key: given[key] for key, _ in _kind_info(self._kind)["defaults"]}

    def _group_defaults(self, group):
        """Fills keys added in later versions (torch's __setstate__) and the
        values the kind forces (AdamW's decoupled weight decay)."""
        if self._kind is None:
            return
        info = _kind_info(self._kind)
        for key, value in info["loaded"]:
            group.setdefault(key, value)
        for key, value in info["forced"]:
            group[key] = value

    def add_param_group(self, param_group):
        """Adds a param group. Every check happens before anything changes."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {_typename(param_group)}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            group["param_names"] = names
        group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}"
                )
            group.setdefault(name, default)
        self._group_defaults(group)

        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        existing = set()
        for g in self.param_groups:
            existing.update(id(p) for p in g["params"])
            if ("param_names" in group) != ("param_names" in g):
                which = "with names" if "param_names" in group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if not existing.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")

        self._validate(group)
        engine = None
        if self._uses_engine:
            engine = _C.optim.EngineOptimizer(self._kind, params, group, self.defaults)

        param_group.clear()
        param_group.update(group)
        self.param_groups.append(param_group)
        if engine is not None:
            self._engines.append(engine)
        self._group_added(param_group)

    def _group_added(self, group):
        # torch's Adagrad creates the state of its constructor's parameters at once.
        if self._uses_engine and self._constructing and _kind_info(self._kind)["state_at_construction"]:
            engine = self._engines[-1]
            for j in range(engine.num_params()):
                engine.init_state(j, group)

    # --------------------------------------------------------------- step
    def zero_grad(self, set_to_none: bool = True):
        """Resets the gradients of all optimized tensors (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def _check_groups(self):
        """Validates every group's hyper-parameters and gradients; returns
        what the engines read."""
        hypers = []
        for engine, group in zip(self._engines, self.param_groups):
            engine.set_params(group["params"])  # an edited list takes effect, as in torch
            h = _C.optim.Hyper(group)
            engine.check(h)
            hypers.append(h)
        return hypers

    def step(self, closure=None):
        """Performs one optimization step.

        Args:
            closure: optional callable that re-evaluates the model (with grad
                enabled) and returns the loss.
        """
        if not self._uses_engine:
            raise NotImplementedError
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        hypers = self._check_groups()  # everything is validated before anything changes
        for engine, h in zip(self._engines, hypers):
            engine.step(h)
        return loss

    # --------------------------------------------------------- state_dict
    def _param_entries(self, gi, j, param):
        """Parameter j of group gi's state as {key: value} (engine kinds); a
        parameter appended to the group's list since the last step has none."""
        engine = self._engines[gi]
        engine.set_params(self.param_groups[gi]["params"])
        return dict(engine.state_entries(j))

    # ------------------------------------------------------------- hooks
    def _add_hook(self, table, hook, prepend=False):
        hooks = self.__dict__.setdefault(table, OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before each step."""
        return self._add_hook("_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` after each step."""
        return self._add_hook("_optimizer_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` before ``state_dict()`` builds the dict."""
        return self._add_hook("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict) -> None or a new state_dict`` after ``state_dict()``."""
        return self._add_hook("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict) -> None or the state_dict to load`` before loading."""
        return self._add_hook("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` after ``load_state_dict()``."""
        return self._add_hook("_optimizer_load_state_dict_post_hooks", hook, prepend)

    def state_dict(self):
        """The optimizer state in torch.optim's layout (see ``_state_dict``),
        through the hooks registered with ``register_state_dict_*_hook``."""
        for hook in self.__dict__.get("_optimizer_state_dict_pre_hooks", {}).values():
            hook(self)
        state_dict = self._state_dict()
        for hook in self.__dict__.get("_optimizer_state_dict_post_hooks", {}).values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Loads a state from :meth:`state_dict` (see ``_load_state_dict``),
        through the hooks registered with ``register_load_state_dict_*_hook``."""
        for hook in self.__dict__.get("_optimizer_load_state_dict_pre_hooks", {}).values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._load_state_dict(state_dict)
        for hook in self.__dict__.get("_optimizer_load_state_dict_post_hooks", {}).values():
            hook(self)

    def _state_dict(self):
        """The optimizer state in torch.optim's layout:
        ``{"state": {index: {key: value}}, "param_groups": [{..., "params": [indices]}]}``.
        Buffers are NumPy arrays sharing the live state's memory (torch's
        state_dict shares its tensors the same way); per-parameter scalars
        (``step``...) are 0-d arrays.
        """
        compiled = self.__dict__.get("_compiled")
        if compiled is not None:
            return compiled.state_dict()
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: copy.copy(v) for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {}
        for gi, group in enumerate(self.param_groups):
            for j, p in enumerate(group["params"]):
                entries = self._export_param_state(gi, j, p)
                if entries:
                    state[index[id(p)]] = entries
        return {"state": state, "param_groups": groups}

    def _export_param_state(self, gi, j, param):
        if self._uses_engine:
            return {k: _export(v) for k, v in self._param_entries(gi, j, param).items()}
        return {k: _export_tree(v) for k, v in self.state.get(param, {}).items()}

    def _load_state_dict(self, state_dict):
        """Loads a state from :meth:`state_dict` (or from torch.optim's, with
        tensors as NumPy arrays). Everything is validated — group count,
        parameter counts, hyper-parameters, state names, shapes and dtypes —
        before anything changes."""
        compiled = self.__dict__.get("_compiled")
        if compiled is not None:
            return compiled.load_state_dict(state_dict)
        if not isinstance(state_dict, Mapping) or "param_groups" not in state_dict or "state" not in state_dict:
            raise ValueError("state_dict must be a dict with 'state' and 'param_groups' entries")
        groups = self.param_groups
        saved_groups = copy.deepcopy(list(state_dict["param_groups"]))
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        where = {}
        for gi, (g, s) in enumerate(zip(groups, saved_groups)):
            for j, key in enumerate(s["params"]):
                where[key] = (gi, j)
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s = dict(s)
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            for name, default in self.defaults.items():
                if default is not required:
                    s.setdefault(name, default)
            self._group_defaults(s)
            self._validate(s)
            new_groups.append(s)
        if self._uses_engine:
            for engine, group in zip(self._engines, groups):
                engine.set_params(group["params"])  # follow a hand-edited list, as torch does
        saved_state = state_dict["state"]
        for key in saved_state:
            if key not in where:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, which no parameter group lists")
        per_param = {}
        for key, (gi, j) in where.items():
            per_param[(gi, j)] = self._import_param_state(gi, j, groups[gi]["params"][j], saved_state.get(key, {}))
        # Everything checked: commit.
        self.param_groups[:] = new_groups
        self._commit_param_states(per_param)

    def _import_param_state(self, gi, j, param, entries):
        """Converts and validates one parameter's saved state; changes nothing."""
        if not isinstance(entries, Mapping):
            raise TypeError(f"the state of a parameter must be a dict, got {_typename(entries)}")
        if not self._uses_engine:
            return {k: _import_tree(v, param) for k, v in entries.items()}
        converted = []
        for name, value in entries.items():
            # dtypes as saved: the engine checks them and casts floating buffers to the parameter's
            converted.append((str(name), _to_lucid(value, name)))
        self._engines[gi].check_state(j, converted)
        return converted

    def _commit_param_states(self, per_param):
        if self._uses_engine:
            for (gi, j), entries in per_param.items():
                self._engines[gi].set_state(j, entries)
            return
        self.state = defaultdict(dict)
        for (gi, j), entries in per_param.items():
            if entries:
                self.state[self.param_groups[gi]["params"][j]] = entries

    # ---------------------------------------------------------------- misc
    def __repr__(self):
        out = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += "\n"
            out += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        out += ")"
        return out

    def __getstate__(self):
        raise TypeError(
            f"cannot pickle a {type(self).__name__}: save optimizer.state_dict() instead"
        )


Optimizer.step = _wrap_step(Optimizer.step)


def _typename(obj):
    if isinstance(obj, Tensor):
        return "lucid.Tensor"
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
