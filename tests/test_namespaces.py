"""The namespaces a PyTorch program touches even on a CPU (lucid.cuda,
lucid.backends, lucid.accelerator, lucid.nn.parallel, lucid.onnx,
lucid.distributed), the top-level modules `import lucid` brings in, the
device predicates of tensors and the legacy tensor types: each answers as
PyTorch's CPU build does where Lucid has the same devices."""
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_close, rnd
from test_nn_helpers import copy_weights

HAS_CUDA = lucid.cuda.is_available()
HAS_METAL = lucid._C.device_available("metal")


def test_import_lucid_brings_the_namespaces():
    code = ("import lucid\n"
            "for name in ['nn', 'optim', 'amp', 'utils', 'compile', 'cuda', 'backends', 'accelerator', 'onnx',\n"
            "             'distributed']:\n"
            "    assert hasattr(lucid, name), name\n"
            "lucid.nn.functional, lucid.nn.init, lucid.nn.utils, lucid.nn.parallel, lucid.utils.data.DataLoader\n"
            "lucid.optim.lr_scheduler.StepLR, lucid.amp.GradScaler, lucid.compile.fused_step\n"
            "lucid.backends.cudnn, lucid.backends.cuda.matmul, lucid.backends.mps, lucid.cuda.amp.GradScaler\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------- cuda
@pytest.mark.skipif(HAS_CUDA, reason="answers of a build without CUDA")
def test_cuda_queries_answer_like_torch_cpu_build():
    assert lucid.cuda.is_available() is torch.cuda.is_available() is False
    assert lucid.cuda.device_count() == torch.cuda.device_count() == 0
    assert lucid.cuda.is_bf16_supported() is torch.cuda.is_bf16_supported() is False
    assert lucid.cuda.is_initialized() is False
    for name in ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"]:
        assert getattr(lucid.cuda, name)() == getattr(torch.cuda, name)() == 0
    assert lucid.cuda.memory_stats() == {}
    assert lucid.cuda.empty_cache() is None
    lucid.cuda.reset_peak_memory_stats()


@pytest.mark.skipif(HAS_CUDA, reason="answers of a build without CUDA")
def test_cuda_seeding_does_nothing_without_a_device():
    lucid.manual_seed(3)
    a = lucid.rand(4)
    lucid.manual_seed(3)
    lucid.cuda.manual_seed(99)
    lucid.cuda.manual_seed_all(99)
    lucid.cuda.seed_all()
    assert_close(lucid.rand(4), torch.from_numpy(a.numpy()))  # the CPU stream is untouched


@pytest.mark.skipif(HAS_CUDA, reason="answers of a build without CUDA")
def test_cuda_rng_state_of_every_device_is_empty_without_one():
    assert lucid.cuda.get_rng_state_all() == torch.cuda.get_rng_state_all() == []
    assert lucid.cuda.set_rng_state_all([]) is None and torch.cuda.set_rng_state_all([]) is None
    with pytest.raises(lucid.cuda.CudaUnavailableError):  # a state for a device that is not there
        lucid.cuda.set_rng_state_all([lucid.get_rng_state()])


@pytest.mark.skipif(HAS_CUDA, reason="answers of a build without CUDA")
@pytest.mark.parametrize("call", ["synchronize()", "current_device()", "get_device_name()", "get_device_name(0)",
                                  "get_device_capability()", "get_device_properties(0)", "set_device(0)", "init()",
                                  "get_rng_state()", "initial_seed()", "Stream()", "Event()"])
def test_cuda_calls_that_need_a_gpu_raise(call):
    with pytest.raises(lucid.cuda.CudaUnavailableError, match="needs a CUDA device") as info:
        eval("lucid.cuda." + call)
    # PyTorch's CPU build raises AssertionError for these; RuntimeError is Lucid's usual kind.
    assert isinstance(info.value, AssertionError) and isinstance(info.value, RuntimeError)
    with pytest.raises(lucid.cuda.CudaUnavailableError):
        with lucid.cuda.device(0):
            pass


@pytest.mark.skipif(HAS_CUDA, reason="answers of a build without CUDA")
def test_tensor_cuda_raises_and_cuda_tensor_types():
    with pytest.raises(lucid.cuda.CudaUnavailableError):
        lucid.ones(2).cuda()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        lucid.zeros(2, device="cuda")
    assert not isinstance(lucid.ones(2), lucid.cuda.FloatTensor)


@pytest.mark.skipif(HAS_CUDA, reason="answers of a build without CUDA")
def test_cuda_amp_disables_itself_with_a_warning():
    with pytest.warns(UserWarning, match="Disabling"):
        scaler = lucid.cuda.amp.GradScaler()
    assert not scaler.is_enabled()
    with pytest.warns(UserWarning, match="Disabling"):
        scaler = lucid.amp.GradScaler("cuda")
    with pytest.warns(UserWarning):
        assert not torch.amp.GradScaler("cuda").is_enabled()
    assert not scaler.is_enabled()
    with pytest.warns(UserWarning, match="Disabling autocast"):
        with lucid.cuda.amp.autocast():
            assert not lucid.amp.is_autocast_enabled()
            assert lucid.nn.functional.linear(lucid.ones(2, 3), lucid.ones(4, 3)).dtype == lucid.float32
    with pytest.warns(UserWarning, match="Disabling autocast"):
        with lucid.autocast("cuda", dtype=lucid.bfloat16):
            assert not lucid.amp.is_autocast_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with lucid.amp.autocast("cpu"):  # the CPU is always there
            assert lucid.amp.is_autocast_enabled()


# ------------------------------------------------------------------ backends
def test_backends_flags_are_kept():
    import lucid.backends.cudnn as cudnn

    assert cudnn is lucid.backends.cudnn
    for name in ["benchmark", "deterministic", "enabled", "allow_tf32"]:
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name), name
    old = cudnn.benchmark, cudnn.deterministic
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert lucid.backends.cudnn.benchmark is True and lucid.backends.cudnn.deterministic is True
    finally:
        cudnn.benchmark, cudnn.deterministic = old
    if not lucid.cuda.is_available():
        assert cudnn.is_available() is False and cudnn.version() is None
    m = lucid.backends.cuda.matmul
    assert m.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    m.allow_tf32 = True
    assert lucid.backends.cuda.matmul.allow_tf32 is True
    m.allow_tf32 = False
    with lucid.backends.cuda.sdp_kernel(enable_flash=False):
        assert not lucid.backends.cuda.flash_sdp_enabled()
    assert lucid.backends.cuda.flash_sdp_enabled()


