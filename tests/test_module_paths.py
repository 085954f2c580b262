"""The module paths and names PyTorch programs import beyond the main
namespaces: nn.modules.* homes, nn.modules.utils, nn.common_types,
nn.parameter, optim.optimizer hooks, utils.hooks, utils.data.distributed,
torch.types, torch.overrides, torch._dynamo / torch.compiler,
torch.multiprocessing and autograd.grad_mode; each answers as PyTorch's
does (checked against torch where there is a value to compare)."""
import importlib
import pickle
import subprocess
import sys
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
from conftest import assert_close


def _lucid_name(torch_module):
    return "lucid" + torch_module[len("torch"):]


# ---------------------------------------------------------------- every name of PyTorch's module homes
HOMES = ["torch.nn.modules.conv", "torch.nn.modules.linear", "torch.nn.modules.batchnorm", "torch.nn.modules.loss",
         "torch.nn.modules.activation", "torch.nn.modules.container", "torch.nn.modules.dropout",
         "torch.nn.modules.normalization", "torch.nn.modules.pooling", "torch.nn.modules.rnn",
         "torch.nn.modules.transformer", "torch.nn.modules.sparse", "torch.nn.modules.padding",
         "torch.nn.modules.flatten", "torch.nn.modules.pixelshuffle", "torch.nn.modules.upsampling",
         "torch.nn.modules.distance", "torch.nn.modules.fold", "torch.nn.modules.channelshuffle",
         "torch.nn.modules.instancenorm", "torch.nn.modules.lazy", "torch.nn.modules.adaptive",
         "torch.nn.parameter", "torch.optim.optimizer", "torch.optim.lr_scheduler", "torch.utils.data.dataloader",
         "torch.utils.data.dataset", "torch.utils.data.sampler", "torch.utils.data.distributed",
         "torch.autograd.grad_mode", "torch.compiler", "torch.profiler"]
# PyTorch names these modules export that Lucid leaves out, with the reason (docs/compatibility.md).
LEFT_OUT = {
    "torch.nn.modules.loss": {"LinearCrossEntropyLoss"},  # new fused op of 2.13, not in Lucid's functional
    "torch.nn.modules.normalization": {"CrossMapLRN2d"},  # legacy Lua-torch layer
    "torch.nn.modules.pooling": {"FractionalMaxPool3d"},  # no 3-d fractional max pool kernel
    "torch.autograd.grad_mode": {"enforce_grad_layout_policy"},  # gradient memory layouts: Lucid's are contiguous
    "torch.compiler": {"substitute_in_graph", "set_default_backend", "get_default_backend",
                       "set_enable_guard_collectives", "load_compiled_function", "wrap_numpy", "save_cache_artifacts",
                       "load_cache_artifacts", "keep_portable_guards_unsafe",
                       "skip_guard_on_inbuilt_nn_modules_unsafe", "skip_guard_on_all_nn_modules_unsafe",
                       "keep_tensor_guards_unsafe", "skip_guard_on_globals_unsafe", "skip_all_guards_unsafe",
                       "nested_compile_region"},  # Dynamo internals
}


@pytest.mark.parametrize("home", HOMES)
def test_every_public_name_of_a_module_home_imports(home):
    torch_module = importlib.import_module(home)
    lucid_module = importlib.import_module(_lucid_name(home))
    missing = {n for n in torch_module.__all__ if not hasattr(lucid_module, n)} - LEFT_OUT.get(home, set())
    assert not missing, f"{home}: {sorted(missing)}"


def test_a_layer_is_the_same_class_from_every_home():
    from lucid.nn.modules.activation import Threshold
    from lucid.nn.modules.conv import LazyConv2d
    from lucid.nn.modules.distance import PairwiseDistance
    from lucid.nn.modules.fold import Unfold
    from lucid.nn.modules.instancenorm import InstanceNorm2d
    from lucid.nn.modules.pooling import AdaptiveMaxPool2d

    assert (Threshold, LazyConv2d, PairwiseDistance, Unfold, InstanceNorm2d, AdaptiveMaxPool2d) == (
        nn.Threshold, nn.LazyConv2d, nn.PairwiseDistance, nn.Unfold, nn.InstanceNorm2d, nn.AdaptiveMaxPool2d)


