"""Checkpoint integrity: CRC-32C against a reference implementation, every
single-byte flip of a saved model detected and named, crafted headers
(hostile sizes, shapes, nesting, literals, overlaps) and a fuzz over mutated
headers raising CheckpointError with the file's name and nothing else, and
crafted pickles that run no code."""
import collections
import io
import json
import os
import pickle
import random
import struct

import crc32c
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.optim as optim
from lucid.serialization import MAGIC, CheckpointError


# ------------------------------------------------------------ the checksum
@pytest.mark.parametrize("portable", [False, True])
def test_crc32c_matches_the_reference_package(portable):
    rng = np.random.default_rng(0)
    for n in [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096, 12287, 12288, 12289, 24583, 100003,
              (1 << 20) + 13]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert lucid._C.crc32c(data, portable=portable) == crc32c.crc32c(data), n
        for cut in {0, n // 3, n}:  # continuing from a prefix's value
            head = lucid._C.crc32c(data[:cut], portable=portable)
            assert lucid._C.crc32c(data[cut:], head, portable=portable) == crc32c.crc32c(data), (n, cut)
    for offset in range(8):  # every alignment of the start
        data = bytes(range(256)) * 3
        assert lucid._C.crc32c(memoryview(data)[offset:], portable=portable) == crc32c.crc32c(data[offset:])
    assert lucid._C.crc32c(b"123456789", portable=portable) == 0xE3069283  # the published check value


# ------------------------------------------------------------ byte flips
def _small_checkpoint(path):
    lucid.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    model(lucid.randn(5, 3)).sum().backward()
    opt.step()
    lucid.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter": 7,
                "extra": {"seen": {1, 2}, "mask": lucid.tensor([True, False])}}, path)


def _entries(path):
    """[(start, end, entry index)] of each entry's bytes in the file, and the header."""
    raw = path.read_bytes()
    _, version, hlen = struct.unpack_from("<8sIQ", raw)
    assert version == 2
    header = json.loads(raw[24:24 + hlen])
    start = -(-(24 + hlen) // 64) * 64
    return [(start + e["offset"], start + e["offset"] + e["nbytes"], k)
            for k, e in enumerate(header["tensors"])], header, start


def _where(header, k):
    """The path to entry k as the error message writes it (obj['model']['0.weight'])."""
    def walk(v, path):
        if isinstance(v, list):
            for i, x in enumerate(v):
                found = walk(x, f"{path}[{i}]")
                if found:
                    return found
        elif isinstance(v, dict):
            if v.get("i") == k and v.get("t") in ("tensor", "ndarray", "pickle"):
                return path
            if v.get("t") in ("dict", "odict"):
                for key, x in v["v"]:
                    found = walk(x, f"{path}[{key!r}]")
                    if found:
                        return found
            if v.get("t") == "tuple":
                return walk(v["v"], path)
        return None
    return walk(header["root"], "obj")


def _load_bytes(data, name):
    f = io.BytesIO(data)
    f.name = name
    return lucid.load(f)


@pytest.mark.parametrize("flip", ["random_mask", "low_bit"])
def test_every_single_byte_flip_raises_checkpoint_error(tmp_path, flip):
    good = tmp_path / "model.lucid"
    _small_checkpoint(good)
    raw = good.read_bytes()
    entries, header, data_start = _entries(good)
    assert len(raw) < 8192 and any(e[1] - e[0] for e in entries)
    rng = random.Random(1)
    named = 0
    for pos in range(len(raw)):
        damaged = bytearray(raw)
        damaged[pos] ^= rng.randrange(1, 256) if flip == "random_mask" else 1
        with pytest.raises(CheckpointError) as info:
            _load_bytes(bytes(damaged), "model.lucid")
        message = str(info.value)
        assert message.startswith("model.lucid: "), (pos, message)
        inside = [k for start, end, k in entries if start <= pos < end]
        if inside:  # a tensor's (or array's, or pickle's) byte: the message names it
            assert _where(header, inside[0]) in message and "checksum" in message, (pos, message)
            named += 1
    assert named == sum(end - start for start, end, _ in entries)
    # the same through a path (what users do)
    damaged = bytearray(raw)
    damaged[entries[0][0]] ^= 0x80
    (tmp_path / "bad.lucid").write_bytes(bytes(damaged))
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'bad.lucid'}: damaged file: the checksum of tensor "
                                              r"obj\['model'\]\['0.weight'\]"):
        lucid.load(tmp_path / "bad.lucid")