def test_backends_mps_is_the_metal_device():
    assert lucid.backends.mps.is_available() is HAS_METAL
    assert lucid.backends.mps.is_built() is HAS_METAL
    if not HAS_METAL:
        assert lucid.backends.mps.is_available() == torch.backends.mps.is_available()


def test_accelerator():
    expected = "cuda" if HAS_CUDA else "metal" if HAS_METAL else None
    acc = lucid.accelerator.current_accelerator()
    assert (acc.type if acc is not None else None) == expected
    assert lucid.accelerator.is_available() is (expected is not None)
    assert lucid.accelerator.device_count() == (1 if expected else 0)
    if expected is None:
        assert torch.accelerator.current_accelerator() is None and not torch.accelerator.is_available()
        with pytest.raises(RuntimeError, match="no accelerator"):
            lucid.accelerator.synchronize()
        with pytest.raises(RuntimeError, match="no accelerator"):
            lucid.accelerator.current_device_index()


# ----------------------------------------------------------------- tensors
def test_tensor_device_predicates():
    t = lucid.ones(2)
    tt = torch.ones(2)
    for name in ["is_cpu", "is_cuda", "is_mps", "is_xpu", "is_meta", "is_sparse", "is_quantized"]:
        assert getattr(t, name) == getattr(tt, name), name
    assert t.get_device() == tt.get_device() == -1
    if HAS_METAL:
        m = t.to("metal")
        assert m.is_mps and not m.is_cpu and m.get_device() == 0


