"""lucid.save / lucid.load: checkpoints of tensors, module state dicts and
optimizer state dicts, in a format that holds data only, so loading a file
never runs code from it (unlike a pickle).

File format (version 1, all integers little-endian):

    offset 0   8 bytes   magic b"LUCIDCKP"
    offset 8   uint32    format version (1)
    offset 12  uint64    H, length of the header
    offset 20  H bytes   header: UTF-8 JSON (below)
    zero padding to a multiple of 64 bytes; the data section starts there
    data section, D bytes, the end of the file: each tensor's raw bytes in C
    order at its offset (relative to the data section, a multiple of 64),
    zero padding between

The header is {"format": "lucid", "data_size": D, "tensors": [...], "root": V}.
Each tensor entry is {"dtype": name, "shape": [...], "offset": o,
"nbytes": n, "device": "cpu", "requires_grad": bool} (plus "parameter": true
for nn.Parameter). Element encodings: bool one byte 0/1, bfloat16 its 16-bit
pattern, every other dtype its IEEE or two's-complement little-endian form.

V encodes the saved object: JSON null, booleans, integers, finite floats,
strings and arrays stand for None, bool, int, float, str and list (NumPy
scalars are saved as the equal Python number); every JSON
object is a tagged value {"t": tag, ...}:
    {"t": "tensor", "i": k}            entry k of "tensors" (a tensor saved
                                       twice is stored once and loads as one)
    {"t": "tuple", "v": [...]}
    {"t": "dict" | "odict", "v": [[key, value], ...]}   keys keep their type
                                       (int keys of optimizer state stay ints);
                                       an odict may carry "meta" (_metadata)
    {"t": "float", "v": "nan" | "inf" | "-inf"}
    {"t": "dtype", "v": name}, {"t": "device", "v": "cpu"}

Files are written atomically (a temporary file in the same directory,
renamed over the target). A damaged file raises `CheckpointError` (a
ValueError) naming the file and what is wrong with it.
"""
import collections
import io
import json
import math
import os
import struct
import tempfile

import numpy as np

from . import _C

__all__ = ["CheckpointError", "save", "load"]

MAGIC = b"LUCIDCKP"
VERSION = 1
_PREFIX = struct.Struct("<8sIQ")  # magic, version, header length
_ALIGN = 64

