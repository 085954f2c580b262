"""lucid.save / lucid.load: exact round trips of every dtype and of state-dict
structures, the file layout, atomic writes, and clear errors for damaged
files."""
import base64
import collections
import io
import json
import math
import os
import pathlib
import pickle
import struct
import zlib

import crc32c

import numpy as np
import pytest
import torch

import lucid
from lucid.serialization import MAGIC, CheckpointError
from conftest import to_lucid

DTYPES = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _values(dtype, shape, seed=0):
    """A torch tensor of `dtype` with awkward values: extremes, signed zero,
    inf and nan for floats."""
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype == "bool":
        return torch.from_numpy(rng.random(n) < 0.5).reshape(shape)
    if dtype in ("int32", "int64"):
        info = np.iinfo(dtype)
        vals = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        vals[:2] = [info.min, info.max][:n]
        return torch.from_numpy(vals).reshape(shape)
    vals = rng.standard_normal(n) * 1e3
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30]
    vals[:len(special)] = special[:n]
    return torch.from_numpy(vals).to(getattr(torch, dtype)).reshape(shape)


def _bits(t):
    """The bit pattern of a lucid tensor, so nan payloads and -0.0 compare
    exactly (bfloat16 through float32, which holds it exactly)."""
    if t.dtype == lucid.bfloat16:
        return t.float().numpy().view(np.uint32)
    arr = t.numpy()
    return arr.view(np.dtype(f"u{arr.itemsize}")) if arr.dtype.kind == "f" else arr


def _assert_same_tensor(a, e):
    """Lucid tensor `a` holds exactly the data of `e` (lucid or torch)."""
    assert isinstance(a, lucid.Tensor)
    if isinstance(e, torch.Tensor):
        e = to_lucid(e)
    assert tuple(a.shape) == tuple(e.shape) and a.dtype == e.dtype
    np.testing.assert_array_equal(_bits(a), _bits(e))


def _roundtrip(obj, tmp_path, **load_kwargs):
    path = tmp_path / "ckpt.lucid"
    lucid.save(obj, path)
    return lucid.load(path, **load_kwargs)


# ------------------------------------------------------------ round trips
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (7,), (3, 5)])
def test_every_dtype_and_shape_round_trips_bit_exactly(dtype, shape, tmp_path):
    src = to_lucid(_values(dtype, shape))
    out = _roundtrip(src, tmp_path)
    _assert_same_tensor(out, src)
    assert out is not src


def test_nested_structures_keep_types_keys_and_order(tmp_path):
    sd = collections.OrderedDict([("z.weight", lucid.randn(2, 3)), ("a.bias", lucid.zeros(3))])
    sd._metadata = collections.OrderedDict([("", {"version": 1}), ("z", {"version": 2})])
    obj = {
        "model": sd,
        7: ("tuple", 1, 2.5, None, True, [1, (2, (3,))], ()),
        -1: {(1, "a"): [], 2.5: {}, None: "none", False: 0},
        "floats": [float("nan"), float("inf"), -float("inf"), -0.0, 1e-310, 0.1],
        "ints": [2 ** 100, -(2 ** 63), 0],
        "text": "ünïcödé \"quoted\" {\"t\": \"tensor\", \"i\": 0}",
        "np": [np.float32(0.25), np.int64(3), np.bool_(True)],
        "dtype": lucid.bfloat16,
        "device": lucid.device("cpu"),
        "empty": [{}, [], ()],
    }
    out = _roundtrip(obj, tmp_path)
    assert list(out) == list(obj)
    assert type(out["model"]) is collections.OrderedDict and list(out["model"]) == ["z.weight", "a.bias"]
    assert out["model"]._metadata == sd._metadata
    for k in sd:
        np.testing.assert_array_equal(out["model"][k].numpy(), sd[k].numpy())
    assert out[7] == obj[7] and type(out[7][5][1]) is tuple and type(out[7][5]) is list
    assert out[-1] == obj[-1] and list(out[-1]) == list(obj[-1])
    assert all(type(k) is type(j) for k, j in zip(out[-1], obj[-1]))
    fl = out["floats"]
    assert math.isnan(fl[0]) and fl[1:3] == [math.inf, -math.inf] and math.copysign(1, fl[3]) == -1
    assert fl[4:] == [1e-310, 0.1]
    assert out["ints"] == obj["ints"] and out["text"] == obj["text"]
    # NumPy scalars load as the same NumPy scalars
    assert out["np"] == obj["np"] and [type(v) for v in out["np"]] == [np.float32, np.int64, np.bool_]
    assert out["dtype"] == lucid.bfloat16 and out["device"] == lucid.device("cpu")
    assert out["empty"] == [{}, [], ()]


