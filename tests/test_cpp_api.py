"""The C++ API against the Python one.

Builds tests/cpp (doctest unit tests and a small driver) and examples/cpp
with CMake against the installed package's CMake config
(``find_package(Lucid CONFIG)`` with ``lucid.cmake_prefix_path``, or
``LUCID_CMAKE_PREFIX_PATH`` for a ``cmake --install`` prefix), runs the unit
tests, and checks C++ against Python: checkpoints both ways, damaged-file and
other error messages, optimizer defaults, and the examples (a native training
run whose checkpoint Python loads; a Python checkpoint the C++ example runs).

Skips, saying why, where CMake, a C++ compiler, doctest (Debian's
doctest-dev) or the package's CMake config is missing.
"""
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import crc32c
import numpy as np
import pytest

import lucid
import lucid.compile
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim as optim

ROOT = Path(__file__).resolve().parent.parent


def _prefix_path():
    path = os.environ.get("LUCID_CMAKE_PREFIX_PATH") or getattr(lucid, "cmake_prefix_path", None)
    if not path:
        return None, "lucid has no cmake_prefix_path"
    found = [p for p in Path(path).glob("**/LucidConfig.cmake")]
    if not found:
        return None, (f"no LucidConfig.cmake under {path}: lucid is not installed with its CMake package "
                      "(pip install . installs it; or set LUCID_CMAKE_PREFIX_PATH to a cmake --install prefix)")
    return path, None


def _run(cmd, cwd=None, timeout=900):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _build_project(cmake, src, build, prefix):
    """Configures and builds one CMake project: {"ok", "skip", "log"}."""
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    # no build type: unoptimised test code compiles fastest (the library is optimised)
    r = _run([cmake, "-S", str(src), "-B", str(build), *generator, f"-DCMAKE_PREFIX_PATH={prefix}"])
    log = r.stdout + r.stderr
    if r.returncode != 0:
        if "doctest" in log and "Could not find a package configuration file" in log:
            return {"ok": False, "skip": "doctest is not installed (apt-get install doctest-dev)", "log": log}
        return {"ok": False, "skip": None, "log": log}
    r = _run([cmake, "--build", str(build), "--parallel", "2"])
    log += r.stdout + r.stderr
    return {"ok": r.returncode == 0, "skip": None, "log": log}


def _build(out):
    """Builds examples/cpp and tests/cpp into `out`: {name: status}."""
    prefix, reason = _prefix_path()
    cmake = shutil.which("cmake")
    if not reason and not cmake:
        reason = "cmake is not installed"
    if not reason and not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
        reason = "no C++ compiler"
    result = {}
    for name in ("examples", "tests"):
        start = time.perf_counter()
        if reason:
            result[name] = {"ok": False, "skip": reason, "log": ""}
        else:
            result[name] = _build_project(cmake, ROOT / name / "cpp", out / name, prefix)
        result[name]["seconds"] = time.perf_counter() - start
    return result


