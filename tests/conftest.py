"""Shared test helpers: PyTorch is the oracle.

- ``to_torch`` / ``to_lucid`` convert tensors through NumPy (bfloat16 through
  float32, which holds every bfloat16 value exactly).
- ``assert_close(actual, expected)`` compares a lucid tensor with a torch
  tensor: shape, dtype, then values with per-dtype default tolerances.
- ``check(fn, *inputs)`` runs ``fn(lib, *tensors)`` with ``lib`` = lucid and
  lib = torch on the same inputs, compares the outputs and then, after a
  backward pass with a random upstream gradient, the input gradients.
- ``gradcheck(fn, *arrays)`` checks lucid's analytic gradients against
  central finite differences in float64.
"""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import lucid  # noqa: E402

# Same thread count on both sides (and reproducible reduction orders).
torch.set_num_threads(max(1, lucid.get_num_threads()))

# LUCID_TEST_DEVICE=cuda runs the suite with the GPU as the default device
# (lucid.set_default_device): every factory and module parameter is made
# there. Tensor.numpy() of device memory raises, as in PyTorch; during a
# test it reads back through the host, so the comparisons work unchanged.
ON_DEVICE = os.environ.get("LUCID_TEST_DEVICE", "cpu") not in ("", "cpu", "metal")
if ON_DEVICE:
    lucid.set_default_device(os.environ["LUCID_TEST_DEVICE"])
    _numpy = lucid.Tensor.numpy

    def _numpy_through_host(self, *a, **k):
        on_host = self.device.type == "cpu" or self.requires_grad  # the latter: numpy()'s own error
        return _numpy(self if on_host else self.cpu(), *a, **k)

# Tests about the host itself, skipped when another device is the default:
# test file, or file::test name (every parametrisation), with the reason.
_ASYNC = ("a bad index or an integer division by zero found by a device kernel is reported at the next "
          "synchronisation (as PyTorch's device-side asserts), not by the call")