@pytest.mark.parametrize("name", ["LazyConv3d", "LazyConvTranspose3d", "LazyBatchNorm3d", "LazyInstanceNorm3d"])
def test_lazy_3d_modules_take_their_sizes_from_the_first_input(name):
    tm = {"LazyConv3d": lambda: torch.nn.LazyConv3d(4, 3), "LazyConvTranspose3d": lambda: torch.nn.LazyConvTranspose3d(4, 3),
          "LazyBatchNorm3d": lambda: torch.nn.LazyBatchNorm3d(), "LazyInstanceNorm3d": lambda: torch.nn.LazyInstanceNorm3d()}[name]()
    lm = {"LazyConv3d": lambda: nn.LazyConv3d(4, 3), "LazyConvTranspose3d": lambda: nn.LazyConvTranspose3d(4, 3),
          "LazyBatchNorm3d": lambda: nn.LazyBatchNorm3d(), "LazyInstanceNorm3d": lambda: nn.LazyInstanceNorm3d()}[name]()
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5, 5)).astype(np.float32)
    tm(torch.from_numpy(x))
    lm(lucid.tensor(x))
    assert type(lm).__name__ == type(tm).__name__  # became the concrete class
    for (tn, tp), (ln, lp) in zip(tm.state_dict().items(), lm.state_dict().items()):
        assert tn == ln and tuple(tp.shape) == tuple(lp.shape)
    lm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert_close(lm(lucid.tensor(x)), tm(torch.from_numpy(x)), atol=1e-5, rtol=1e-5)


def test_uninitialized_parameters_live_in_nn_parameter():
    from lucid.nn.parameter import UninitializedBuffer, UninitializedParameter, UninitializedTensorMixin, is_lazy

    p = UninitializedParameter()
    assert is_lazy(p) and isinstance(p, UninitializedTensorMixin) and isinstance(p, nn.Parameter)
    assert not is_lazy(nn.Parameter(lucid.ones(2))) and is_lazy(UninitializedBuffer())
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        p.shape
    assert nn.LazyLinear(3).weight.__class__ is UninitializedParameter


def test_container_and_nllloss2d_are_pytorch_legacy_names():
    with pytest.warns(FutureWarning, match="nn.Container"):
        c = nn.Container(a=nn.Linear(2, 2))
    assert list(dict(c.named_children())) == ["a"]
    assert issubclass(nn.NLLLoss2d, nn.NLLLoss) and issubclass(torch.nn.NLLLoss2d, torch.nn.NLLLoss)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4)).astype(np.float32)
    y = np.random.default_rng(2).integers(0, 3, (2, 4, 4))
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        lucid_loss = nn.NLLLoss2d()
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        torch_loss = torch.nn.NLLLoss2d()
    assert_close(lucid_loss(lucid.tensor(x), lucid.tensor(y)), torch_loss(torch.tensor(x), torch.tensor(y)))


# ---------------------------------------------------------------- nn.modules.utils, common_types
@pytest.mark.parametrize("name", ["_single", "_pair", "_triple", "_quadruple"])
@pytest.mark.parametrize("value", [3, (1, 2), [4, 5, 6], 2.5, "ab"])
def test_ntuple_helpers_match_torch(name, value):
    import torch.nn.modules.utils as tu

    import lucid.nn.modules.utils as lu

    assert getattr(lu, name)(value) == getattr(tu, name)(value)
    assert getattr(lu, name).__name__ == name


