"""nn.Module: the base class of every layer, with PyTorch's registration,
traversal, state_dict and mode semantics."""
import copy
from collections import OrderedDict, namedtuple

import numpy as np

from ... import _C
from ..._utils import to_dtype
from ...autograd import no_grad
from ...autograd.function import Function
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter

Tensor = _C.Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * num_spaces + line for line in lines)


def _check_name(kind, name, module):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _parse_to(args, kwargs):
    """Module.to's arguments -> (device or None, dtype or None)."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _C.dtype) or a in (float, int, bool):
            dtype = a
        elif isinstance(a, (str, _C.device)):
            device = a
        elif isinstance(a, bool):  # non_blocking positional
            pass
        else:
            raise TypeError(f"to() received an invalid argument of type {type(a).__name__}")
    dtype = to_dtype(dtype)
    if dtype is not None and not dtype.is_floating_point:
        raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
    if device is not None:
        device = _C.device(str(device))
    return device, dtype


class _Registry(OrderedDict):
    """A module's parameters or children. Every change bumps one counter in
    the core (``_C.module_structure_version``), so a compiled step can reuse
    the ``model.parameters()`` it read last while nothing changed."""

    def __setitem__(self, key, value):
        _C._bump_module_structure()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _C._bump_module_structure()
        super().__delitem__(key)

    def clear(self):
        _C._bump_module_structure()
        super().clear()

    def pop(self, *args):
        _C._bump_module_structure()
        return super().pop(*args)

    def popitem(self, last=True):
        _C._bump_module_structure()
        return super().popitem(last)

    def setdefault(self, key, default=None):
        _C._bump_module_structure()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        _C._bump_module_structure()
        super().update(*args, **kwargs)

    def __reduce__(self):
        # Pickled as the OrderedDict it is (Module.__setstate__ makes it a
        # registry again), so a saved module names no private class.
        return OrderedDict, (), None, None, iter(self.items())

    def move_to_end(self, key, last=True):
        _C._bump_module_structure()
        super().move_to_end(key, last)


# Hooks every module runs (torch.nn.modules.module.register_module_forward_*_hook).
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()


def register_module_forward_pre_hook(hook):
    """Registers ``hook(module, args) -> None or new args`` to run before the
    forward of every module (before the module's own pre-hooks)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = (hook, False)
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Registers ``hook(module, args, output) -> None or a new output`` to run
    after the forward of every module (before the module's own hooks)."""
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = (hook, with_kwargs)
    return handle


class Module:
    """Base class for all neural network modules; subclasses define
    `forward` and assign parameters, buffers and sub-modules as attributes."""

    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", _Registry())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", _Registry())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        pre, post = self.__dict__.get("_forward_pre_hooks"), self.__dict__.get("_forward_hooks")
        backward_hooks = self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks")
        if not pre and not post and not backward_hooks and not _global_forward_pre_hooks and \
                not _global_forward_hooks:
            return self.forward(*args, **kwargs)
        # Every module's hooks (register_module_forward_*_hook) run before the module's own.
        pre = [*_global_forward_pre_hooks.values(), *(pre.values() if pre else ())]
        post = [*_global_forward_hooks.values(), *(post.values() if post else ())]
        for hook, with_kwargs in pre:
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        state = _BackwardHookState(self) if backward_hooks and _C.is_grad_enabled() else None
        if state is not None:
            args = state.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        if state is not None:
            out = state.wrap_outputs(out)
        for hook, with_kwargs in post:
            result = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
            if result is not None:
                out = result
        return out

    # ------------------------------------------------------------------- hooks
    def _add_hook(self, table, entry, prepend):
        hooks = self.__dict__.get(table)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, table, hooks)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = entry
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (with_kwargs: hook(module,
        args, kwargs) -> None or (args, kwargs)), run before forward."""
        return self._add_hook("_forward_pre_hooks", (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output (with_kwargs:
        hook(module, args, kwargs, output)), run after forward."""
        return self._add_hook("_forward_hooks", (hook, with_kwargs), prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input,
        called once the gradients w.r.t. the module's tensor inputs are
        computed (grad_input of inputs that need none are None)."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, called when
        the gradients w.r.t. the module's outputs are computed."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    register_backward_hook = register_full_backward_hook

    def register_module(self, name, module):
        self.add_module(name, module)

    def share_memory(self):
        return self  # one process: nothing to share

    def cuda(self, device=None):
        from ...cuda import _unavailable, is_available

        if not is_available():
            raise _unavailable("Module.cuda()")
        return self.to("cuda" if device is None else f"cuda:{int(device)}" if isinstance(device, int) else device)

    # ------------------------------------------------------------ registration
    def _require_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def register_buffer(self, name, tensor, persistent=True):
        self._require_init("buffer")
        _check_name("buffer", name, self)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        self._require_init("parameters")
        _check_name("parameter", name, self)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             "explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._parameters:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"{mod._get_name()} has no buffer `{name}`")
        return mod._buffers[name]

    # ------------------------------------------------------- attribute access
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts):
            for dd in dicts:
                if name in dd:
                    if isinstance(dd, dict):
                        del dd[name]
                    else:
                        dd.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Buffer):
            if self.__dict__.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, persistent=value.persistent)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                        "(torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(keys))

    def __setstate__(self, state):
        self.__dict__.update(state)
        for key in ("_parameters", "_modules"):
            if key in self.__dict__ and not isinstance(self.__dict__[key], _Registry):
                self.__dict__[key] = _Registry(self.__dict__[key])

    def __deepcopy__(self, memo):
        # Tensors are cloned (parameters stay Parameters); everything else
        # is deep-copied as usual.
        if id(self) in memo:
            return memo[id(self)]
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k == "_parameters":
                v = _Registry((n, None if p is None else copy.deepcopy(p, memo)) for n, p in v.items())
            elif k == "_modules":
                v = _Registry((n, copy.deepcopy(m, memo)) for n, m in v.items())
            elif k == "_buffers":
                v = OrderedDict((n, _clone_tensor(b, memo)) for n, b in v.items())
            else:
                v = copy.deepcopy(v, memo)
            object.__setattr__(new, k, v)
        return new

    # ---------------------------------------------------------------- traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    # ------------------------------------------------------------------- modes
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                with no_grad():
                    p.grad.zero_()  # in place: a compiled step may hold this buffer

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------ device and dtype
    def _apply(self, fn, recurse=True):
        """Converts every parameter (in place: the Parameter objects, and so
        optimizers holding them, stay valid), its grad, and every buffer (of
        this module alone without `recurse`)."""
        for m in self.modules() if recurse else [self]:
            for p in m._parameters.values():
                if p is None:
                    continue
                data = p.detach()
                new = fn(data)
                if new is not data:
                    p._set_data(new)
                if p.grad is not None:
                    g = fn(p.grad)
                    p.grad = None
                    p.grad = g
            for k, b in m._buffers.items():
                if b is not None:
                    m._buffers[k] = fn(b)
        return self

    def to(self, *args, **kwargs):
        kwargs = dict(kwargs)
        memory_format = kwargs.pop("memory_format", None)
        device, dtype = _parse_to(args, kwargs)

        def convert(t):
            out = t
            if dtype is not None and t.dtype.is_floating_point and t.dtype != dtype:
                out = _C.cast(out, dtype)
            if device is not None and out.device != device:
                out = _C.to_device(out, str(device))
            if memory_format is not None and t.ndim in (4, 5):  # PyTorch converts only 4-D and 5-D tensors
                out = out.contiguous(memory_format=memory_format)
            return out

        return self._apply(convert)

    def cpu(self):
        return self.to("cpu")

    def to_empty(self, *, device, recurse=True):
        """Moves the parameters and buffers to `device` as new uninitialised
        tensors (their values are not copied), as PyTorch's."""
        import lucid

        return self._apply(lambda t: lucid.empty_like(t, device=device), recurse=recurse)

    def type(self, dst_type):
        return self._apply(lambda t: _C.cast(t, to_dtype(dst_type)))

    def float(self):
        return self._apply(lambda t: _C.cast(t, _C.dtype.float32) if t.dtype.is_floating_point else t)

    def double(self):
        return self._apply(lambda t: _C.cast(t, _C.dtype.float64) if t.dtype.is_floating_point else t)

    def half(self):
        return self._apply(lambda t: _C.cast(t, _C.dtype.float16) if t.dtype.is_floating_point else t)

    def bfloat16(self):
        return self._apply(lambda t: _C.cast(t, _C.dtype.bfloat16) if t.dtype.is_floating_point else t)

    # -------------------------------------------------------------- state_dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # the legacy positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _state_entries(self):
        """(key, module, name, is_parameter) for every entry state_dict has."""
        out = []
        for prefix, m in self.named_modules(remove_duplicate=False):
            pre = prefix + "." if prefix else ""
            for name, p in m._parameters.items():
                if p is not None:
                    out.append((pre + name, m, name, True))
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    out.append((pre + name, m, name, False))
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies parameters and buffers from `state_dict` (lucid tensors,
        NumPy arrays or anything array-like). Every entry is checked before
        anything is written: on an error, the module is left unchanged."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        entries = self._state_entries()
        expected = {key for key, *_ in entries}
        metadata = getattr(state_dict, "_metadata", None) or {}

        def predates_checkpoint(key, m, name):
            """Whether the checkpoint's version of `m` had no `name` yet
            (a module's _buffers_since_version; PyTorch's BatchNorm rule)."""
            since = getattr(m, "_buffers_since_version", {}).get(name)
            if since is None:
                return False
            version = metadata.get(key[:-len(name) - 1], {}).get("version")
            return version is None or version < since

        missing = [key for key, m, name, _ in entries if key not in state_dict and not predates_checkpoint(key, m, name)]
        missing = list(dict.fromkeys(missing))
        unexpected = [k for k in state_dict.keys() if k not in expected]
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        writes = []
        seen = set()
        for key, m, name, is_param in entries:
            if key not in state_dict:
                continue
            current = m._parameters[name] if is_param else m._buffers[name]
            value = _as_tensor(state_dict[key], key)
            if tuple(value.shape) != tuple(current.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {list(value.shape)} from "
                              f"checkpoint, the shape in current model is {list(current.shape)}.")
                continue
            if id(current) in seen:
                continue
            seen.add(id(current))
            writes.append((m, name, is_param, current, value))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        with no_grad():
            for m, name, is_param, current, value in writes:
                if assign:
                    if is_param:
                        m._parameters[name] = Parameter(value, current.requires_grad)
                    else:
                        m._buffers[name] = value
                else:
                    current.copy_(value)
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ repr
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _as_tensor(v, key):
    if isinstance(v, Tensor):
        return v.detach()
    from ..._creation import tensor

    try:
        return tensor(np.asarray(v))
    except (TypeError, ValueError) as e:
        raise TypeError(f"state_dict entry '{key}' of type {type(v).__name__} cannot be loaded: {e}") from None