# dtype name -> (NumPy storage dtype, little-endian); bfloat16 is stored as
# its bit pattern.
_STORAGE = {
    "bool": np.dtype("bool"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "float16": np.dtype("<f2"),
    "bfloat16": np.dtype("<u2"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
}
_SUPPORTED = ("None, bool, int, float, str, list, tuple, dict (keys: str, int, float, bool, None or tuples of "
              "them), lucid tensors, dtypes and devices")


class CheckpointError(ValueError):
    """A file that is not a readable Lucid checkpoint."""


def _align(n):
    return -(-n // _ALIGN) * _ALIGN


# ---------------------------------------------------------------- encoding
class _Encoder:
    def __init__(self):
        self.tensors = []  # (tensor, entry)
        self._index = {}   # id(tensor) -> k
        self._active = set()
        self.size = 0

    def tensor(self, t, where):
        k = self._index.get(id(t))
        if k is not None:
            return k
        if t.is_symbolic:
            raise TypeError(f"cannot save {where}: it is a traced (symbolic) tensor with no data")
        name = t.dtype.name
        if name not in _STORAGE:
            raise TypeError(f"cannot save {where}: unsupported dtype {name}")
        shape = [int(s) for s in t.shape]
        nbytes = math.prod(shape) * _STORAGE[name].itemsize
        entry = {"dtype": name, "shape": shape, "offset": self.size, "nbytes": nbytes,
                 "device": str(t.device), "requires_grad": bool(t.requires_grad)}
        if type(t) is not _C.Tensor and type(t).__name__ == "Parameter":
            entry["parameter"] = True
        self.size = _align(self.size + nbytes)
        k = len(self.tensors)
        self.tensors.append((t, entry))
        self._index[id(t)] = k
        return k

    def key(self, k, where):
        if isinstance(k, (_C.Tensor, list, dict)):
            raise TypeError(f"cannot save {where}: dict key of type {type(k).__name__}; supported: {_SUPPORTED}")
        return self.value(k, where)

    def value(self, obj, where):
        if obj is None or isinstance(obj, bool):
            return obj
        if isinstance(obj, str):
            return str(obj)
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            obj = obj.item()  # NumPy scalars load back as the equal Python number
            if isinstance(obj, bool):
                return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            obj = float(obj)
            if math.isfinite(obj):
                return obj
            return {"t": "float", "v": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, _C.Tensor):
            return {"t": "tensor", "i": self.tensor(obj, where)}
        if isinstance(obj, _C.dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, _C.device):
            return {"t": "device", "v": str(obj)}
        if isinstance(obj, (list, tuple, dict)):
            if id(obj) in self._active:
                raise ValueError(f"cannot save {where}: the structure contains itself")
            self._active.add(id(obj))
            try:
                return self._container(obj, where)
            finally:
                self._active.discard(id(obj))
        raise TypeError(f"cannot save {where} of type {type(obj).__module__}.{type(obj).__qualname__}; "
                        f"supported: {_SUPPORTED}")

    def _container(self, obj, where):
        if isinstance(obj, list):
            return [self.value(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            if hasattr(obj, "_fields"):
                raise TypeError(f"cannot save {where}: namedtuple {type(obj).__qualname__}; save a plain tuple "
                                f"or dict")
            return {"t": "tuple", "v": [self.value(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        items = [[self.key(k, f"a key of {where}"), self.value(v, f"{where}[{k!r}]")] for k, v in obj.items()]
        if isinstance(obj, collections.OrderedDict):
            out = {"t": "odict", "v": items}
            meta = getattr(obj, "_metadata", None)
            if meta is not None:
                out["meta"] = self.value(meta, f"{where}._metadata")
            return out
        return {"t": "dict", "v": items}


def _storage_array(t):
    """The tensor's bytes as a little-endian NumPy array in storage form."""
    d = t.detach()
    if d.device.type != "cpu":
        d = _C.to_device(d, "cpu")
    if d.dtype == _C.dtype.bfloat16:
        # float32 holds every bfloat16 exactly; its top 16 bits are the pattern
        bits = _C.cast(d, _C.dtype.float32).numpy().view(np.uint32) >> 16
        return bits.astype(_STORAGE["bfloat16"])
    arr = d.numpy()
    return arr.astype(_STORAGE[d.dtype.name], copy=False)


def _write(fh, enc, root):
    header = json.dumps({"format": "lucid", "data_size": enc.size, "tensors": [e for _, e in enc.tensors],
                         "root": root}, allow_nan=False, separators=(",", ":")).encode("utf-8")
    prefix = _PREFIX.pack(MAGIC, VERSION, len(header))
    fh.write(prefix)
    fh.write(header)
    pos = len(prefix) + len(header)
    data_start = _align(pos)
    fh.write(b"\0" * (data_start - pos))
    pos = 0
    for t, entry in enc.tensors:
        fh.write(b"\0" * (entry["offset"] - pos))
        arr = np.ascontiguousarray(_storage_array(t))
        if arr.nbytes != entry["nbytes"]:
            raise RuntimeError(f"tensor changed size while saving ({arr.nbytes} != {entry['nbytes']} bytes)")
        if arr.nbytes:
            fh.write(memoryview(arr.reshape(-1)).cast("B"))
        pos = entry["offset"] + entry["nbytes"]
    fh.write(b"\0" * (enc.size - pos))


def save(obj, f):
    """Saves `obj` (a tensor, a state dict, or nested dicts/lists/tuples of
    tensors and plain values) to `f`: a path (str or os.PathLike), written
    atomically, or a binary file object open for writing."""
    enc = _Encoder()
    root = enc.value(obj, "obj")  # every type error surfaces before any byte is written
    if hasattr(f, "write") and not isinstance(f, (str, bytes, os.PathLike)):
        _write(f, enc, root)
        return
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"save() expects a path (str or os.PathLike) or a writable binary file, "
                        f"got {type(f).__name__}")
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot save to {path}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write(fh, enc, root)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file private; give it the mode a plain open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- decoding
class _Reader:
    """Reads a checkpoint that starts at byte `base` of `fh`."""

    def __init__(self, fh, name, base=0):
        self.fh = fh
        self.name = name
        self.base = base

    def fail(self, problem):
        raise CheckpointError(f"{self.name}: {problem}")

    def read_exact(self, n, what):
        data = self.fh.read(n)
        if len(data) != n:
            self.fail(f"truncated file: {what} needs {n} bytes, only {len(data)} left")
        return data

    def read_into(self, pos, buf):
        self.fh.seek(self.base + pos)
        view = memoryview(buf).cast("B")
        if hasattr(self.fh, "readinto"):
            return self.fh.readinto(view) or 0
        data = self.fh.read(len(view))
        view[:len(data)] = data
        return len(data)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _check_entry(r, k, e, data_size):
    if not isinstance(e, dict):
        r.fail(f"tensor entry {k} is not an object")
    name = e.get("dtype")
    if name not in _STORAGE:
        r.fail(f"tensor {k} has unknown dtype {name!r} (known: {', '.join(_STORAGE)})")
    shape = e.get("shape")
    if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
        r.fail(f"tensor {k} has an invalid shape {shape!r}")
    offset, nbytes = e.get("offset"), e.get("nbytes")
    if not (_is_int(offset) and _is_int(nbytes)) or offset < 0:
        r.fail(f"tensor {k} has an invalid offset/nbytes ({offset!r}, {nbytes!r})")
    expected = math.prod(shape) * _STORAGE[name].itemsize
    if nbytes != expected:
        r.fail(f"tensor {k}: nbytes {nbytes} does not match shape {shape} of {name} ({expected} bytes)")
    if offset + nbytes > data_size:
        r.fail(f"tensor {k}: bytes [{offset}, {offset + nbytes}) lie outside the data section of {data_size} bytes")
    try:
        _C.device(e.get("device", "cpu"))
    except (TypeError, ValueError):
        r.fail(f"tensor {k} has an invalid device {e.get('device')!r}")


def _target_device(r, stored, map_location, t):
    """-> (tensor, device string) after applying map_location."""
    if map_location is None:
        return t, stored
    if isinstance(map_location, (str, _C.device)):
        return t, str(map_location)
    if isinstance(map_location, dict):
        return t, str(map_location.get(stored, stored))
    if callable(map_location):
        out = map_location(t, stored)
        if not isinstance(out, _C.Tensor):
            raise TypeError(f"map_location callable must return a tensor, got {type(out).__name__}")
        return out, str(out.device)
    raise TypeError(f"map_location must be None, a str, a lucid.device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


def _read_tensor(r, e, data_start, map_location):
    name = e["dtype"]
    storage = _STORAGE[name]
    buf = np.empty(math.prod(e["shape"]), dtype=storage)
    if e["nbytes"]:
        got = r.read_into(data_start + e["offset"], buf)
        if got != e["nbytes"]:
            r.fail(f"truncated file: a {name} tensor needs {e['nbytes']} bytes at data offset {e['offset']}, "
                   f"only {got or 0} present")
    if name == "bool" and buf.size and buf.view(np.uint8).max() > 1:
        r.fail("a bool tensor holds bytes other than 0 and 1")
    if name == "bfloat16":
        arr = (buf.astype(np.uint32) << 16).view(np.float32)
    else:
        arr = buf.astype(storage.newbyteorder("="), copy=False)
    t = _C.from_numpy(arr.reshape(e["shape"]))
    if name == "bfloat16":
        t = _C.cast(t, _C.dtype.bfloat16)
    stored = e.get("device", "cpu")
    t, device = _target_device(r, stored, map_location, t)
    if _C.device(device) != t.device:
        if not _C.device_available(device):
            raise RuntimeError(f"{r.name}: a tensor was saved on device '{stored}', which is not available here; "
                               f"pass map_location='cpu' to load it on the CPU")
        t = _C.to_device(t, device)
    if e.get("requires_grad") and t.dtype.is_floating_point:
        t.requires_grad_(True)
    if e.get("parameter"):
        t = _as_parameter(t)
    return t


def _as_parameter(t):
    try:
        from .nn import Parameter
    except ImportError:
        return t
    return Parameter(t, requires_grad=t.requires_grad)


def _decode(r, v, tensors):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [_decode(r, x, tensors) for x in v]
    if not isinstance(v, dict):
        r.fail(f"unexpected value {v!r} in the header")
    tag = v.get("t")
    if tag == "tensor":
        k = v.get("i")
        if not _is_int(k) or not 0 <= k < len(tensors):
            r.fail(f"reference to tensor {k!r}, but the file has {len(tensors)} tensors")
        return tensors[k]
    body = v.get("v")
    if tag == "tuple" and isinstance(body, list):
        return tuple(_decode(r, x, tensors) for x in body)
    if tag in ("dict", "odict") and isinstance(body, list):
        out = collections.OrderedDict() if tag == "odict" else {}
        for item in body:
            if not (isinstance(item, list) and len(item) == 2):
                r.fail(f"malformed dict item {item!r}")
            key = _decode(r, item[0], tensors)
            try:
                out[key] = _decode(r, item[1], tensors)
            except TypeError:
                r.fail(f"unhashable dict key {key!r}")
        if tag == "odict" and "meta" in v:
            out._metadata = _decode(r, v["meta"], tensors)
        return out
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "dtype" and isinstance(body, str):
        if body not in _STORAGE:
            r.fail(f"unknown dtype {body!r}")
        return getattr(_C.dtype, body)
    if tag == "device" and isinstance(body, str):
        try:
            return _C.device(body)
        except Exception as exc:  # noqa: BLE001 - any parse failure means a bad file
            r.fail(f"invalid device {body!r}: {exc}")
    r.fail(f"unknown or malformed tagged value {json.dumps(v)[:200]}")


def _load(r, size, map_location, exact_size=True):
    prefix = r.fh.read(_PREFIX.size)
    if prefix[:2] == b"PK" or prefix[:1] == b"\x80":
        r.fail("not a Lucid checkpoint: this looks like a pickle/zip file (e.g. from torch.save); Lucid reads only "
               "its own format")
    if len(prefix) < len(MAGIC) or prefix[:len(MAGIC)] != MAGIC:
        if len(prefix) < len(MAGIC) and MAGIC.startswith(prefix):
            r.fail(f"truncated file: {len(prefix)} bytes, not even a header")
        r.fail(f"not a Lucid checkpoint (bad magic {prefix[:8]!r}, expected {MAGIC!r})")
    if len(prefix) < _PREFIX.size:
        r.fail(f"truncated file: {len(prefix)} bytes, not even a header")
    _, version, header_len = _PREFIX.unpack(prefix)
    if version != VERSION:
        r.fail(f"unsupported format version {version} (this Lucid reads version {VERSION})")
    if size is not None and _PREFIX.size + header_len > size:
        r.fail(f"truncated file: header of {header_len} bytes announced, file has {size} bytes")
    raw = r.read_exact(header_len, "the header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        r.fail(f"corrupt header ({exc})")
    if not isinstance(header, dict) or header.get("format") != "lucid" or "root" not in header:
        r.fail("corrupt header: missing 'format', 'data_size', 'tensors' or 'root'")
    data_size, entries = header.get("data_size"), header.get("tensors")
    if not _is_int(data_size) or data_size < 0 or not isinstance(entries, list):
        r.fail("corrupt header: invalid 'data_size' or 'tensors'")
    data_start = _align(_PREFIX.size + header_len)
    if size is not None:
        expected = data_start + data_size
        if size < expected:
            r.fail(f"truncated file: expected {expected} bytes, found {size}")
        if size > expected and exact_size:
            r.fail(f"{size - expected} unexpected bytes after the end of the data")
    for k, e in enumerate(entries):
        _check_entry(r, k, e, data_size)
    tensors = [_read_tensor(r, e, data_start, map_location) for e in entries]
    out = _decode(r, header["root"], tensors)
    r.fh.seek(r.base + data_start + data_size)  # a stream is left just past this checkpoint
    return out


def load(f, map_location=None, *, weights_only=True, mmap=None):
    """Loads what `save` wrote. `f` is a path (str or os.PathLike) or a
    binary file object. `map_location` moves tensors: a device ('cpu'), a
    dict {saved device: device}, or a callable (tensor, saved device) ->
    tensor. The format holds no code, so loading is always weights-only
    (`weights_only` and `mmap` are accepted for PyTorch compatibility)."""
    if hasattr(f, "read") and not isinstance(f, (str, bytes, os.PathLike)):
        name = str(getattr(f, "name", None) or f"<{type(f).__name__}>")
        seekable = getattr(f, "seekable", None)
        if not (hasattr(f, "seek") and (seekable is None or seekable())):
            f = io.BytesIO(f.read())
        start = f.tell()
        f.seek(0, io.SEEK_END)
        size = f.tell() - start
        f.seek(start)
        # a stream may hold more after this checkpoint: no trailing-bytes check
        return _load(_Reader(f, name, start), size, map_location, exact_size=False)
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"load() expects a path (str or os.PathLike) or a readable binary file, "
                        f"got {type(f).__name__}")
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return _load(_Reader(fh, path), os.fstat(fh.fileno()).st_size, map_location)