def test_ntuple_factory_and_reverse_repeat_match_torch():
    import torch.nn.modules.utils as tu

    import lucid.nn.modules.utils as lu

    assert lu._ntuple(5)(7) == tu._ntuple(5)(7)
    assert lu._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert lu._list_with_default([None, 3], [8, 9, 10]) == tu._list_with_default([None, 3], [8, 9, 10])
    assert lu._list_with_default(4, [1, 2]) == 4
    with pytest.raises(ValueError, match="at least 3"):
        lu._list_with_default([1, 2], [5, 6])


def test_consume_prefix_strips_a_wrappers_keys_like_torch():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as t_consume

    from lucid.nn.modules.utils import consume_prefix_in_state_dict_if_present as l_consume

    def make():
        sd = OrderedDict([("module.a", 1), ("module.b.c", 2), ("other", 3)])
        sd._metadata = OrderedDict([("", {}), ("module", {"v": 1}), ("module.b", {"v": 2})])
        return sd

    ts, ls = make(), make()
    t_consume(ts, "module.")
    l_consume(ls, "module.")
    assert list(ls.items()) == list(ts.items()) and list(ls._metadata.items()) == list(ts._metadata.items())


def test_common_types_annotate_a_layer():
    from lucid.nn.common_types import _ratio_2_t, _size_2_t, _size_any_t  # noqa: F401

    def layer(kernel_size: _size_2_t) -> None:
        pass

    assert layer.__annotations__["kernel_size"] == _size_2_t


# ---------------------------------------------------------------- hooks
def test_removable_handle_is_pytorchs():
    from lucid.utils.hooks import RemovableHandle

    hooks, extra = OrderedDict(), OrderedDict()
    h = RemovableHandle(hooks, extra_dict=extra)
    hooks[h.id], extra[h.id] = "hook", "extra"
    with h:
        assert h.id in hooks
    assert h.id not in hooks and h.id not in extra
    h2 = pickle.loads(pickle.dumps(RemovableHandle(hooks)))
    assert h2.id >= h.id and RemovableHandle.next_id > h2.id
    m = nn.Linear(2, 2)
    assert isinstance(m.register_forward_hook(lambda *a: None), RemovableHandle)


def test_global_module_forward_hooks_run_before_the_modules_own():
    from lucid.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    calls = []
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    m[0].register_forward_hook(lambda mod, a, out: calls.append("own"))
    pre = register_module_forward_pre_hook(lambda mod, a: calls.append(("pre", type(mod).__name__)))
    post = register_module_forward_hook(lambda mod, a, out: out * 2 if isinstance(mod, nn.ReLU) else None)
    try:
        y = m(lucid.ones(1, 2))
    finally:
        pre.remove()
        post.remove()
    assert calls == [("pre", "Sequential"), ("pre", "Linear"), "own", ("pre", "ReLU")]
    assert_close(y, 2 * torch.relu(torch.from_numpy(m[0](lucid.ones(1, 2)).detach().numpy())))
    calls.clear()
    m(lucid.ones(1, 2))
    assert calls == ["own"]


def _optimizers(cls_name, **kw):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    tp, lp = torch.nn.Parameter(torch.tensor(w)), nn.Parameter(lucid.tensor(w))
    return (getattr(torch.optim, cls_name)([tp], **kw), tp), (getattr(lucid.optim, cls_name)([lp], **kw), lp)


def test_optimizer_step_hooks_see_and_replace_the_arguments_like_torch():
    logs = {}
    for lib, (opt, p) in zip(["torch", "lucid"], _optimizers("SGD", lr=0.1)):
        log = logs[lib] = []
        p.grad = p.detach() * 0 + 1
        opt.register_step_pre_hook(lambda o, args, kwargs: log.append(("pre", args == (o,), dict(kwargs))))
        opt.register_step_post_hook(lambda o, args, kwargs: log.append(("post", args == (o,), dict(kwargs))))
        h = opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": None}))
        opt.step()
        h.remove()
        opt.step()
    assert logs["lucid"] == logs["torch"]