_HOST_REPR = "expects the host's representation (no device= suffix, CPU type names, memory shared with NumPy)"
HOST_ONLY = {
    "test_metal_plan.py": "checks the Metal lowering against a CPU reference compiler",
    "test_cpp_api.py": "builds and runs native apps on the CPU",
    "test_errors.py::test_failed_calls_change_nothing": _ASYNC,
    "test_errors.py::test_error_kinds_match_torch[gather index]": _ASYNC,
    "test_compile_function.py::test_errors_of_the_compiled_run_are_raised_not_hidden": _ASYNC,
    "test_compile_train_step.py::test_a_failed_first_call_leaves_no_optimizer_state": _ASYNC,
    "test_nn_layers.py::test_embedding_from_pretrained_and_errors": _ASYNC,
    "test_nn_functional.py::test_loss_errors": _ASYNC,
    "test_ops_index.py::test_index_op_errors": _ASYNC,
    "test_ops_index.py::test_failed_scatter_changes_nothing": _ASYNC,
    "test_hardening.py::test_integer_division_by_zero_raises_like_torch": _ASYNC,
    "test_hardening.py::test_out_of_range_indices_raise_like_torch": _ASYNC,
    "test_hardening.py::test_index_fill_takes_negative_indices_and_checks_its_dim_like_torch": _ASYNC,
    "test_hardening.py::test_a_failing_first_compiled_step_creates_no_optimizer_state": _ASYNC,
    "test_hardening.py::test_a_compiled_step_with_a_bad_target_raises_naming_the_loss_and_changes_nothing": _ASYNC,
    "test_compile_optimizer_state.py::test_a_failed_call_that_traced_leaves_no_state_and_the_next_one_creates_it":
        _ASYNC,
    "test_compile_fusion.py::test_groups_span_unrelated_nodes": "describes the CPU executable's kernels",
    "test_compile_fusion.py::test_profile_reports_every_step": "describes the CPU executable's kernels",
    "test_compile_fused.py::test_compiled_update_is_the_eager_fused_loop_bitwise":
        "counts the CPU's engine_update nodes (a device without that kernel records the rule's ops)",
    "test_nn_module.py::test_to_dtype_keeps_parameter_identity": "moves the module to the host, then feeds it "
                                                                 "a tensor made on the default device",
    "test_tensor_api.py::test_repr_matches_torch": _HOST_REPR,
    "test_tensor_api.py::test_repr_dtype_suffix": _HOST_REPR,
    "test_tensor_api.py::test_repr_large_and_random": _HOST_REPR,
    "test_tensor_api.py::test_repr_empty_and_grad_suffixes": _HOST_REPR,
    "test_tensor_api.py::test_dtype_device_properties": _HOST_REPR,
    "test_tensor_api.py::test_to_variants": _HOST_REPR,
    "test_namespaces.py::test_settings_and_helpers": _HOST_REPR,
    "test_namespaces.py::test_tensor_type_and_legacy_types": _HOST_REPR,
    "test_namespaces.py::test_tensor_device_predicates": _HOST_REPR,
    "test_namespaces.py::test_data_parallel_runs_the_module": "DataParallel's device_ids of a CPU module",
    "test_creation.py::test_numpy_shares_memory_and_checks_grad": _HOST_REPR,
    "test_serialization.py::test_map_location": "loads to the host by default",
    "test_autograd_functional.py::test_gradcheck_matches_torch": _HOST_REPR,
    "test_distributions_transforms.py::test_invalid_parameters_and_values_raise_torchs_errors": _HOST_REPR,
    "test_dtypes_small_int.py::test_names_aliases_and_properties": _HOST_REPR,
    "test_dtypes_small_int.py::test_printing_matches_torch": _HOST_REPR,
    "test_torch_namespace.py::test_predicates_and_identities": _HOST_REPR,
    "test_dtypes_small_int.py::test_fused_step_with_uint8_input_equals_eager":
        "feeds an array from NumPy (host memory, as from_numpy gives in PyTorch) to a module on the default device",
    "test_distributions_sampling.py::test_draws_are_reproducible_and_independent_of_the_thread_split":
        "draws from a CPU generator and splits the work over the host's threads",
    "test_torch_namespace.py::test_python_elementwise_methods_and_resize": "apply_ runs Python on host memory "
                                                                          "(CPU tensors only, as in PyTorch)",
    "test_programs.py": "runs each program beside CPU PyTorch in a process of its own, on the host",
    "test_fuzz.py::test_semantics_probe_runs_every_family": "the probe compares with CPU PyTorch in forked "
                                                            "workers, and CUDA does not survive a fork",
}


# Test files that place every tensor themselves (the CPU is their reference).
EXPLICIT_DEVICES = {"test_cuda.py", "test_cuda_compile.py"}


@pytest.fixture(autouse=True)
def _device_under_test(request):
    """In device mode: the CPU default for the files that pick devices
    themselves; and a synchronisation after each test, so that an error the
    device reports asynchronously (an index out of range) fails the test that
    caused it, not the next one."""
    if not ON_DEVICE:
        yield
        return
    explicit = request.path.name in EXPLICIT_DEVICES
    if explicit:
        lucid.set_default_device("cpu")
    else:
        lucid.Tensor.numpy = _numpy_through_host
    try:
        yield
        lucid.cuda.synchronize()
    finally:
        lucid.Tensor.numpy = _numpy
        if explicit:
            lucid.set_default_device(os.environ["LUCID_TEST_DEVICE"])