def test_random_flips_in_a_larger_model(tmp_path):
    lucid.manual_seed(1)
    model = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))
    good = tmp_path / "big.lucid"
    lucid.save(model.state_dict(), good)
    raw = good.read_bytes()
    bad = tmp_path / "bad.lucid"
    rng = random.Random(2)
    for _ in range(300):
        pos = rng.randrange(len(raw))
        damaged = bytearray(raw)
        damaged[pos] ^= rng.randrange(1, 256)
        bad.write_bytes(bytes(damaged))
        with pytest.raises(CheckpointError, match=str(bad)):
            lucid.load(bad)


def test_truncation_at_every_length_raises(tmp_path):
    good = tmp_path / "model.lucid"
    _small_checkpoint(good)
    raw = good.read_bytes()
    for n in range(len(raw)):
        with pytest.raises(CheckpointError, match="truncated"):
            _load_bytes(raw[:n], "cut.lucid")
    bad = tmp_path / "cut.lucid"
    for n in (0, 5, 23, 100, len(raw) - 1):
        bad.write_bytes(raw[:n])
        with pytest.raises(CheckpointError, match=f"{bad}: truncated"):
            lucid.load(bad)


# ------------------------------------------------------------ crafted headers
def _file(path, header, data=b"\0" * 64, version=1):
    """A checkpoint around `header` (text or JSON-able): version 1, or 2 with
    its header checksum recomputed so that only the header itself is hostile."""
    h = header if isinstance(header, bytes) else (header if isinstance(header, str) else json.dumps(header)).encode()
    prefix = struct.pack("<8sIQ", MAGIC, version, len(h)) + (struct.pack("<I", crc32c.crc32c(h)) if version == 2
                                                              else b"")
    pad = -(-(len(prefix) + len(h)) // 64) * 64 - (len(prefix) + len(h))
    path.write_bytes(prefix + h + b"\0" * pad + data)
    return path


def _header(entries, root=None, data_size=64):
    return {"format": "lucid", "data_size": data_size, "tensors": entries,
            "root": {"t": "tensor", "i": 0} if root is None else root}


def _tensor(**fields):
    e = {"dtype": "float32", "shape": [2], "offset": 0, "nbytes": 8, "device": "cpu", "requires_grad": False}
    e.update(fields)
    return e


CRAFTED = {
    "zero_times_huge_shape": (_header([_tensor(shape=[0, 2 ** 62], nbytes=0)]), "invalid shape"),
    "65_dims": (_header([_tensor(shape=[1] * 65, nbytes=4)]), "invalid shape"),
    "nested_100000_lists": ('{"format":"lucid","data_size":64,"tensors":[],"root":' + "[" * 100000 + "]" * 100000 + "}",
                            "nested deeper than"),
    "nested_100000_dicts": ('{"format":"lucid","data_size":64,"tensors":[],"root":'
                            + '{"t":"tuple","v":[' * 50000 + "]}" * 50000 + "}", "nested deeper than"),
    "nan_literal": ('{"format":"lucid","data_size":64,"tensors":[],"root":NaN}', "corrupt header"),
    "infinity_literal": ('{"format":"lucid","data_size":64,"tensors":[],"root":[-Infinity]}', "corrupt header"),
    "float_overflow": ('{"format":"lucid","data_size":64,"tensors":[],"root":1e999}', "corrupt header"),
    "overlap": (_header([_tensor(shape=[4], nbytes=16), _tensor(shape=[4], nbytes=16, offset=8)]),
                "overlap another entry"),
    "same_range_twice": (_header([_tensor(), _tensor()]), "overlap another entry"),
    "unknown_dtype": (_header([_tensor(dtype="float8")]), "unknown dtype 'float8'"),
    "dtype_not_a_string": (_header([_tensor(dtype=4)]), "unknown dtype 4"),
    "ndarray_dtype_object": (_header([_tensor(kind="ndarray", dtype="object")]), "unknown dtype 'object'"),
    "tensor_ref_to_ndarray": (_header([_tensor(kind="ndarray")], {"t": "tensor", "i": 0}), "holds a ndarray"),
    "nbytes_overflow": (_header([_tensor(shape=[2 ** 31, 2 ** 31, 4], nbytes=0)]), "invalid shape"),
    "nbytes_wraps_to_match": (_header([_tensor(shape=[2 ** 62, 4], nbytes=0)]), "invalid shape"),
    "offset_plus_nbytes_overflows": (_header([_tensor(offset=2 ** 63 - 4)]), "outside the data section"),
    "offset_past_int64": (_header([_tensor(offset=2 ** 64)]), "invalid offset/nbytes"),
    "negative_offset": (_header([_tensor(offset=-64)]), "invalid offset/nbytes"),
    "float_offset": (_header([_tensor(offset=0.0)]), "invalid offset/nbytes"),
    "bool_size": (_header([_tensor(shape=[True], nbytes=4)]), "invalid shape"),
    "data_size_huge": (_header([_tensor()], data_size=2 ** 62), "truncated file"),
    "data_size_negative": (_header([_tensor()], data_size=-1), "invalid 'data_size'"),
    "data_size_past_int64": (_header([_tensor()], data_size=2 ** 70), "invalid 'data_size'"),
    "nbytes_mismatch": (_header([_tensor(nbytes=12)]), "does not match shape"),
    "checksum_not_a_number": (_header([_tensor(crc32c="x")]), "invalid checksum"),
    "checksum_too_wide": (_header([_tensor(crc32c=2 ** 32)]), "invalid checksum"),
    "requires_grad_not_bool": (_header([_tensor(requires_grad="yes")]), "invalid 'requires_grad'"),
    "scalar_with_shape": (_header([_tensor(kind="ndarray", scalar=True)], {"t": "ndarray", "i": 0}),
                          "NumPy scalar with a shape"),
    "unknown_kind": (_header([_tensor(kind="module")]), "unknown kind"),
    "ref_out_of_range": (_header([_tensor()], {"t": "tensor", "i": 2 ** 63 - 1}), "reference to tensor"),
    "list_as_key": (_header([], {"t": "dict", "v": [[[1], 2]]}), "unhashable dict key"),
    "tensor_as_key": (_header([_tensor()], {"t": "dict", "v": [[{"t": "tensor", "i": 0}, 2]]}),
                      "unhashable dict key"),
    "bad_big_int": (_header([], {"t": "int", "v": "12a"}), "invalid integer"),
    "repeated_key": ('{"format":"lucid","format":"lucid","data_size":64,"tensors":[],"root":null}', "repeated key"),
    "not_utf8": (b'{"format":"lucid","data_size":64,"tensors":[],"root":"\xff"}', "corrupt header"),
    "header_not_object": ("[1, 2]", "corrupt header: missing"),
    "empty_header": ("", "corrupt header"),
    "pickle_without_refs": (_header([_tensor(kind="pickle", dtype="uint8", shape=[8])], {"t": "pickle", "i": 0}),
                            "without its 'refs'"),
    "meta_on_plain_dict": (_header([], {"t": "dict", "v": [], "meta": 1}), "plain dict with '_metadata'"),
}


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_headers_raise_checkpoint_error(tmp_path, case, version):
    header, match = CRAFTED[case]
    if version == 2 and isinstance(header, dict):
        for e in header["tensors"]:
            e.setdefault("crc32c", crc32c.crc32c(b"\0" * e["nbytes"]) if isinstance(e["nbytes"], int)
                         and 0 <= e["nbytes"] <= 64 else 0)
    path = _file(tmp_path / f"{case}.lucid", header, version=version)
    with pytest.raises(CheckpointError, match=match) as info:
        lucid.load(path)
    assert str(path) in str(info.value)


def test_header_length_beyond_the_file_and_int64(tmp_path):
    path = tmp_path / "x.lucid"
    for n in [2 ** 63, 2 ** 64 - 1, 10 ** 9]:
        path.write_bytes(MAGIC + struct.pack("<IQI", 2, n, 0) + b"{}")
        with pytest.raises(CheckpointError, match="header of"):
            lucid.load(path)


def test_version_2_requires_checksums_and_zero_padding(tmp_path):
    e = _tensor()
    path = _file(tmp_path / "x.lucid", _header([e]), version=2)
    with pytest.raises(CheckpointError, match="has no checksum"):
        lucid.load(path)
    e["crc32c"] = crc32c.crc32c(b"\0" * 8)
    data = bytearray(64)
    data[40] = 1  # after the tensor, before the end of the data section
    _file(path, _header([e]), bytes(data), version=2)
    with pytest.raises(CheckpointError, match="should be zero"):
        lucid.load(path)
    _file(path, _header([e]), version=2)
    assert lucid.load(path).numpy().tolist() == [0.0, 0.0]


# ------------------------------------------------------------ fuzz
def _mutate_text(text, rng):
    b = bytearray(text)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(4)
        pos = rng.randrange(len(b))
        if op == 0:
            b[pos] ^= rng.randrange(1, 256)
        elif op == 1:
            del b[pos:pos + rng.randrange(1, 8)]
        elif op == 2:
            b[pos:pos] = rng.choice([b"[", b"]", b"{", b"}", b",", b":", b'"', b"-1", b"1e308", b"99999999999999999999",
                                     b"null", b"NaN", b"\\u0000", b"\xff", b"0", b"true"])
        else:
            other = rng.randrange(len(b))
            b[pos:pos + 4] = b[other:other + 4]
    return bytes(b)


HOSTILE = [None, True, -1, 0, 1, 2 ** 31, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64, -(2 ** 63), 1.5, float("1e300"),
           "", "x", "float32", "cpu", "metal", [], [0], [2 ** 62, 0], [-1], [1] * 65, {}, {"t": "tensor", "i": 0},
           {"t": "dict", "v": [[1, 2], [1, 3]]}, {"t": "tuple", "v": 1}, {"t": "float", "v": "nan"},
           {"t": "pickle", "i": 0, "refs": []}, {"t": "ndarray", "i": 1}]


def _mutate_tree(header, rng):
    """Replaces one value anywhere in the header with a hostile one."""
    h = json.loads(json.dumps(header))
    slots = []

    def walk(v):
        if isinstance(v, dict):
            for k in v:
                slots.append((v, k))
                walk(v[k])
        elif isinstance(v, list):
            for i in range(len(v)):
                slots.append((v, i))
                walk(v[i])
    walk(h)
    container, key = rng.choice(slots)
    container[key] = rng.choice(HOSTILE)
    return h


def test_fuzz_mutated_headers_raise_only_checkpoint_error(tmp_path):
    good = tmp_path / "good.lucid"
    _small_checkpoint(good)
    raw = good.read_bytes()
    _, _, hlen = struct.unpack_from("<8sIQ", raw)
    text = raw[24:24 + hlen]
    header = json.loads(text)
    data = raw[-(-(24 + hlen) // 64) * 64:]
    rng = random.Random(3)
    path = tmp_path / "fuzz.lucid"
    outcomes = collections.Counter()
    for trial in range(1200):
        mutated = _mutate_text(text, rng) if trial % 2 else json.dumps(_mutate_tree(header, rng)).encode()
        _file(path, mutated, data, version=rng.choice([1, 2]))
        try:
            lucid.load(path)
            outcomes["loaded"] += 1
        except CheckpointError as e:
            assert str(path) in str(e)
            outcomes["CheckpointError"] += 1
        except RuntimeError as e:  # a valid file whose tensor names a device this machine lacks
            assert "not available here" in str(e), (mutated[:300], e)
            outcomes["device"] += 1
        except pickle.UnpicklingError as e:  # a valid file whose pickle names a global outside the allow-list
            assert "Weights only load failed" in str(e)
            outcomes["refused"] += 1
    print(dict(outcomes))
    assert outcomes["CheckpointError"] > 900, outcomes


# ------------------------------------------------------------ no code runs
class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _malicious_lucid(path, marker):
    """A checkpoint whose pickled object runs a shell command when unpickled."""
    payload = pickle.dumps(_RunsCode(marker), protocol=4)
    entry = {"kind": "pickle", "dtype": "uint8", "shape": [len(payload)], "offset": 0, "nbytes": len(payload),
             "crc32c": crc32c.crc32c(payload)}
    size = -(-len(payload) // 64) * 64
    _file(path, _header([entry], {"t": "pickle", "i": 0, "refs": []}, data_size=size),
          payload + b"\0" * (size - len(payload)), version=2)


def test_a_crafted_pickle_runs_nothing_by_default(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.lucid"
    _malicious_lucid(path, marker)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os)\.system"):
        lucid.load(path)
    with pytest.raises(pickle.UnpicklingError):
        with lucid.serialization.safe_globals([collections.OrderedDict]):
            lucid.load(path)
    assert not marker.exists()
    # the file really is hostile: trusting it runs the command
    lucid.load(path, weights_only=False)
    assert marker.exists()


def test_a_crafted_pytorch_file_runs_nothing(tmp_path):
    import torch
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(2), "x": _RunsCode(marker)}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os)\.system"):
        lucid.load(path)
    assert not marker.exists()