def test_global_optimizer_hooks_wrap_every_optimizer():
    from lucid.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    (_, _), (opt, p) = _optimizers("Adam", lr=0.1)
    order = []
    opt.register_step_pre_hook(lambda *a: order.append("own pre"))
    opt.register_step_post_hook(lambda *a: order.append("own post"))
    handles = [register_optimizer_step_pre_hook(lambda *a: order.append("global pre")),
               register_optimizer_step_post_hook(lambda *a: order.append("global post"))]
    p.grad = lucid.ones(3, 2)
    try:
        opt.step()
    finally:
        for h in handles:
            h.remove()
    assert order == ["global pre", "own pre", "own post", "global post"]


def test_a_pre_hook_returning_junk_is_an_error_like_torch():
    for opt, p in _optimizers("SGD", lr=0.1):
        p.grad = p.detach() * 0 + 1
        opt.register_step_pre_hook(lambda o, args, kwargs: 5)
        with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\)"):
            opt.step()


def test_optimizer_state_dict_hooks_like_torch():
    results = {}
    for lib, (opt, p) in zip(["torch", "lucid"], _optimizers("Adam", lr=0.1)):
        seen = results[lib] = []
        opt.register_state_dict_pre_hook(lambda o: seen.append("pre"))
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        opt.register_load_state_dict_pre_hook(lambda o, sd: seen.append(sorted(sd)) or
                                              {k: v for k, v in sd.items() if k != "extra"})
        opt.register_load_state_dict_post_hook(lambda o: seen.append("loaded"))
        sd = opt.state_dict()
        seen.append(sd["extra"])
        opt.load_state_dict(sd)
    assert results["lucid"] == results["torch"]


# ---------------------------------------------------------------- utils.data.distributed, types, grad_mode
def test_distributed_sampler_splits_like_torch():
    from torch.utils.data.distributed import DistributedSampler as TSampler

    from lucid.utils.data.distributed import DistributedSampler as LSampler

    data = list(range(11))
    for rank in range(3):
        t = list(TSampler(data, num_replicas=3, rank=rank, shuffle=False))
        assert list(LSampler(data, num_replicas=3, rank=rank, shuffle=False)) == t


def test_types_aliases_are_importable():
    from lucid.types import Device, Number, _size  # noqa: F401

    assert lucid.types.Tensor is lucid.Tensor and lucid.types._int is int


def test_grad_mode_module_holds_the_switches():
    from lucid.autograd.grad_mode import enable_grad, no_grad, set_multithreading_enabled

    x = lucid.ones(2, requires_grad=True)
    with no_grad():
        assert not (x * 2).requires_grad
        with enable_grad():
            assert (x * 2).requires_grad
    with set_multithreading_enabled(False):
        (x * 2).sum().backward()
    assert_close(x.grad, torch.full((2,), 2.0))


# ---------------------------------------------------------------- overrides
class _TensorLike:
    calls = []

    def __init__(self, value):
        self.value = value

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append((func.__name__, types))
        return "handled"


class _SubTensorLike(_TensorLike):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def _api(a, b):
    return "plain"


@pytest.mark.parametrize("lib_name", ["torch", "lucid"])
def test_overrides_dispatch_like_torch(lib_name):
    overrides = importlib.import_module(f"{lib_name}.overrides")
    t = torch.ones(1) if lib_name == "torch" else lucid.ones(1)
    assert not overrides.has_torch_function((t, 1, None))
    assert overrides.has_torch_function((t, _TensorLike(1)))
    assert overrides.has_torch_function_unary(_TensorLike(1)) and overrides.has_torch_function_variadic(1, _TensorLike(2))
    assert overrides.is_tensor_like(t) and overrides.is_tensor_like(_TensorLike(1)) and not overrides.is_tensor_like(3)
    _TensorLike.calls.clear()
    # the subclass is asked first; its NotImplemented passes to the base class
    assert overrides.handle_torch_function(_api, (_TensorLike(1), _SubTensorLike(2)), 1, 2) == "handled"
    assert _TensorLike.calls == [("_api", (_SubTensorLike, _TensorLike))]
    with pytest.raises(TypeError, match="no implementation found for '.*_api' on types that implement "
                                        "__torch_function__"):
        overrides.handle_torch_function(_api, (_SubTensorLike(1),), 1, 2)


