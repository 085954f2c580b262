"""lucid.save / lucid.load: checkpoints of tensors, module state dicts,
optimizer state dicts, NumPy arrays and, as PyTorch allows, whole Python
objects (an ``nn.Module``).

Lucid's own format is written and read by the C++ core, the same code the
C++ API uses (``csrc/lucid/checkpoint/format.h`` documents the layout): a
JSON header and each tensor's bytes, with a CRC-32C checksum of the header
and of every tensor, so a damaged byte raises :class:`CheckpointError`
naming the file and the tensor. Objects the data kinds cannot express (a
module, a set, a user's class) are pickled, their tensors and arrays stored
beside the pickle; loading them is allow-listed as in PyTorch: with the
defaults (``weights_only=True``) only the globals of :func:`get_safe_globals`
may be rebuilt, so ``lucid.load`` never runs code from a file unless told
to (``weights_only=False``, :func:`add_safe_globals`, :func:`safe_globals`).

``lucid.load`` also reads

- PyTorch's files (``torch.save``'s zip + pickle format) without PyTorch:
  tensors, state dicts, optimizer state dicts and nested containers of
  them, through the same allow-list;
- ``.safetensors`` files (``lucid.save`` writes one when the path ends with
  ``.safetensors``; see :func:`save_safetensors`).

Tensors whose dtype Lucid has no tensor for (uint16, uint32, complex, ...) load
as NumPy arrays. Files are written atomically (a temporary file in the same
directory, renamed over the target).
"""
import collections
import contextlib
import io
import os
import pickle
import zipfile

import numpy as np

from . import _C