def test_tensor_type_and_legacy_types():
    t = lucid.tensor([1.5, -2.5])
    assert t.type() == "lucid.FloatTensor"
    assert lucid.tensor([1, 2]).type() == "lucid.LongTensor"
    assert lucid.tensor([True]).type() == "lucid.BoolTensor"
    assert t.double().type() == "lucid.DoubleTensor" and t.half().type() == "lucid.HalfTensor"
    ref = torch.tensor([1.5, -2.5])
    for target, ttarget in [(lucid.int64, torch.int64), ("lucid.DoubleTensor", "torch.DoubleTensor"),
                            ("torch.IntTensor", "torch.IntTensor"), (lucid.LongTensor, torch.LongTensor),
                            (lucid.float32, torch.float32)]:
        assert_close(t.type(target), ref.type(ttarget))
    assert t.type(lucid.float32) is t
    with pytest.raises(ValueError, match="invalid type"):
        t.type("lucid.FooTensor")
    assert isinstance(t, lucid.FloatTensor) and not isinstance(t, lucid.LongTensor)
    assert isinstance(lucid.tensor([1]), lucid.LongTensor)
    assert tuple(lucid.FloatTensor(2, 3).shape) == (2, 3) and lucid.FloatTensor(2, 3).dtype == lucid.float32
    assert_close(lucid.FloatTensor([2, 3]), torch.FloatTensor([2, 3]))
    assert_close(lucid.LongTensor([1.7, -2.2]), torch.LongTensor([1.7, -2.2]))
    assert_close(lucid.BoolTensor([1, 0]), torch.BoolTensor([1, 0]))


# ---------------------------------------------------------------- parallel
def test_data_parallel_runs_the_module():
    lm = nn.parallel.DataParallel(nn.Linear(3, 2))
    tm = torch.nn.parallel.DataParallel(torch.nn.Linear(3, 2))
    assert list(lm.state_dict()) == list(tm.state_dict()) == ["module.weight", "module.bias"]
    assert lm.device_ids == tm.device_ids == []
    copy_weights(lm, tm)
    x = rnd(4, 3)
    assert_close(lm(lucid.tensor(x)), tm(torch.tensor(x)))
    assert nn.DataParallel is nn.parallel.DataParallel


def test_distributed_data_parallel_raises():
    with pytest.raises(ValueError, match="no distributed backend"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
    assert lucid.distributed.is_available() is False and lucid.distributed.is_initialized() is False
    from lucid.distributed import destroy_process_group, init_process_group  # noqa: F401  (importable)

    with pytest.raises(RuntimeError, match="no distributed backend"):
        init_process_group(backend="gloo")
    with pytest.raises(ValueError):
        lucid.distributed.get_rank()


def test_onnx_export_raises_when_called():
    import lucid.onnx

    assert lucid.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="ONNX"):
        lucid.onnx.export(nn.Linear(2, 2), (lucid.ones(1, 2),), "model.onnx")


# ------------------------------------------------------- grad-mode helpers
def test_inference_mode_context_and_decorators():
    x = lucid.ones(2, requires_grad=True)
    assert not lucid.is_inference_mode_enabled()
    with lucid.inference_mode():
        assert lucid.is_inference_mode_enabled() and not lucid.is_grad_enabled()
        assert not (x * 2).requires_grad
        with lucid.inference_mode(False):
            assert not lucid.is_inference_mode_enabled()
    assert lucid.is_grad_enabled() and not lucid.is_inference_mode_enabled()

    @lucid.inference_mode()
    def f(t):
        assert lucid.is_inference_mode_enabled()
        return t * 2

    @lucid.inference_mode
    def g(t):
        return t * 2

    @lucid.no_grad
    def h(t):
        return t * 2

    @lucid.enable_grad
    def k(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad and not h(x).requires_grad
    with lucid.no_grad():
        assert k(x).requires_grad
    assert f.__name__ == "f" and g.__name__ == "g"


# ----------------------------------------------------------------- indexing
A = np.arange(24.0).reshape(4, 6)
RANGE_KEYS = [range(2), (range(1, 3), slice(None)), (slice(None), range(0, 6, 2)), range(0), (range(2), range(2)),
              range(3, 0, -1), (Ellipsis, range(1, 4)), [], (range(2), 1)]


@pytest.mark.parametrize("key", RANGE_KEYS, ids=[repr(k) for k in RANGE_KEYS])
def test_indexing_with_a_range(key):
    assert_close(lucid.tensor(A)[key], torch.tensor(A)[key])
    lx, tx = lucid.tensor(A), torch.tensor(A)
    lx[key] = -1.0
    tx[key] = -1.0
    assert_close(lx, tx)


def test_indexing_with_a_range_gradient():
    x = lucid.tensor(A, requires_grad=True)
    xt = torch.tensor(A, requires_grad=True)
    x[range(1, 4, 2)].sum().backward()
    xt[range(1, 4, 2)].sum().backward()
    assert_close(x.grad, xt.grad)


# ------------------------------------------------------ jit, linalg, special
def test_jit_decorators_run_eagerly():
    @lucid.jit.script
    def f(x):
        return x * 2

    assert f(lucid.ones(2)).tolist() == [2.0, 2.0]
    m = nn.Linear(2, 2)
    assert lucid.jit.trace(m, lucid.ones(1, 2)) is m and lucid.jit.script(m) is m
    assert lucid.jit.ignore(f) is f and lucid.jit.unused(f) is f and not lucid.jit.is_scripting()
    with pytest.raises(NotImplementedError, match="TorchScript"):
        lucid.jit.save(m, "m.pt")


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.linalg.norm(x), lambda lib, x: lib.linalg.norm(x, dim=1),
    lambda lib, x: lib.linalg.vector_norm(x, ord=1, dim=0), lambda lib, x: lib.linalg.vector_norm(x, float("inf")),
    lambda lib, x: lib.linalg.vector_norm(x, 3.0, dim=(0, 1), keepdim=True),
    lambda lib, x: lib.linalg.matrix_norm(x), lambda lib, x: lib.linalg.matrix_norm(x, 1),
    lambda lib, x: lib.linalg.matrix_norm(x, float("inf"), keepdim=True), lambda lib, x: lib.linalg.norm(x, "fro"),
    lambda lib, x: lib.linalg.vecdot(x, x), lambda lib, x: lib.special.expit(x), lambda lib, x: lib.special.entr(x),
    lambda lib, x: lib.special.logit(x.sigmoid()), lambda lib, x: lib.special.xlogy(x.abs(), x.abs() + 1),
], ids=["norm", "norm-dim", "vector-1", "vector-inf", "vector-3", "fro", "matrix-1", "matrix-inf", "norm-fro",
        "vecdot", "expit", "entr", "logit", "xlogy"])