# ---------------------------------------------------------------- _dynamo, compiler, compile's keywords
def test_dynamo_settings_are_kept_with_torchs_defaults():
    import torch._dynamo.config as tcfg

    cfg = lucid._dynamo.config
    for name in ["suppress_errors", "cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "verbose", "optimize_ddp", "capture_scalar_outputs", "automatic_dynamic_shapes",
                 "assume_static_by_default", "dynamic_shapes"]:
        assert getattr(cfg, name) == getattr(tcfg, name), name
    before = cfg.suppress_errors
    with cfg.patch(suppress_errors=True, cache_size_limit=64):
        assert cfg.suppress_errors is True and cfg.cache_size_limit == 64
    assert cfg.suppress_errors == before and cfg.cache_size_limit == 8

    @cfg.patch("verbose", True)
    def reads():
        return cfg.verbose

    assert reads() is True and cfg.verbose is False
    cfg.suppress_errors = True
    try:
        assert cfg.get_config_copy()["suppress_errors"] is True
    finally:
        cfg.suppress_errors = before
    lucid._inductor.config.coordinate_descent_tuning = True
    lucid._inductor.config.coordinate_descent_tuning = False
    lucid._dynamo.reset()


def test_compiler_decorators_keep_the_function_and_is_compiling_tells_a_trace():
    seen = []

    @lucid.compiler.disable
    def helper(x):
        seen.append(lucid.compiler.is_compiling())
        return x * 2

    @lucid._dynamo.allow_in_graph
    def other(x):
        return x + 1

    model = nn.Linear(3, 2)

    def fn(x):
        return other(helper(model(x)))

    x = lucid.ones(4, 3)
    with lucid.no_grad():
        expected = fn(x)
        compiled = lucid.compile(fn)
        assert_close(compiled(x), torch.from_numpy(expected.numpy()))
    assert seen[0] is False and True in seen[1:]  # eager call, then the trace
    assert lucid.compiler.is_compiling() is False and lucid._dynamo.is_compiling() is False


def test_torch_compile_keywords_are_accepted():
    model = nn.Linear(3, 2)
    x = lucid.ones(2, 3)
    for kwargs in [dict(mode="max-autotune"), dict(fullgraph=True, dynamic=False), dict(backend="inductor"),
                   dict(options={"triton.cudagraphs": False})]:
        with lucid.no_grad():
            assert_close(lucid.compile(model, **kwargs)(x), torch.from_numpy(model(x).numpy()))
    assert lucid.compile(model, disable=True) is model
    decorated = lucid.compile(mode="reduce-overhead")(model)
    assert isinstance(decorated, lucid.compile.CompiledFunction)


def test_import_torch_brings_the_compiler_settings():
    code = ("import lucid\n"
            "lucid._dynamo.config.suppress_errors = True\n"
            "lucid._inductor.config.coordinate_descent_tuning = True\n"
            "assert lucid.compiler.is_compiling() is False\n"
            "lucid.profiler.profile, lucid.multiprocessing.spawn, lucid.overrides.has_torch_function, lucid.types\n"
            "lucid.autograd.forward_ad.dual_level, lucid.autograd.profiler.record_function\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- multiprocessing
def _square_into_queue(rank, queue, tensor):
    queue.put((rank, tensor * (rank + 1)))


def _fails(rank):
    if rank == 1:
        raise ValueError("rank one fails")


def test_multiprocessing_is_pythons_with_torchs_additions():
    import multiprocessing

    mp = lucid.multiprocessing
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    assert mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    with pytest.raises(AssertionError):
        mp.set_sharing_strategy("nonsense")


def test_tensors_pickle_through_a_queue_with_equal_values():
    t = lucid.arange(12, dtype=lucid.float32).reshape(3, 4)[:, 1:3]  # a strided view
    assert_close(pickle.loads(pickle.dumps(t)), torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:3])
    ctx = lucid.multiprocessing.get_context("spawn")
    queue = ctx.SimpleQueue()
    lucid.multiprocessing.spawn(_square_into_queue, args=(queue, t), nprocs=2)
    got = dict(queue.get() for _ in range(2))
    for rank in range(2):
        assert_close(got[rank], torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:3] * (rank + 1))