def test_optimizer_state_dict_round_trips_like_torch(tmp_path):
    # PyTorch's Adam state_dict is the reference layout: int keys, tuple
    # betas, None/bool options, 0-d step tensors.
    params = [torch.nn.Parameter(torch.randn(3, 2)), torch.nn.Parameter(torch.randn(4))]
    opt = torch.optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.1}], amsgrad=True)
    sum(p.sum() for p in params).backward()
    opt.step()
    ref = opt.state_dict()

    def conv(x):
        if isinstance(x, torch.Tensor):
            return to_lucid(x)
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(conv(v) for v in x)
        return x

    out = _roundtrip(conv(ref), tmp_path)

    def same(a, e, where):
        if isinstance(e, torch.Tensor):
            _assert_same_tensor(a, e.detach())
        elif isinstance(e, (dict, list, tuple)):
            assert type(a) is type(e), f"{where}: {type(a)} vs {type(e)}"
            if isinstance(e, dict):
                assert list(a) == list(e), where
                for k in e:
                    same(a[k], e[k], f"{where}[{k!r}]")
            else:
                assert len(a) == len(e), where
                for i, (x, y) in enumerate(zip(a, e)):
                    same(x, y, f"{where}[{i}]")
        else:
            assert type(a) is type(e) and a == e, f"{where}: {a!r} vs {e!r}"

    same(out, ref, "state_dict")
    assert list(out["state"]) == [0, 1]


def test_shared_tensor_is_stored_once_and_loads_as_one(tmp_path):
    t = lucid.randn(100)
    out = _roundtrip({"a": t, "b": [t, t]}, tmp_path)
    assert out["a"] is out["b"][0] is out["b"][1]
    assert os.path.getsize(tmp_path / "ckpt.lucid") < 2 * 400 + 512


def test_requires_grad_and_parameters(tmp_path):
    w = lucid.randn(2, 2).requires_grad_(True)
    out = _roundtrip([w, lucid.ones(2)], tmp_path)
    assert out[0].requires_grad and not out[1].requires_grad and out[0].grad_fn is None
    try:
        from lucid.nn import Parameter
    except ImportError:
        return
    p = Parameter(lucid.randn(3))
    q = _roundtrip({"p": p}, tmp_path)["p"]
    assert isinstance(q, Parameter) and q.requires_grad
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


def test_paths_and_file_objects(tmp_path):
    t = lucid.arange(6).reshape(2, 3)
    lucid.save(t, str(tmp_path / "a"))
    lucid.save(t, pathlib.Path(tmp_path / "b"))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    np.testing.assert_array_equal(lucid.load(str(tmp_path / "b")).numpy(), t.numpy())
    # two checkpoints back to back in one stream
    buf = io.BytesIO()
    lucid.save({"x": t}, buf)
    lucid.save([1, 2], buf)
    buf.seek(0)
    np.testing.assert_array_equal(lucid.load(buf)["x"].numpy(), t.numpy())
    assert lucid.load(buf) == [1, 2]
    with open(tmp_path / "a", "rb") as fh:
        np.testing.assert_array_equal(lucid.load(fh).numpy(), t.numpy())


def test_map_location(tmp_path):
    obj = {"w": lucid.ones(2)}
    for loc in ["cpu", lucid.device("cpu"), {"cpu": "cpu"}]:
        assert _roundtrip(obj, tmp_path, map_location=loc)["w"].device == lucid.device("cpu")
    seen = []
    out = _roundtrip(obj, tmp_path, map_location=lambda t, where: seen.append(where) or t * 2)
    assert seen == ["cpu"] and out["w"].numpy().tolist() == [2.0, 2.0]
    assert _roundtrip(obj, tmp_path, weights_only=True, mmap=False)["w"].numpy().tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="map_location must be"):
        _roundtrip(obj, tmp_path, map_location=3)