def test_linalg_and_special(call):
    from conftest import check

    check(call, rnd(3, 4), rtol=1e-5)


# ---------------------------------------------------------------- settings
def test_settings_and_helpers():
    assert lucid.are_deterministic_algorithms_enabled() is False
    lucid.use_deterministic_algorithms(True)
    assert lucid.are_deterministic_algorithms_enabled() is True
    lucid.use_deterministic_algorithms(False)
    assert lucid.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    lucid.set_float32_matmul_precision("high")
    assert lucid.get_float32_matmul_precision() == "high"
    lucid.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError):
        lucid.set_float32_matmul_precision("fast")
    lucid.set_printoptions(precision=2)
    try:
        assert repr(lucid.tensor([1.23456])) == "tensor([1.23])"
    finally:
        lucid.set_printoptions(profile="default")
    assert repr(lucid.tensor([1.23456])) == repr(torch.tensor([1.23456]))
    a = np.arange(4.0)
    t = lucid.as_tensor(a)
    a[0] = 9.0
    assert t[0].item() == 9.0  # shares the array's memory, as torch.as_tensor does
    assert lucid.as_tensor(t) is t and lucid.as_tensor([1, 2]).dtype == lucid.int64
    assert lucid.Size([2, 3]).numel() == 6 and lucid.Size([2, 3]) == (2, 3)
    s = lucid.seed()
    assert lucid.initial_seed() == s


def test_module_forward_hooks():
    lm, tm = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    copy_weights(lm, tm)
    seen = {}
    for lib, m in (("lucid", lm), ("torch", tm)):
        feats = []
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h2 = m.register_forward_hook(lambda mod, args, out: feats.append(out.detach().numpy().copy()))
        h3 = m.register_forward_hook(lambda mod, args, out: out + 1)
        x = np.ones((1, 3), np.float32)
        out = m(lucid.tensor(x) if lib == "lucid" else torch.tensor(x))
        seen[lib] = (out.detach().numpy(), feats[0])
        h1.remove()
        h2.remove()
        h3.remove()
        plain = m(lucid.tensor(x) if lib == "lucid" else torch.tensor(x)).detach().numpy()
        w, b = (p.detach().numpy() for p in (m.weight, m.bias))
        np.testing.assert_allclose(plain, x @ w.T + b, rtol=1e-6)  # the hooks are gone
        np.testing.assert_allclose(seen[lib][0], 2 * x @ w.T + b + 1, rtol=1e-6)
    np.testing.assert_allclose(seen["lucid"][0], seen["torch"][0], rtol=1e-6)
    np.testing.assert_allclose(seen["lucid"][1], seen["torch"][1], rtol=1e-6)
    if not HAS_CUDA:
        with pytest.raises(lucid.cuda.CudaUnavailableError):
            lm.cuda()