def test_spawn_reraises_a_childs_error_with_its_traceback():
    with pytest.raises(lucid.multiprocessing.ProcessRaisedException, match="rank one fails") as info:
        lucid.multiprocessing.spawn(_fails, nprocs=2)
    assert info.value.error_index == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FutureWarning, match="only supports start_method=spawn"):
            lucid.multiprocessing.spawn(_fails, nprocs=1, start_method="fork")


# ---------------------------------------------------------------- top-level legacy names, amp, backends, hub
def test_constants_and_legacy_top_level_names_match_torch():
    for name in ["pi", "e", "inf", "nan", "newaxis"]:
        ours, theirs = getattr(lucid, name), getattr(torch, name)
        assert ours == theirs or (ours != ours and theirs != theirs), name
    assert lucid.is_complex(lucid.ones(1)) is torch.is_complex(torch.ones(1)) is False
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        lucid.is_complex(3)


def test_set_default_tensor_type_sets_the_default_dtype_like_torch():
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            lucid.set_default_tensor_type("torch.DoubleTensor")
        assert lucid.get_default_dtype() == lucid.float64 and lucid.ones(1).dtype == lucid.float64
        with pytest.warns(UserWarning):
            lucid.set_default_tensor_type(lucid.FloatTensor)
        assert lucid.get_default_dtype() == lucid.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point types"):
            lucid.set_default_tensor_type("torch.IntTensor")
        if not lucid.cuda.is_available():
            with pytest.warns(UserWarning), pytest.raises(TypeError, match="not available. Torch not compiled"):
                lucid.set_default_tensor_type("torch.cuda.FloatTensor")
    finally:
        lucid.set_default_dtype(lucid.float32)