# The oracle is PyTorch 2.13 (what CI installs). Where an older PyTorch is
# all a machine has (a GPU machine's own build), the tests of behaviour that
# changed since are skipped, saying which.
_REPR_BIAS = "module reprs name bias= (PyTorch 2.13)"
_ADAGRAD = "Adagrad creates its state at construction (PyTorch 2.13)"
TORCH_2_13 = {  # file::test name, or the start of a parametrised one
    "test_edge_sweep.py::test_edge_arguments_match_torch[clamp]": "clamp with a NaN bound gives NaN (PyTorch 2.13)",
    "test_nn_module.py::test_repr_matches_torch[norms]": _REPR_BIAS,
    "test_nn_module.py::test_repr_matches_torch[encoder_layer]": _REPR_BIAS,
    "test_nn_more.py::test_module_matches_torch[InstanceNorm": _REPR_BIAS,
    "test_nn_more.py::test_module_matches_torch[BatchNorm3d]": _REPR_BIAS,
    "test_nn_more.py::test_instance_norm_affine_and_running_stats": _REPR_BIAS,
    "test_nn_transformer.py::test_decoder_layer_and_stack": _REPR_BIAS,
    "test_nn_layers.py::test_batchnorm_train_then_eval[BatchNorm2d-shape6-kw6]": "norm layers take bias= (PyTorch 2.13)",
    "test_compile_optimizer_state.py::test_fused_step_creates_state_at_the_first_step_taken[Adagrad": _ADAGRAD,
    "test_compile_optimizer_state.py::test_other_compiled_steps_create_state_at_the_first_step_taken[Adagrad": _ADAGRAD,
    "test_optim_api.py::test_adagrad_state_exists_from_construction_like_torch": _ADAGRAD,
    "test_ops_composite.py::test_composite_matches_torch[aminmax]": "aminmax has a derivative (PyTorch 2.13)",
    "test_ops_composite.py::test_more_tensor_methods": "narrow_copy has a derivative (PyTorch 2.13)",
    "test_torch_namespace.py::test_copy_variants[narrow_copy]": "narrow_copy has a derivative (PyTorch 2.13)",
    "test_torch_namespace.py::test_lazy_modules_materialize_as_torch[LazyBatchNorm": _REPR_BIAS,
    "test_torch_namespace.py::test_lazy_modules_materialize_as_torch[LazyInstanceNorm": _REPR_BIAS,
    "test_autograd_functional.py::test_gradcheck_matches_torch[no-input-requires-grad]":
        "gradcheck's message says 'none of them' (PyTorch 2.13)",
    "test_profiler.py::test_schedule_matches_torchs": "ProfilerAction has no DEVICE_STOPPED before PyTorch 2.13",
}
_OLD_TORCH = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13)


def _listed(table, item):
    name = item.path.name
    return table.get(name) or table.get(f"{name}::{item.name}") or table.get(f"{name}::{item.originalname}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        why = ON_DEVICE and _listed(HOST_ONLY, item)
        if why:
            item.add_marker(pytest.mark.skip(reason=f"host only: {why}"))
        test = f"{item.path.name}::{item.name}"
        why = _OLD_TORCH and next((w for k, w in TORCH_2_13.items() if test.startswith(k)), None)
        if why:
            item.add_marker(pytest.mark.skip(reason=f"PyTorch {torch.__version__} is older than the oracle: {why}"))

_DTYPES = [
    ("bool", torch.bool), ("uint8", torch.uint8), ("int8", torch.int8), ("int16", torch.int16), ("int32", torch.int32), ("int64", torch.int64), ("float16", torch.float16),
    ("bfloat16", torch.bfloat16), ("float32", torch.float32), ("float64", torch.float64),
]
LUCID_TO_TORCH = {getattr(lucid, n): t for n, t in _DTYPES}
TORCH_TO_LUCID = {t: getattr(lucid, n) for n, t in _DTYPES}
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]