__all__ = ["CheckpointError", "save", "load", "save_safetensors", "load_safetensors", "safetensors_metadata",
           "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

MAGIC = b"LUCIDCKP"
CheckpointError = _C.CheckpointError
CheckpointError.__doc__ = ("A file that is not a readable checkpoint (damaged, truncated or crafted); a ValueError "
                           "whose message names the file and what is wrong with it.")

_PICKLE_PROTOCOL = 4


# ------------------------------------------------------------ allow-list
def _default_globals():
    import _codecs
    return {"collections.OrderedDict": collections.OrderedDict, "collections.Counter": collections.Counter,
            "builtins.set": set, "builtins.frozenset": frozenset, "builtins.bytearray": bytearray,
            "builtins.complex": complex, "builtins.slice": slice, "builtins.range": range,
            "_codecs.encode": _codecs.encode}


_user_globals = []


def _global_name(obj):
    return f"{obj.__module__}.{getattr(obj, '__qualname__', obj.__name__)}"


def add_safe_globals(safe_globals):
    """Marks classes and functions as safe to rebuild when loading with
    ``weights_only=True`` (PyTorch's ``torch.serialization.add_safe_globals``).
    Each item is the object itself or ``(object, "module.name")``."""
    for g in safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2 or not isinstance(g[1], str):
                raise TypeError(f"expected (object, 'module.name'), got {g!r}")
        elif not hasattr(g, "__module__") or not hasattr(g, "__name__"):
            raise TypeError(f"{g!r} is not a class or function")
    _user_globals.extend(safe_globals)


def clear_safe_globals():
    """Forgets every global added with :func:`add_safe_globals`."""
    _user_globals.clear()


def get_safe_globals():
    """The globals added with :func:`add_safe_globals`."""
    return list(_user_globals)


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Within the block, ``safe_globals`` are allowed as by
    :func:`add_safe_globals`."""
    before = list(_user_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_globals[:] = before


def _allowed():
    out = _default_globals()
    for g in _user_globals:
        if isinstance(g, tuple):
            out[g[1]] = g[0]
        else:
            out[_global_name(g)] = g
    return out


class _RefusedGlobal(pickle.UnpicklingError):
    """A global outside the allow-list (PyTorch raises UnpicklingError too)."""


def _refused(name, module, attr):
    short = attr.split(".")[-1]
    return _RefusedGlobal(
        f"{name}: Weights only load failed: lucid.load with weights_only=True rebuilds only allow-listed globals. "
        f"Unsupported global: GLOBAL {module}.{attr} was not an allowed global by default. Please use "
        f"`lucid.serialization.add_safe_globals([{short}])` or the `lucid.serialization.safe_globals([{short}])` "
        f"context manager to allowlist this global if you trust this class/function, or load with "
        f"weights_only=False if you trust the file (it can then run any code).")


# ------------------------------------------------------------ pickled objects
class _Pickler(pickle.Pickler):
    """Pickles an object; tensors and NumPy arrays become references, stored
    as checkpoint entries of their own."""

    def __init__(self, fh, refs):
        super().__init__(fh, protocol=_PICKLE_PROTOCOL)
        self.refs = refs
        self.index = {}

    def persistent_id(self, obj):
        if isinstance(obj, _C.Tensor) or (type(obj) is np.ndarray and _C.checkpoint_stores_array(obj)):
            k = self.index.get(id(obj))
            if k is None:
                k = self.index[id(obj)] = len(self.refs)
                self.refs.append(obj)
            return k
        return None


def _pickle(obj, where):
    buf, refs = io.BytesIO(), []
    try:
        _Pickler(buf, refs).dump(obj)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the object cannot be saved
        raise pickle.PicklingError(f"cannot save {where} of type {type(obj).__module__}.{type(obj).__qualname__}: "
                                   f"it cannot be pickled ({type(exc).__name__}: {exc})") from exc
    return buf.getvalue(), refs


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, refs, name, allowed):
        super().__init__(io.BytesIO(data))
        self.refs, self.name, self.allowed = refs, name, allowed

    def persistent_load(self, pid):
        if type(pid) is not int or not 0 <= pid < len(self.refs):
            raise CheckpointError(f"{self.name}: a pickled object refers to {pid!r}, which the file does not hold")
        return self.refs[pid]

    def find_class(self, module, name):
        if self.allowed is None:
            return super().find_class(module, name)
        found = self.allowed.get(f"{module}.{name}")
        if found is None:
            raise _refused(self.name, module, name)
        return found


def _unpickler(name, weights_only):
    allowed = _allowed() if weights_only else None

    def unpickle(data, refs):
        try:
            return _Unpickler(bytes(data), refs, name, allowed).load()
        except (_RefusedGlobal, CheckpointError):
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged pickle, or an allowed class refusing its state
            if not weights_only:
                raise
            raise CheckpointError(f"{name}: a pickled object cannot be rebuilt ({type(exc).__name__}: {exc})") \
                from exc
    return unpickle


# ------------------------------------------------------------ devices
def _mapper(map_location):
    """map_location -> (tensor, saved device) -> tensor, or None."""
    if map_location is None:
        return None
    if isinstance(map_location, (str, _C.device)):
        target = str(map_location)
        return lambda t, saved: _to(t, target)
    if isinstance(map_location, dict):
        table = {str(k): str(v) for k, v in map_location.items()}
        return lambda t, saved: _to(t, table.get(saved, saved))
    if callable(map_location):
        def call(t, saved):
            out = map_location(t, saved)
            if not isinstance(out, _C.Tensor):
                raise TypeError(f"map_location callable must return a tensor, got {type(out).__name__}")
            return out
        return call
    raise TypeError(f"map_location must be None, a str, a lucid.device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


def _to(t, device):
    device = _C.device(device)
    return t if device == t.device else _C.to_device(t, device)


def _as_parameter(t):
    from .nn import Parameter
    return Parameter(t, requires_grad=t.requires_grad)


def _parameter_type():
    from .nn import Parameter
    return Parameter


# ------------------------------------------------------------ save
def _path_of(f, verb):
    if isinstance(f, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(f))
    if not hasattr(f, "write" if verb == "save" else "read"):
        raise TypeError(f"{verb}() expects a path (str or os.PathLike) or a "
                        f"{'writable' if verb == 'save' else 'readable'} binary file, got {type(f).__name__}")
    return None


def _check_directory(path):
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot save to {path}: directory {directory} does not exist")


def save(obj, f):
    """Saves `obj` to `f`: a path (str or os.PathLike), written atomically, or
    a binary file object open for writing. `obj` is a tensor, a state dict,
    nested dicts/lists/tuples of tensors, NumPy arrays and plain values, or
    any picklable object (an ``nn.Module``), as with ``torch.save``. A path
    ending in ``.safetensors`` gets a safetensors file (`obj` must then be a
    dict {str: tensor})."""
    path = _path_of(f, "save")
    if path is not None and path.endswith(".safetensors"):
        return save_safetensors(obj, path)
    if path is not None:
        _check_directory(path)
    _C.checkpoint_save(obj, path if path is not None else f.write, _parameter_type(), _pickle)


def save_safetensors(tensors, f, metadata=None):
    """Writes a ``.safetensors`` file (what ``safetensors.torch.save_file``
    writes): `tensors` is a dict {str: tensor or NumPy array}, `metadata` an
    optional dict {str: str}."""
    if not isinstance(tensors, dict):
        raise TypeError(f"a safetensors file holds a dict {{name: tensor}}, got {type(tensors).__name__}")
    path = _path_of(f, "save")
    if path is not None:
        _check_directory(path)
    _C.safetensors_save(tensors, path if path is not None else f.write, metadata)


# ------------------------------------------------------------ load
def _stream_bytes(f):
    """(name, bytes from the current position, start position) of a stream."""
    name = str(getattr(f, "name", None) or f"<{type(f).__name__}>")
    seekable = getattr(f, "seekable", None)
    start = f.tell() if hasattr(f, "tell") and (seekable is None or seekable()) else None
    return name, f.read(), start


def _source(f):
    """-> (name, path or None, bytes or None)."""
    path = _path_of(f, "load")
    if path is not None:
        return path, path, None
    name, data, start = _stream_bytes(f)
    return name, None, (data, start, f)


def _head(path, data):
    if path is not None:
        with open(path, "rb") as fh:
            return fh.read(16), os.fstat(fh.fileno()).st_size
    return bytes(data[:16]), len(data)


def load(f, map_location=None, *, weights_only=True, mmap=None):
    """Loads what `save` wrote, a PyTorch file (``torch.save``) or a
    ``.safetensors`` file. `f` is a path (str or os.PathLike) or a binary
    file object. `map_location` moves tensors: a device ('cpu'), a dict
    {saved device: device}, or a callable (tensor, saved device) -> tensor.
    With ``weights_only=True`` (the default) pickled objects may use only
    allow-listed globals (:func:`add_safe_globals`), so loading runs no code
    from the file; ``weights_only=False`` unpickles anything (only for files
    you trust). `mmap` is accepted for PyTorch compatibility."""
    mapper = _mapper(map_location)
    name, path, stream = _source(f)
    data = stream[0] if stream else None
    head, size = _head(path, data)
    if head[:4] == b"PK\x03\x04":
        return _load_torch(path if path is not None else io.BytesIO(data), name, mapper, weights_only)
    if head[:1] == b"\x80":
        raise CheckpointError(f"{name}: a pickle file (PyTorch's legacy format from before 1.6, or plain pickle); "
                              f"Lucid reads PyTorch's zip format only: re-save it with a current torch.save")
    if _C.looks_like_safetensors(head[:9], size):
        out, _ = _C.safetensors_load(path if path is not None else data, name, mapper)
        return out
    out, consumed = _C.checkpoint_load(path if path is not None else data, name, mapper, path is None,
                                       _as_parameter, _unpickler(name, weights_only))
    if stream and stream[1] is not None:
        stream[2].seek(stream[1] + consumed)  # a stream is left just past this checkpoint
    return out


def load_safetensors(f, device="cpu"):
    """Reads a ``.safetensors`` file: {name: tensor} (names sorted; dtypes
    Lucid has no tensor for come as NumPy arrays)."""
    name, path, stream = _source(f)
    out, _ = _C.safetensors_load(path if path is not None else stream[0], name, _mapper(device))
    return out


def safetensors_metadata(f):
    """The ``__metadata__`` {str: str} of a ``.safetensors`` file."""
    name, path, stream = _source(f)
    _, meta = _C.safetensors_load(path if path is not None else stream[0], name, None)
    return meta


# ------------------------------------------------------------ PyTorch files
# torch.save writes a zip: <archive>/data.pkl pickles the object, each
# storage's bytes are <archive>/data/<key>, and <archive>/byteorder says how
# they are ordered. The pickle names torch's rebuild functions and storage
# classes; they map onto the stand-ins below (data only: nothing of torch
# runs, and torch need not be installed).

# storage class -> NumPy dtype of its elements, Lucid dtype (None: NumPy array)
_TORCH_STORAGES = {
    "FloatStorage": ("<f4", "float32"), "DoubleStorage": ("<f8", "float64"), "HalfStorage": ("<f2", "float16"),
    "BFloat16Storage": ("<u2", "bfloat16"), "LongStorage": ("<i8", "int64"), "IntStorage": ("<i4", "int32"),
    "BoolStorage": ("|b1", "bool"), "ShortStorage": ("<i2", "int16"), "CharStorage": ("|i1", "int8"),
    "ByteStorage": ("|u1", "uint8"), "ComplexFloatStorage": ("<c8", None), "ComplexDoubleStorage": ("<c16", None),
    "UInt16Storage": ("<u2", None), "UInt32Storage": ("<u4", None), "UInt64Storage": ("<u8", None),
    "UntypedStorage": ("|u1", None),
}
_TORCH_DTYPES = {"float32": "FloatStorage", "float": "FloatStorage", "float64": "DoubleStorage",
                 "double": "DoubleStorage", "float16": "HalfStorage", "half": "HalfStorage",
                 "bfloat16": "BFloat16Storage", "int64": "LongStorage", "long": "LongStorage",
                 "int32": "IntStorage", "int": "IntStorage", "bool": "BoolStorage", "int16": "ShortStorage",
                 "short": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
                 "complex64": "ComplexFloatStorage", "cfloat": "ComplexFloatStorage",
                 "complex128": "ComplexDoubleStorage", "cdouble": "ComplexDoubleStorage",
                 "uint16": "UInt16Storage", "uint32": "UInt32Storage", "uint64": "UInt64Storage"}


class _StorageType:
    def __init__(self, name):
        self.name = name


class _TorchDtype:
    """A torch dtype named in a pickle (torch.float16)."""

    def __init__(self, name):
        self.name = name

    def lucid(self):
        storage = _TORCH_DTYPES[self.name]
        numpy_name, lucid_name = _TORCH_STORAGES[storage]
        return getattr(_C.dtype, lucid_name) if lucid_name else np.dtype(numpy_name)


class _Storage:
    def __init__(self, array, location):
        self.array, self.location = array, location


class _TorchTensorType:
    pass


class _TorchParameterType:
    pass


def _torch_device(*args):
    try:
        return _C.device(":".join(str(a) for a in args))
    except Exception:  # noqa: BLE001 - a device Lucid does not name (e.g. 'mps'): keep its name
        return ":".join(str(a) for a in args)


class _TorchReader:
    def __init__(self, zf, prefix, name, mapper):
        self.zf, self.prefix, self.name, self.mapper = zf, prefix, name, mapper
        self.storages = {}
        order = self._member("byteorder", required=False)
        self.big_endian = order is not None and order.strip() == b"big"

    def fail(self, problem):
        raise CheckpointError(f"{self.name}: {problem}")

    def _member(self, member, required=True, size=None):
        try:
            info = self.zf.getinfo(self.prefix + member)
        except KeyError:
            if required:
                self.fail(f"the PyTorch archive has no {self.prefix + member}")
            return None
        if size is not None and info.file_size != size:
            self.fail(f"{self.prefix + member} holds {info.file_size} bytes, its storage needs {size}")
        return _read_stored(self.zf, info, self.name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], (_StorageType, _TorchDtype)) and isinstance(pid[2], str)
                and isinstance(pid[3], str) and type(pid[4]) is int and pid[4] >= 0):
            self.fail(f"unsupported persistent id {str(pid)[:200]} (only storages are read)")
        _, kind, key, location, numel = pid
        if isinstance(kind, _TorchDtype):
            kind = _StorageType(_TORCH_DTYPES.get(kind.name, "?"))
        if kind.name not in _TORCH_STORAGES:
            self.fail(f"unsupported storage type {kind.name}")
        if key not in self.storages:
            dtype = np.dtype(_TORCH_STORAGES[kind.name][0])
            raw = self._member(f"data/{key}", size=numel * dtype.itemsize)
            arr = np.frombuffer(raw, dtype=dtype.newbyteorder(">") if self.big_endian else dtype)
            self.storages[key] = (kind.name, _Storage(arr.astype(dtype.newbyteorder("="), copy=False), location))
        stored_kind, storage = self.storages[key]
        if stored_kind != kind.name:
            self.fail(f"storage {key} is read as both {stored_kind} and {kind.name}")
        return storage

    def rebuild(self, storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
        if not isinstance(storage, _Storage):
            self.fail("a tensor without a storage")
        size, stride = tuple(size), tuple(stride)
        ints = all(type(v) is int for v in size + stride) and type(offset) is int
        if not ints or len(size) != len(stride) or len(size) > 64 or offset < 0 or min(size + stride, default=0) < 0:
            self.fail(f"invalid tensor layout: offset {offset!r}, size {size!r}, stride {stride!r}")
        if metadata:
            self.fail(f"tensors with metadata {metadata!r} (conjugate or negative views) are not supported")
        arr = storage.array
        span = arr.itemsize
        for s in size:
            span *= max(s, 1)
        if span >= 2 ** 63:
            self.fail(f"tensor size {list(size)} overflows")
        numel = 1
        for s in size:
            numel *= s
        if numel:
            last = offset + sum((s - 1) * st for s, st in zip(size, stride))
            if last >= arr.size:
                self.fail(f"a tensor of size {list(size)}, stride {list(stride)}, offset {offset} reaches element "
                          f"{last} of a storage of {arr.size}")
            view = np.lib.stride_tricks.as_strided(arr[offset:], shape=size,
                                                   strides=[st * arr.itemsize for st in stride])
        else:
            view = np.empty(size, dtype=arr.dtype)
        values = np.array(view, order="C")  # a copy (ascontiguousarray would make 0-d arrays 1-d)
        kind = next(k for k, s in self.storages.values() if s is storage)
        lucid_name = _TORCH_STORAGES[kind][1]
        if lucid_name is None:
            return values  # a dtype Lucid has no tensor for: a NumPy array
        if lucid_name == "bfloat16":
            t = _C.cast(_C.from_numpy((values.astype(np.uint32) << 16).view(np.float32)), _C.dtype.bfloat16)
        else:
            t = _C.from_numpy(values)
        location = storage.location
        if self.mapper is not None:
            t = self.mapper(t, location)
        elif location != "cpu":
            if not (isinstance(_torch_device(location), _C.device) and _C.device_available(location.split(":")[0])):
                raise RuntimeError(f"{self.name}: a tensor was saved on device '{location}', which is not available "
                                   f"here; pass map_location='cpu' to load it on the CPU")
            t = _to(t, location)
        if requires_grad and t.dtype.is_floating_point:
            t.requires_grad_(True)
        return t

    def rebuild_v3(self, storage, offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
        if not isinstance(storage, _Storage) or not isinstance(dtype, _TorchDtype) \
                or _TORCH_DTYPES.get(dtype.name) is None:
            self.fail("unsupported tensor (rebuilt from an untyped storage)")
        target = np.dtype(_TORCH_STORAGES[_TORCH_DTYPES[dtype.name]][0])
        if storage.array.dtype != np.uint8 or storage.array.size % target.itemsize:
            self.fail("a typed tensor over a storage that does not hold whole elements")
        key = next(k for k, (_, s) in self.storages.items() if s is storage)
        typed = _Storage(storage.array.view(target), storage.location)
        self.storages[f"{key}:{dtype.name}"] = (_TORCH_DTYPES[dtype.name], typed)
        return self.rebuild(typed, offset, size, stride, requires_grad, backward_hooks, metadata)

    def parameter(self, data, requires_grad=True, backward_hooks=None, state=None):
        if not isinstance(data, _C.Tensor):
            self.fail("a Parameter of a dtype Lucid has no tensor for")
        return _as_parameter(data.requires_grad_(bool(requires_grad)) if data.dtype.is_floating_point else data)

    def from_type(self, func, new_type, args, state):
        out = func(*args)
        if new_type is _TorchParameterType and isinstance(out, _C.Tensor):
            out = _as_parameter(out)
        elif new_type is not _TorchTensorType:
            self.fail(f"unsupported tensor subclass {new_type!r}")
        if state:
            self.fail("tensors with Python attributes are not supported")
        return out

    def globals(self):
        out = {f"torch.{n}": _StorageType(n) for n in _TORCH_STORAGES}
        out.update({f"torch.{n}": _TorchDtype(n) for n in _TORCH_DTYPES})
        out.update({
            "torch._utils._rebuild_tensor_v2": self.rebuild,
            "torch._utils._rebuild_tensor": lambda s, o, size, stride: self.rebuild(s, o, size, stride),
            "torch._utils._rebuild_tensor_v3": self.rebuild_v3,
            "torch._utils._rebuild_parameter": self.parameter,
            "torch._utils._rebuild_parameter_with_state": self.parameter,
            "torch._tensor._rebuild_from_type_v2": self.from_type,
            "torch.nn.parameter.Parameter": _TorchParameterType, "torch.Tensor": _TorchTensorType,
            "torch.Size": lambda *a: tuple(*a), "torch.device": _torch_device,
        })
        return out


class _TorchUnpickler(pickle.Unpickler):
    def __init__(self, data, reader, allowed, weights_only):
        super().__init__(io.BytesIO(data))
        self.reader, self.allowed, self.weights_only = reader, allowed, weights_only

    def persistent_load(self, pid):
        return self.reader.persistent_load(pid)

    def find_class(self, module, name):
        found = self.allowed.get(f"{module}.{name}")
        if found is not None:
            return found
        if not self.weights_only and module.split(".")[0] != "torch":
            return super().find_class(module, name)
        if module.split(".")[0] == "torch" and not self.weights_only:
            self.reader.fail(f"the file needs torch's {module}.{name}, which Lucid cannot stand in for")
        raise _refused(self.reader.name, module, name)


def _finish_torch(obj):
    """Stand-ins for torch dtypes become Lucid's."""
    if isinstance(obj, _TorchDtype):
        return obj.lucid()
    if type(obj) in (list, tuple):
        return type(obj)(_finish_torch(v) for v in obj)
    if type(obj) in (dict, collections.OrderedDict):
        out = type(obj)((k, _finish_torch(v)) for k, v in obj.items())
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    return obj


def _read_stored(zf, info, name):
    # torch.save stores members uncompressed; refusing compression bounds
    # what a crafted archive can make us allocate by the file's own size
    if info.compress_type != zipfile.ZIP_STORED:
        raise CheckpointError(f"{name}: {info.filename} is compressed; torch.save writes uncompressed members")
    return zf.read(info)


def _load_torch(f, name, mapper, weights_only):
    try:
        zf = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CheckpointError(f"{name}: a damaged zip file ({exc})") from exc
    with zf:
        pickles = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise CheckpointError(f"{name}: a zip file without exactly one data.pkl: not a PyTorch checkpoint")
        prefix = pickles[0][:-len("data.pkl")]
        reader = _TorchReader(zf, prefix, name, mapper)
        allowed = {**_allowed(), **reader.globals()}
        try:
            data = _read_stored(zf, zf.getinfo(pickles[0]), name)
            return _finish_torch(_TorchUnpickler(data, reader, allowed, weights_only).load())
        except (_RefusedGlobal, CheckpointError):
            raise
        except RuntimeError as exc:  # a tensor's device is not available (the message says what to pass)
            if "not available here" in str(exc):
                raise
            raise CheckpointError(f"{name}: a damaged PyTorch checkpoint ({type(exc).__name__}: {exc})") from exc
        except Exception as exc:  # noqa: BLE001 - a damaged archive or pickle
            raise CheckpointError(f"{name}: a damaged PyTorch checkpoint ({type(exc).__name__}: {exc})") from exc