def test_layout_is_as_documented(tmp_path):
    lucid.save({"w": lucid.tensor([1.0, 2.0], dtype=lucid.bfloat16)}, tmp_path / "f")
    raw = (tmp_path / "f").read_bytes()
    magic, version, hlen, header_crc = struct.unpack_from("<8sIQI", raw)
    assert magic == MAGIC and version == 2
    assert header_crc == crc32c.crc32c(raw[24:24 + hlen])
    header = json.loads(raw[24:24 + hlen])
    start = -(-(24 + hlen) // 64) * 64
    assert len(raw) == start + header["data_size"]
    e = header["tensors"][0]
    assert e["dtype"] == "bfloat16" and e["shape"] == [2] and e["nbytes"] == 4
    # bfloat16 1.0 and 2.0 are 0x3f80 and 0x4000, little-endian
    data = raw[start + e["offset"]:start + e["offset"] + 4]
    assert data == bytes([0x80, 0x3F, 0x00, 0x40])
    assert e["crc32c"] == crc32c.crc32c(data)
    assert header["root"] == {"t": "dict", "v": [["w", {"t": "tensor", "i": 0}]]}


def test_version_1_files_still_load(tmp_path):
    # written byte for byte as the version-1 writer did (no checksums)
    header = {"format": "lucid", "data_size": 64,
              "tensors": [{"dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8, "device": "cpu",
                           "requires_grad": False}],
              "root": {"t": "odict", "v": [["w", {"t": "tensor", "i": 0}], ["n", 2 ** 70]],
                       "meta": {"t": "dict", "v": [["", {"t": "dict", "v": [["version", 1]]}]]}}}
    _rebuild(tmp_path / "v1", header, np.array([1.5, -2], "<f4").tobytes() + b"\0" * 56)
    out = lucid.load(tmp_path / "v1")
    assert type(out) is collections.OrderedDict and out["n"] == 2 ** 70
    assert out._metadata == {"": {"version": 1}}
    assert out["w"].numpy().tolist() == [1.5, -2.0]


# A file the version-1 Python writer (before the format moved to C++) wrote,
# zlib-compressed and base64-encoded.
V1_FILE = (
    "eNqtlMGO2jAQhrOHvkfls4VsE7KEQ7vS9lK1h156QhEyxIC1IU5th5aiqDxan6FP0DfZju1NATWsysJICcrMP99MxkM+fr5//+7+"
    "w6ebKIp+vYq8bdFc6RW3aISKeiZzhFHOLZ8Y+V2gURwPMbKiNEobNBpvUW43FfjRvFDc9hmozZI7z5hhlmGk5nMjAEYwKqcbKyCL"
    "JoAUazlzebOqhhwtvtRSCzNZaJ6j0ZwXRjT4WfoBO4n38OEV2AdoyoZ7dnw2e+rhNDnROE3ZRXSlihNkNkj2ZHY2WZY2iU+g++za"
    "Z0kP6cP4jJFYXQuMKq75Slihg6MBnFYKYFvk1jiXMwupa6g0RiuVCxhaiKijEOl9FXKxtG00rDmEJawvQJ1iKrnpitMmg6rQBG+r"
    "HrPbnCPnWmgjVYkwzbLA/w9Z1nipqqxcwV9Sd6YYy63oipButai6Xor5SuJbNeHrRZeg34SOnMwfAhyLqiuY0LijTAFZpEcIdfIp"
    "jGo/yboqxJOO9FJQpWkasHxl/FFjv0fOA58nwWdLhMu6KP5WdjVJ5tsJidLtA6Z0SAYpTRi5pbcxpX3Sj1nsMQVfdB5lHNJL2xkd"
    "+GjJyzbo1zn07t0+Hna9nXV48Ir2exBUYbdb2dOT17ltd5p/50MxekBZg4Pz9YPYID+ErmYTvy7RM7Z7C7efcMHv3V10tu3euFv0"
    "YntJzaPuL8q/ia5iu8dgP85P/X1R/38AbkLk9Q=="
)


def test_a_file_of_the_version_1_writer_loads(tmp_path):
    (tmp_path / "old.lucid").write_bytes(zlib.decompress(base64.b64decode("".join(V1_FILE))))
    out = lucid.load(tmp_path / "old.lucid")
    sd = out["model"]
    assert type(sd) is collections.OrderedDict and list(sd) == ["0.weight", "0.bias"]
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 1}}
    assert sd["0.weight"].numpy().tolist() == [[1.0, -2.0], [0.5, 3.0]]
    assert math.copysign(1, sd["0.bias"].numpy()[1]) == -1
    state = out["optimizer"]["state"][0]
    assert state["step"].numpy().tolist() == 3.0 and state["exp_avg"].dtype == lucid.bfloat16
    assert out["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert out["optimizer"]["param_groups"][0]["foreach"] is None
    assert out["iter"] == 2 ** 70 and math.isnan(out["nan"]) and out[(1, "k")] == "tuple key"
    assert out["flags"].numpy().tolist() == [True, False]
    assert out["ints"].numpy().tolist() == [-(2 ** 63), 2 ** 63 - 1]
    assert out["dtype"] == lucid.float16 and out["device"] == lucid.device("cpu")
    assert isinstance(out["p"], lucid.nn.Parameter) and out["p"].requires_grad


# ------------------------------------------------------------ writing
def test_failed_save_leaves_the_old_file_and_no_temporaries(tmp_path):
    path = tmp_path / "ckpt"
    lucid.save({"a": lucid.ones(3)}, path)
    before = path.read_bytes()
    with pytest.raises(pickle.PicklingError, match=r"obj\['bad'\]\[1\] of type builtins.function"):
        lucid.save({"a": lucid.zeros(3), "bad": [1, lambda: 0]}, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    lucid.save([lucid.zeros(1)], path)  # overwrite works
    assert lucid.load(path)[0].numpy().tolist() == [0.0]
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


@pytest.mark.parametrize("obj,exc,match", [
    ({lucid.zeros(1): 1}, TypeError, "dict key of type Tensor"),
    ({(1, frozenset([2])): 1}, TypeError, "dict key of type frozenset"),
    ([1, (lambda: 0)], pickle.PicklingError, r"obj\[1\] of type builtins.function"),
    ({"gen": (i for i in range(3))}, pickle.PicklingError, "generator"),
])
def test_unsupported_objects_are_rejected(obj, exc, match, tmp_path):
    with pytest.raises(exc, match=match):
        lucid.save(obj, tmp_path / "x")
    assert os.listdir(tmp_path) == []


def test_bad_destinations(tmp_path):
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        lucid.save(loop, tmp_path / "x")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        lucid.save(1, tmp_path / "missing" / "x")
    with pytest.raises(TypeError, match="expects a path"):
        lucid.save(1, 42)
    with pytest.raises(TypeError, match="expects a path"):
        lucid.load(42)


# ------------------------------------------------------------ damaged files
def _parts(path):
    """(header, data section) of a checkpoint of either version."""
    raw = path.read_bytes()
    _, version, hlen = struct.unpack_from("<8sIQ", raw)
    prefix = 20 if version == 1 else 24
    start = -(-(prefix + hlen) // 64) * 64
    return json.loads(raw[prefix:prefix + hlen]), raw[start:]


def _rebuild(path, header, data, version=1):
    """Writes a checkpoint of `header` and `data`: version 1 (no header
    checksum) or 2 (its checksum recomputed, so only the edit is tested)."""
    h = json.dumps(header).encode()
    prefix = struct.pack("<8sIQ", MAGIC, version, len(h))
    if version == 2:
        prefix += struct.pack("<I", crc32c.crc32c(h))
    pad = -(-(len(prefix) + len(h)) // 64) * 64 - (len(prefix) + len(h))
    path.write_bytes(prefix + h + b"\0" * pad + data)


@pytest.fixture
def ckpt(tmp_path):
    path = tmp_path / "ckpt"
    lucid.save({"w": lucid.randn(4, 4), "b": lucid.tensor([True, False]), "n": 3}, path)
    return path


def _load_fails(path, match, exc=CheckpointError):
    with pytest.raises(exc, match=match) as info:
        lucid.load(path)
    assert str(path) in str(info.value)


def test_bad_magic(ckpt):
    ckpt.write_bytes(b"NOTLUCID" + ckpt.read_bytes()[8:])
    _load_fails(ckpt, "bad magic")


def test_legacy_pickle_file_is_recognised(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "t.pt", _use_new_zipfile_serialization=False)
    _load_fails(tmp_path / "t.pt", "legacy format")


@pytest.mark.parametrize("keep", [0, 5, 19, 40])
def test_truncated_in_header(ckpt, keep):
    ckpt.write_bytes(ckpt.read_bytes()[:keep])
    _load_fails(ckpt, "truncated")


def test_truncated_data(ckpt):
    ckpt.write_bytes(ckpt.read_bytes()[:-3])
    _load_fails(ckpt, "truncated file: expected")
    with open(ckpt, "rb") as fh:  # a stream has no size check up front, the reads catch it
        with pytest.raises(CheckpointError, match="truncated file"):
            lucid.load(io.BytesIO(fh.read()))


def test_trailing_bytes(ckpt):
    ckpt.write_bytes(ckpt.read_bytes() + b"\0")
    _load_fails(ckpt, "1 unexpected bytes after the end")


def test_corrupt_json(ckpt):
    header, data = _parts(ckpt)
    raw = bytearray(ckpt.read_bytes())
    raw[25] = ord("}")
    ckpt.write_bytes(bytes(raw))
    _load_fails(ckpt, "the header's checksum does not match")  # version 2: the checksum catches it first
    for version in (1, 2):
        _rebuild(ckpt, header, data, version)
        raw = bytearray(ckpt.read_bytes())
        raw[20 if version == 1 else 24] = ord("}")
        if version == 2:
            raw[20:24] = struct.pack("<I", crc32c.crc32c(bytes(raw[24:24 + len(json.dumps(header))])))
        ckpt.write_bytes(bytes(raw))
        _load_fails(ckpt, "corrupt header")


def test_unsupported_version(ckpt):
    header, data = _parts(ckpt)
    _rebuild(ckpt, header, data, version=99)
    _load_fails(ckpt, r"unsupported format version 99 \(this Lucid reads versions 1 and 2\)")


def _edit_tensor(ckpt, **changes):
    header, data = _parts(ckpt)
    header["tensors"][0].update(changes)
    _rebuild(ckpt, header, data)


def test_offset_out_of_range(ckpt):
    header, _ = _parts(ckpt)
    _edit_tensor(ckpt, offset=header["data_size"] - 8)
    _load_fails(ckpt, r"outside the data section")


def test_unknown_dtype(ckpt):
    _edit_tensor(ckpt, dtype="complex64")  # a NumPy dtype, but not a tensor's
    _load_fails(ckpt, "unknown dtype 'complex64'")


def test_size_mismatch_and_bad_shape(ckpt):
    _edit_tensor(ckpt, shape=[4, 5])
    _load_fails(ckpt, "does not match shape")
    _edit_tensor(ckpt, shape=[-4, -4])
    _load_fails(ckpt, "invalid shape")


def test_bad_tensor_reference_and_tag(ckpt):
    header, data = _parts(ckpt)
    header["root"]["v"][0][1]["i"] = 9
    _rebuild(ckpt, header, data)
    _load_fails(ckpt, "reference to tensor 9, but the file has 2 tensors")
    header["root"] = {"t": "pickle", "v": "os.system"}
    _rebuild(ckpt, header, data)
    _load_fails(ckpt, "reference to tensor None")
    header["root"] = {"t": "pickle", "i": 0, "refs": []}
    _rebuild(ckpt, header, data)
    _load_fails(ckpt, "a 'pickle' reference to entry 0, which holds a tensor")
    header["root"] = {"t": "object", "v": "os.system"}
    _rebuild(ckpt, header, data)
    _load_fails(ckpt, "unknown or malformed tagged value")


def test_bad_bool_bytes(ckpt):
    header, data = _parts(ckpt)
    e = next(e for e in header["tensors"] if e["dtype"] == "bool")
    e.pop("crc32c")  # (the checksum would catch the damage first)
    data = bytearray(data)
    data[e["offset"]] = 7
    _rebuild(ckpt, header, bytes(data))
    _load_fails(ckpt, "bool tensor holds bytes other than 0 and 1")


def test_device_not_available(ckpt):
    if lucid._C.device_available("metal"):
        pytest.skip("needs a machine without Metal")
    _edit_tensor(ckpt, device="metal")
    _load_fails(ckpt, "saved on device 'metal', which is not available", exc=RuntimeError)
    assert lucid.load(ckpt, map_location="cpu")["w"].device == lucid.device("cpu")
    assert lucid.load(ckpt, map_location={"metal": "cpu"})["w"].device == lucid.device("cpu")
    _edit_tensor(ckpt, device="tpu")
    _load_fails(ckpt, "invalid device 'tpu'")


def test_empty_file(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    _load_fails(tmp_path / "e", "truncated")