@pytest.fixture(scope="session")
def _cpp_build(tmp_path_factory):
    """Builds once per run (pytest-xdist workers share the build under a lock)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    out = base / "lucid-cpp"
    out.mkdir(exist_ok=True)
    with open(out / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = out / "build.json"
        if marker.exists():
            result = json.loads(marker.read_text())
        else:
            result = _build(out)
            marker.write_text(json.dumps(result))
    return out, result


def _built(build, name):
    out, result = build
    status = result[name]
    if status["skip"]:
        pytest.skip(status["skip"])
    if not status["ok"]:
        pytest.fail(f"building {name}/cpp against the installed package failed:\n" + status["log"][-20000:])
    return out / name


@pytest.fixture
def cpp(_cpp_build):
    """The build of tests/cpp (needs doctest)."""
    return _built(_cpp_build, "tests")


@pytest.fixture
def examples(_cpp_build):
    """The build of examples/cpp (needs only the installed package)."""
    return _built(_cpp_build, "examples")


def _tool(cpp, *args):
    return _run([str(cpp / "lucid_cpp_tool"), *map(str, args)])


# ----------------------------------------------------------------- unit tests
def test_cpp_unit_tests(cpp):
    r = _run([str(cpp / "lucid_cpp_tests"), "--no-colors"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test cases:" in r.stdout and "0 failed" in r.stdout, r.stdout


# ------------------------------------------------------------ C++ == Python
def test_optimizer_defaults_match_python(cpp):
    r = _tool(cpp, "defaults")
    assert r.returncode == 0, r.stdout + r.stderr
    cpp_defaults = json.loads(r.stdout)
    names = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop", "adagrad": "Adagrad",
             "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "NAdam", "radam": "RAdam", "asgd": "ASGD",
             "rprop": "Rprop"}
    assert set(cpp_defaults) == set(names)
    for kind, name in names.items():
        py = getattr(optim, name)([lucid.zeros(2, requires_grad=True)]).defaults
        expected = {k: (list(v) if isinstance(v, tuple) else v) for k, v in py.items() if v is not None}
        assert cpp_defaults[kind] == expected, kind


def _python_error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind is what is compared
        return type(e).__name__, str(e)
    return "none", ""


def test_errors_match_python(cpp):
    r = _tool(cpp, "errors")
    assert r.returncode == 0, r.stdout + r.stderr
    cpp_errors = {}
    for line in r.stdout.splitlines():
        name, kind, message = line.split("\t", 2)
        cpp_errors[name] = (kind, message)

    p = lucid.zeros(2, requires_grad=True)

    def fused_dtype():
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(lucid.zeros(2, 2))

            def forward(self, x):
                return lucid.matmul(x, self.w)

        model = Model()
        step = lucid.compile.fused_step(model, lambda out: (out * out).sum(), optim.SGD(model.parameters(), lr=0.1))
        step(lucid.ones(1, 2))
        step(lucid.ones(1, 2, dtype=lucid.float64))

    python_cases = {
        "sgd_lr": lambda: optim.SGD([p], lr=-1),
        "adam_betas": lambda: optim.Adam([p], betas=(0.9, 1.5)),
        "rmsprop_alpha": lambda: optim.RMSprop([p], alpha=-0.5),
        "add_shapes": lambda: lucid.ones(2, 3) + lucid.ones(4, 5),
        "matmul_shapes": lambda: lucid.matmul(lucid.ones(2, 3), lucid.ones(4, 5)),
        "backward_non_scalar": lambda: (p * 2.0).backward(),
        "item_many": lambda: lucid.ones(3).item(),
        "step_dtype": fused_dtype,
    }
    assert set(cpp_errors) == set(python_cases)
    for name, fn in python_cases.items():
        assert cpp_errors[name] == _python_error(fn), name
        assert cpp_errors[name][0] != "none", name


# ---------------------------------------------------------------- training
TRAIN_CASES = [
    ("adam", optim.Adam, {"lr": 1e-2}),
    ("adamw", optim.AdamW, {"lr": 1e-2, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    ("sgd", optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    ("rmsprop", optim.RMSprop, {"lr": 1e-2, "momentum": 0.5, "centered": True}),
]


@pytest.mark.parametrize("mode", ["fused", "eager"])
@pytest.mark.parametrize("kind,cls,options", TRAIN_CASES, ids=[c[0] for c in TRAIN_CASES])
def test_cpp_and_python_train_to_the_same_bits(cpp, tmp_path, mode, kind, cls, options):
    """The same model, data and optimizer trained through the C++ API and
    through Python (FusedStep vs fused_step, or the eager loops) give the same
    losses, parameters and optimizer state, bit for bit: one core behind both."""
    lucid.manual_seed(5)
    x, labels = lucid.randn(64, 8), lucid.randint(0, 3, (64,))
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    steps = 12
    lucid.save({"kind": kind, "options": options, "params": [p.detach().clone() for p in model.parameters()],
                "x": x, "labels": labels, "steps": steps, "mode": mode}, tmp_path / "in.lucid")
    r = _tool(cpp, "train", tmp_path / "in.lucid", tmp_path / "out.lucid")
    assert r.returncode == 0, r.stdout + r.stderr
    native = lucid.load(tmp_path / "out.lucid")

    def loss_fn(out, y):  # as the C++ driver writes it
        return -F.log_softmax(out, 1).gather(1, y.unsqueeze(1)).mean()

    opt = cls(model.parameters(), **options)
    step = lucid.compile.fused_step(model, loss_fn, opt) if mode == "fused" else None
    losses = []
    for _ in range(steps):
        if step is not None:
            loss = step(x, labels)
        else:
            opt.zero_grad()
            loss = loss_fn(model(x), labels)
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert [float(v) for v in native["losses"]] == losses
    for got, want in zip(native["params"], model.parameters()):
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    sd = opt.state_dict()
    # the C++ groups hold no None options (foreach, fused) and keep their keys sorted
    assert native["optimizer"]["param_groups"] == [{k: v for k, v in g.items() if v is not None}
                                                   for g in sd["param_groups"]]
    assert list(native["optimizer"]["state"]) == list(sd["state"])
    for i, entry in sd["state"].items():
        assert list(native["optimizer"]["state"][i]) == list(entry)
        for key, value in entry.items():
            np.testing.assert_array_equal(native["optimizer"]["state"][i][key].numpy(), value, err_msg=key)


# ---------------------------------------------------------------- checkpoints
def _rich_object():
    lucid.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    w = lucid.randn(2, 3)
    return {
        "model": model.state_dict(),
        "tensors": [w, lucid.tensor([1, -2], dtype=lucid.int64), lucid.tensor([3, 4], dtype=lucid.int32),
                    lucid.tensor([True, False]), w.to(lucid.float16), w.to(lucid.bfloat16),
                    w.to(lucid.float64), lucid.tensor(2.5), lucid.zeros(0, 3)],
        "shared": w,
        "param": lucid.randn(3, requires_grad=True),
        "state": {0: {"step": lucid.tensor(3.0)}, 1: {}},
        "numbers": (0, -1, 2 ** 62, 0.1, 1e-8, float("inf"), float("-inf"), float("nan")),
        "text": "unicode é€😀 \"quoted\"\n",
        "flags": [True, False, None],
        "dtype": lucid.bfloat16,
        "device": lucid.device("cpu"),
        "numpy": [np.arange(6, dtype=np.uint8).reshape(2, 3), np.float16(1.5), np.complex64(1 - 2j), np.zeros((0, 2))],
        "wide": [2 ** 64, -(2 ** 100)],
        "pickled": {1, 2, 3},  # no data kind holds a set: pickled, and carried through C++ unchanged
        ("tuple", 1): "tuple key",
        2.5: "float key",
        None: "none key",
    }


def _assert_same(a, b, where="obj"):
    if isinstance(a, (np.ndarray, np.generic)):
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, lucid.Tensor):
        assert isinstance(b, lucid.Tensor), where
        assert type(a) is type(b), where  # nn.Parameter stays a Parameter
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), where
        assert a.requires_grad == b.requires_grad, where
        np.testing.assert_array_equal(a.detach().float().numpy() if a.dtype == lucid.bfloat16 else a.detach().numpy(),
                                      b.detach().float().numpy() if b.dtype == lucid.bfloat16 else b.detach().numpy())
    elif isinstance(a, dict):
        assert isinstance(b, dict) and type(a) is type(b), where
        assert list(a) == list(b), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and a != a:
        assert isinstance(b, float) and b != b, where
    else:
        assert type(a) is type(b) and a == b, where


def test_checkpoint_python_to_cpp_to_python(cpp, tmp_path):
    obj = _rich_object()
    src, dst = tmp_path / "from_python.lucid", tmp_path / "from_cpp.lucid"
    lucid.save(obj, src)
    r = _tool(cpp, "roundtrip", src, dst)
    assert r.returncode == 0, r.stdout + r.stderr
    back = lucid.load(dst)
    _assert_same(obj, back)
    assert back["model"]._metadata == obj["model"]._metadata
    assert back["shared"] is back["tensors"][0]  # a tensor saved twice is stored once
    # one writer: what C++ writes back is byte for byte what Python wrote,
    # metadata, Parameter marks, NumPy arrays and the pickled set included
    assert src.read_bytes() == dst.read_bytes()


def _damaged(tmp_path):
    good = tmp_path / "good.lucid"
    lucid.save({"w": lucid.ones(4), "n": 3}, good)
    data = good.read_bytes()
    header_len = int.from_bytes(data[12:20], "little")
    header = data[24:24 + header_len]
    yield "truncated", data[:-3]
    yield "trailing", data + b"xyz"
    yield "short", b"LUCID"
    yield "zip", b"PK\x03\x04 zip"
    yield "pickle", b"\x80\x04 pickle"
    yield "magic", b"hello world, this is text"
    yield "version", data[:8] + (3).to_bytes(4, "little") + data[12:]
    yield "header_checksum", data[:30] + bytes([data[30] ^ 1]) + data[31:]
    yield "data_checksum", data[:-61] + bytes([data[-61] ^ 1]) + data[-60:]
    yield "header_length", data[:12] + (10 ** 6).to_bytes(8, "little") + data[20:]

    def with_header(h):  # a consistent version-2 file around header `h`
        h = h.encode()
        align = lambda n: -(-n // 64) * 64  # noqa: E731
        body = data[align(24 + header_len):]
        start = 24 + len(h)
        return (data[:12] + len(h).to_bytes(8, "little") + crc32c.crc32c(h).to_bytes(4, "little") + h
                + b"\0" * (align(start) - start) + body)

    text = header.decode()
    yield "format", with_header(text.replace('"lucid"', '"other"'))
    yield "dtype", with_header(text.replace('"float32"', '"float8"'))
    yield "nbytes", with_header(text.replace('"nbytes":16', '"nbytes":12'))
    yield "shape", with_header(text.replace('"shape":[4]', '"shape":[-4]'))
    yield "offset", with_header(text.replace('"offset":0', '"offset":64'))
    yield "device", with_header(text.replace('"device":"cpu"', '"device":"tpu"'))
    yield "ref", with_header(text.replace('"i":0', '"i":7'))
    yield "tag", with_header(text.replace('"t":"dict"', '"t":"set"'))
    yield "bool", None  # built below


def test_damaged_checkpoints_give_python_s_messages(cpp, tmp_path):
    cases = list(_damaged(tmp_path))
    bool_file = tmp_path / "bool.lucid"
    lucid.save(lucid.tensor([True, False]), bool_file)
    data = bytearray(bool_file.read_bytes())
    data[-64] = 7  # the first element's byte (the data section is 64 bytes)
    cases[-1] = ("bool", bytes(data))
    for name, content in cases:
        path = tmp_path / f"{name}.lucid"
        path.write_bytes(content)
        kind, message = _python_error(lambda: lucid.load(path))
        assert kind == "CheckpointError", (name, message)
        r = _tool(cpp, "roundtrip", path, tmp_path / "out.lucid")
        assert r.returncode == 3, (name, r.stdout + r.stderr)
        if name in ("zip", "pickle"):  # Python reads PyTorch's files; the C++ API only says what they are
            assert "looks like a pickle/zip file" in r.stdout, name
            continue
        assert r.stdout.strip() == f"CheckpointError: {message}", name


# ------------------------------------------------------------------- examples
def test_example_trains_and_python_loads_the_checkpoint(examples, tmp_path):
    ckpt = tmp_path / "mlp.lucid"
    r = _run([str(examples / "train_mlp"), str(ckpt), "120"])
    assert r.returncode == 0, r.stdout + r.stderr
    losses = [float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("step")]
    assert len(losses) == 7  # steps 1, 20, ..., 120
    assert losses[-1] < 0.5 * losses[0], r.stdout
    assert "1 compile(s)" in r.stdout

    ck = lucid.load(ckpt)
    assert ck["steps"] == 120
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    model.load_state_dict(ck["model"])
    x, labels = ck["data"]["x"], ck["data"]["labels"]
    assert x.dtype == lucid.float32 and labels.dtype == lucid.int64
    with lucid.no_grad():
        loss = F.cross_entropy(model(x), labels).item()
    assert loss == pytest.approx(ck["eval_loss"], rel=1e-5)
    assert loss < losses[0]

    # the Adam state carries over: Python resumes where C++ stopped
    opt = optim.Adam(model.parameters(), lr=1e-3)
    opt.load_state_dict(ck["optimizer"])
    assert opt.param_groups[0]["lr"] == 1e-2
    assert opt.param_groups[0]["betas"] == (0.9, 0.999)
    sd = opt.state_dict()
    assert float(sd["state"][0]["step"]) == 120
    np.testing.assert_array_equal(sd["state"][3]["exp_avg_sq"], ck["optimizer"]["state"][3]["exp_avg_sq"].numpy())
    opt.zero_grad()
    F.cross_entropy(model(x), labels).backward()
    opt.step()
    assert float(opt.state_dict()["state"][0]["step"]) == 121


def test_example_runs_a_python_checkpoint(examples, tmp_path):
    lucid.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    x = lucid.randn(5, 4)
    ckpt = tmp_path / "from_python.lucid"
    lucid.save({"model": model.state_dict(), "input": x}, ckpt)
    r = _run([str(examples / "load_checkpoint"), str(ckpt)])
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["0.weight", "[16,", "4]", "float32"]
    start = lines.index("output [5, 2]")
    out = np.array([[float(v) for v in line.split()] for line in lines[start + 1:]], dtype=np.float32)
    with lucid.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)

    # a damaged file: the C++ program reports Python's message
    ckpt.write_bytes(ckpt.read_bytes()[:-1])
    r = _run([str(examples / "load_checkpoint"), str(ckpt)])
    assert r.returncode == 1
    assert r.stderr.strip() == "error: " + _python_error(lambda: lucid.load(ckpt))[1]