def _scaled_matmul(lib):
    class ScaledMatmul(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return (a @ b) * 2

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            ctx.grad_dtype = (grad @ b.t()).dtype
            return grad @ b.t() * 2, a.t() @ grad * 2

    class Passthrough(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            return a @ b

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            return grad @ grad.new_ones(1, 1).expand(grad.shape[1], 4), grad.new_ones(3, 4)

    return ScaledMatmul, Passthrough


def test_custom_fwd_and_bwd_follow_torchs_autocast_rules():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    results = {}
    for name, lib in [("torch", torch), ("lucid", lucid)]:
        scaled, passthrough = _scaled_matmul(lib)
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = scaled.apply(ta.to(lib.bfloat16), tb)  # cast back to float32, autocast off inside
            inner = passthrough.apply(ta, tb)  # runs under autocast: bfloat16 matmul
        out.sum().backward()
        results[name] = (out.dtype, inner.dtype, ta.grad, tb.grad)
    assert str(results["lucid"][0]).split(".")[-1] == str(results["torch"][0]).split(".")[-1] == "float32"
    assert str(results["lucid"][1]).split(".")[-1] == str(results["torch"][1]).split(".")[-1] == "bfloat16"
    assert_close(results["lucid"][2], results["torch"][2], atol=1e-2, rtol=1e-2)
    assert_close(results["lucid"][3], results["torch"][3])
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        lucid.amp.custom_fwd(lambda ctx: None, device_type=None)
    assert lucid.amp.is_autocast_available("cpu") and torch.amp.is_autocast_available("cpu")
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_fwd"):
        lucid.cuda.amp.custom_fwd(lambda ctx, x: x)


def test_backends_answer_for_the_libraries_lucid_does_not_use():
    assert lucid.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT", "NEON")
    if torch.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2"):
        assert lucid.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    for name in ["mkl", "mkldnn", "openmp", "opt_einsum"]:
        assert getattr(lucid.backends, name).is_available() is False
    assert lucid.backends.mkldnn.enabled is True
    with lucid.backends.mkldnn.flags(enabled=False):
        assert lucid.backends.mkldnn.enabled is False
    assert lucid.backends.mkldnn.enabled is True
    assert lucid.backends.opt_einsum.strategy == torch.backends.opt_einsum.strategy == "auto"


def test_hub_downloads_a_checkpoint_once_and_checks_its_hash(tmp_path, monkeypatch):
    import hashlib

    source = tmp_path / "source.pt"
    torch.save({"weight": torch.arange(4.0)}, source)  # a PyTorch checkpoint
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    good = tmp_path / f"net-{digest[:8]}.pth"
    bad = tmp_path / "net-0000abcd.pth"
    source.rename(good)
    bad.write_bytes(good.read_bytes())
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    assert lucid.hub.get_dir() == str(tmp_path / "home" / "hub")
    state = lucid.hub.load_state_dict_from_url(good.as_uri(), check_hash=True, progress=False)
    assert_close(state["weight"], torch.arange(4.0))
    assert (tmp_path / "home" / "hub" / "checkpoints" / good.name).exists()
    good.unlink()  # the cached copy is used from now on
    state = lucid.hub.load_state_dict_from_url(f"file://{good}", check_hash=True, progress=False)
    assert_close(state["weight"], torch.arange(4.0))
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "0000abcd"'):
        lucid.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(tmp_path / "other"), check_hash=True,
                                           progress=False)
    assert not list((tmp_path / "other").iterdir())  # nothing half-written is left
    with pytest.raises(NotImplementedError, match="Lucid loads checkpoints"):
        lucid.hub.load("pytorch/vision", "resnet18")


# ---------------------------------------------------------------- func.stack_module_state, special additions
def test_stack_module_state_stacks_like_torch():
    tmodels = [torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)) for _ in range(3)]
    lmodels = [nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)) for _ in range(3)]
    for lm, tm in zip(lmodels, tmodels):
        lm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    lparams, lbuffers = lucid.func.stack_module_state(lmodels)
    assert list(lparams) == list(tparams) and list(lbuffers) == list(tbuffers)
    for k in tparams:
        assert_close(lparams[k].detach(), tparams[k].detach())
        assert lparams[k].requires_grad and lparams[k].grad_fn is None
    for k in tbuffers:
        assert_close(lbuffers[k], tbuffers[k])
        assert not lbuffers[k].requires_grad
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        lucid.func.stack_module_state([])
    lmodels[1].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        lucid.func.stack_module_state(lmodels)
    with pytest.raises(RuntimeError, match="same class"):
        lucid.func.stack_module_state([nn.Linear(2, 2), nn.Conv1d(2, 2, 1)])


def test_special_ndtr_xlog1py_i0_match_torch():
    x = np.linspace(-9, 6, 31).astype(np.float32)
    assert_close(lucid.special.ndtr(lucid.tensor(x)), torch.special.ndtr(torch.tensor(x)))
    assert_close(lucid.special.ndtr(lucid.tensor([0, 2])), torch.special.ndtr(torch.tensor([0, 2])))
    a = np.array([0, 0, 1, 2, 0, 3], np.float32)
    b = np.array([-1, np.nan, 3, -1, 5, 0.5], np.float32)
    assert_close(lucid.special.xlog1py(lucid.tensor(a), lucid.tensor(b)),
                 torch.special.xlog1py(torch.tensor(a), torch.tensor(b)), equal_nan=True)
    assert_close(lucid.special.i0(lucid.tensor(x)), torch.special.i0(torch.tensor(x)), rtol=1e-5, atol=1e-5)