# (rtol, atol) by dtype, PyTorch's assert_close defaults.
DEFAULT_TOL = {
    torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def to_torch(t, requires_grad=False):
    """A lucid tensor -> a torch tensor with the same values and dtype."""
    t = t.detach()
    if t.dtype == lucid.bfloat16:
        out = torch.from_numpy(np.array(t.float().numpy())).to(torch.bfloat16)
    else:
        out = torch.from_numpy(np.array(t.numpy()))
    return out.requires_grad_(requires_grad)


def to_lucid(t, requires_grad=False):
    """A torch tensor (or NumPy array) -> a lucid tensor with the same values and dtype."""
    if isinstance(t, np.ndarray):
        return lucid.tensor(t, requires_grad=requires_grad)
    t = t.detach()
    if t.dtype == torch.bfloat16:
        out = lucid.tensor(t.float().numpy()).to(lucid.bfloat16)
    else:
        out = lucid.tensor(t.numpy())
    return out.requires_grad_(requires_grad) if requires_grad else out


def _as_numpy(t):
    """Values of a lucid or torch tensor as a float64/int/bool NumPy array."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.double() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()
    t = t.detach()
    return (t.double() if t.dtype in (lucid.float16, lucid.bfloat16) else t).numpy()


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, equal_nan=True, msg=""):
    """`actual` (lucid) matches `expected` (torch) in shape, dtype and value.

    Tuples/lists are compared element-wise; Python numbers against numbers.
    """
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{msg}expected a sequence, got {type(actual).__name__}"
        assert len(actual) == len(expected), f"{msg}length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol, atol, check_dtype, equal_nan, msg=f"{msg}[{i}] ")
        return
    if not isinstance(expected, torch.Tensor):
        assert not isinstance(actual, lucid.Tensor), f"{msg}expected a number, got a tensor"
        np.testing.assert_allclose(actual, expected, rtol=rtol or 1e-7, atol=atol or 0, err_msg=msg)
        return
    assert isinstance(actual, lucid.Tensor), f"{msg}expected a lucid.Tensor, got {type(actual).__name__}"
    assert tuple(actual.shape) == tuple(expected.shape), f"{msg}shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if check_dtype:
        assert LUCID_TO_TORCH[actual.dtype] == expected.dtype, f"{msg}dtype {actual.dtype} != {expected.dtype}"
    d_rtol, d_atol = DEFAULT_TOL.get(expected.dtype, (0, 0))
    a, e = _as_numpy(actual), _as_numpy(expected)
    if a.dtype == bool or e.dtype == bool or e.dtype.kind in "iu":
        if not check_dtype:
            a, e = a.astype(np.float64), e.astype(np.float64)
        else:
            np.testing.assert_array_equal(a, e, err_msg=msg)
            return
    np.testing.assert_allclose(a, e, rtol=d_rtol if rtol is None else rtol, atol=d_atol if atol is None else atol,
                               equal_nan=equal_nan, err_msg=msg)


def rnd(*shape, dtype="float32", low=None, high=None, seed=0):
    """A NumPy array of random numbers: normal floats, or uniform in
    [low, high) when bounds are given; integers uniform in [low, high)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in ("uint8", "int8", "int16", "int32", "int64"):
        lo = (0 if dtype == "uint8" else -5) if low is None else low
        return np.asarray(rng.integers(lo, 6 if high is None else high, size=shape), dtype)
    if low is not None or high is not None:
        x = rng.uniform(0.0 if low is None else low, 1.0 if high is None else high, size=shape)
    else:
        x = rng.standard_normal(shape)
    return np.asarray(x, "float32" if dtype == "bfloat16" else dtype)


def _make(lib, value, dtype, requires_grad):
    """A NumPy array -> a tensor of `lib` (bfloat16 via `dtype`)."""
    if lib is torch:
        t = torch.from_numpy(np.array(value))
        if dtype == "bfloat16":
            t = t.to(torch.bfloat16)
    else:
        t = lucid.tensor(np.array(value))
        if dtype == "bfloat16":
            t = t.to(lucid.bfloat16)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn, *inputs, grad=True, rtol=None, atol=None, grad_rtol=None, grad_atol=None, dtypes=None, seed=1):
    """Runs fn(lib, *args) for lib in (lucid, torch) and compares.

    NumPy arrays in `inputs` become tensors on both sides (floating ones
    require grad when `grad`); anything else is passed through unchanged.
    `dtypes` can name a dtype per input (e.g. "bfloat16", which NumPy lacks).
    Gradients: every floating output is back-propagated with the same random
    upstream gradient on both sides, and each input's .grad is compared
    (including which inputs got none).
    """
    dtypes = dtypes or [None] * len(inputs)
    sides = {}
    for lib in (lucid, torch):
        args, leaves = [], []
        for v, dt in zip(inputs, dtypes):
            if isinstance(v, np.generic):  # arithmetic on 0-d arrays gives NumPy scalars
                v = np.asarray(v)
            if isinstance(v, np.ndarray):
                dt = dt or v.dtype.name
                rg = grad and dt in FLOAT_DTYPES
                t = _make(lib, v, dt, rg)
                args.append(t)
                leaves.append(t if rg else None)
            else:
                args.append(v)
        sides[lib] = (fn(lib, *args), leaves)
    (l_out, l_leaves), (t_out, t_leaves) = sides[lucid], sides[torch]
    assert_close(l_out, t_out, rtol, atol)
    if not grad:
        return l_out
    t_outs = [o for o in _outputs(t_out) if isinstance(o, torch.Tensor) and o.requires_grad]
    l_outs = [o for o, t in zip(_outputs(l_out), _outputs(t_out)) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not t_outs:
        return l_out
    for o in l_outs:
        assert o.requires_grad, "lucid output does not require grad but torch's does"
    rng = np.random.default_rng(seed)
    ups = [rng.standard_normal(tuple(o.shape)).astype(np.float64) for o in t_outs]
    torch.autograd.backward(t_outs, [torch.from_numpy(u).to(o.dtype) for u, o in zip(ups, t_outs)])
    lucid.autograd.backward(l_outs, [lucid.tensor(u).to(o.dtype) for u, o in zip(ups, l_outs)])
    g_rtol = grad_rtol if grad_rtol is not None else (None if rtol is None else rtol)
    g_atol = grad_atol if grad_atol is not None else (None if atol is None else atol)
    for i, (lt, tt) in enumerate(zip(l_leaves, t_leaves)):
        if tt is None:
            continue
        if tt.grad is None:
            assert lt.grad is None, f"input {i}: torch has no gradient, lucid has one"
            continue
        assert lt.grad is not None, f"input {i}: lucid has no gradient"
        # Gradients go through more float32 steps than the forward value.
        r = g_rtol if g_rtol is not None else (1e-4 if tt.dtype == torch.float32 else None)
        assert_close(lt.grad, tt.grad, r, g_atol if g_atol is not None else (1e-5 if r else None),
                     msg=f"grad of input {i}: ")
    return l_out


def assert_fused_step_matches_eager(model, loss_fn, make_optimizer, batches, *, loss_rtol=1e-5, loss_atol=0.0,
                                    rtol=1e-4, atol=1e-6):
    """Trains a copy of `model` eagerly and `model` through fused_step on the
    same batches (tuples (x, *targets)): every step's loss and the final
    parameters agree (to the given tolerances)."""
    import copy

    from lucid.compile import fused_step

    eager = copy.deepcopy(model)
    opt_e, opt_c = make_optimizer(eager.parameters()), make_optimizer(model.parameters())
    step = fused_step(model, loss_fn, opt_c)
    for x, *targets in batches:
        opt_e.zero_grad()
        e = loss_fn(eager(x), *targets)
        e.backward()
        opt_e.step()
        c = step(x, *targets)
        np.testing.assert_allclose(float(c), float(e), rtol=loss_rtol, atol=loss_atol)
    for (n, pe), (_, pc) in zip(eager.named_parameters(), model.named_parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=rtol, atol=atol, err_msg=n)


def gradcheck(fn, *arrays, eps=1e-6, rtol=1e-5, atol=1e-8, directions=3, seed=0):
    """lucid's gradient of fn(*tensors) (float64) against central finite
    differences along random directions: <grad, v> == d/dt f(x + t v) . g."""
    rng = np.random.default_rng(seed)
    xs = [np.asarray(a, dtype=np.float64) for a in arrays]
    leaves = [lucid.tensor(x, requires_grad=True) for x in xs]
    out = fn(*leaves)
    up = rng.standard_normal(tuple(out.shape))
    lucid.autograd.backward([out], [lucid.tensor(up)])
    for i, (x, leaf) in enumerate(zip(xs, leaves)):
        assert leaf.grad is not None, f"input {i} got no gradient"
        g = leaf.grad.numpy()
        for _ in range(directions):
            v = rng.standard_normal(x.shape)
            plus = [lucid.tensor(x + eps * v if j == i else xj) for j, xj in enumerate(xs)]
            minus = [lucid.tensor(x - eps * v if j == i else xj) for j, xj in enumerate(xs)]
            with lucid.no_grad():
                fd = (fn(*plus).numpy() - fn(*minus).numpy()) / (2 * eps)
            numeric = float(np.sum(fd * up))
            analytic = float(np.sum(g * v))
            assert abs(numeric - analytic) <= atol + rtol * max(abs(numeric), abs(analytic), 1.0), (
                f"input {i}: analytic {analytic} vs numeric {numeric}")


@pytest.fixture(autouse=True)
def _seed():
    lucid.manual_seed(0)
    torch.manual_seed(0)
    yield