def _clone_tensor(t, memo):
    if t is None:
        return None
    if id(t) in memo:
        return memo[id(t)]
    out = _C.clone(t.detach())
    if t.requires_grad:
        out.requires_grad_(True)
    memo[id(t)] = out
    return out


class _BackwardHookState:
    """One call of a module with backward hooks: identity Functions around
    its tensor inputs and outputs see the gradients flowing through them
    (the outputs' first, then the inputs')."""

    def __init__(self, module):
        self.module, self.grad_outputs, self.n_inputs = module, None, 0

    def wrap_inputs(self, args):
        where = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        self.n_inputs = len(where)
        if not any(args[i].requires_grad for i in where):
            return args
        wrapped = _hook_identity(self._on_grad_inputs, [args[i] for i in where])
        args = list(args)
        for i, t in zip(where, wrapped):
            args[i] = t
        self.inputs_wrapped = True
        return tuple(args)

    def wrap_outputs(self, out):
        single = isinstance(out, _C.Tensor)
        outs = (out,) if single else out
        if not isinstance(outs, tuple):
            return out
        where = [i for i, o in enumerate(outs) if isinstance(o, _C.Tensor) and o.requires_grad]
        if not where:
            return out
        wrapped = _hook_identity(self._on_grad_outputs, [outs[i] for i in where])
        outs = list(outs)
        for i, t in zip(where, wrapped):
            outs[i] = t
        return outs[0] if single else tuple(outs)

    def _hooks(self, table):
        return list((self.module.__dict__.get(table) or {}).values())

    def _on_grad_outputs(self, grads):
        for hook in self._hooks("_backward_pre_hooks"):
            result = hook(self.module, grads)
            if result is not None:
                grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        self.grad_outputs = grads
        if not getattr(self, "inputs_wrapped", False):  # no input needs a gradient: the hooks run now
            self._run_hooks((None,) * self.n_inputs)
        return grads

    def _on_grad_inputs(self, grads):
        return self._run_hooks(grads)

    def _run_hooks(self, grad_inputs):
        for hook in self._hooks("_backward_hooks"):
            result = hook(self.module, grad_inputs, self.grad_outputs)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(result)}, but expected {len(grad_inputs)}")
                grad_inputs = result
        return grad_inputs


class BackwardHookFunction(Function):
    """Identity on its tensors; its backward hands their gradients to
    on_grads (which may replace them)."""

    @staticmethod
    def forward(ctx, on_grads, *tensors):
        ctx.on_grads = on_grads
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.on_grads(tuple(grads)))


def _hook_identity(on_grads, tensors):
    out = BackwardHookFunction.apply(on_grads, *tensors)
    return out if isinstance(out, tuple) else (out,)
