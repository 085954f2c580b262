"""Compiled steps called from several threads at once give the serial
results. A run releases the GIL, so the threads really overlap in the core.

Every call feeds the same batch, so the serial result does not depend on the
order in which the threads' calls happen: after T threads x N calls the
parameters, optimizer state and step counts must equal those of T * N calls
in a row, and the losses must be the serial losses (as a multiset)."""
import threading

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
import lucid.optim
from lucid.compile import compile_optimizer, fused_step, make_step

THREADS, CALLS = 4, 6

# Calls of one compiled step (or compiled optimizer) run one at a time: each
# reads what the previous wrote (parameters, optimizer state, step counts,
# .grad, the executable cache), while the run itself releases the GIL. Before
# they were serialised, overlapping calls read the same step count (Adam's bias
# corrections), traced concurrently over the same parameters on a first call,
# and each created .grad where all but one sum was lost.


def _model(seed=0):
    lucid.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 256), nn.Tanh(), nn.Linear(256, 5))  # runs long enough to overlap


def _batch(seed=1):
    rng = np.random.default_rng(seed)
    return lucid.tensor(rng.standard_normal((64, 16)).astype("float32")), lucid.tensor(rng.integers(0, 5, 64))


def _optimizer(kind, params):
    if kind == "sgd":
        return lucid.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3)
    return lucid.optim.Adam(params, lr=1e-2)


def _concurrently(fn, threads=THREADS, calls=CALLS):
    """Runs fn() calls times in each of `threads` threads, started together;
    returns every result and re-raises the first error."""
    results, errors = [], []
    barrier = threading.Barrier(threads)
    lock = threading.Lock()

    def work():
        try:
            barrier.wait()
            for _ in range(calls):
                r = fn()
                with lock:
                    results.append(r)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return results


def _params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def _state(opt):
    out = []
    for p in (p for g in opt.param_groups for p in g["params"]):
        for k, v in sorted(opt.state.get(p, {}).items()):
            out.append((k, v.detach().numpy().copy() if isinstance(v, lucid.Tensor) else v))
    return out


def _assert_same(serial, concurrent, what):
    assert len(serial) == len(concurrent), what
    for i, (a, b) in enumerate(zip(serial, concurrent)):
        if isinstance(a, tuple):
            assert a[0] == b[0], f"{what}: state key {a[0]} vs {b[0]}"
            a, b = a[1], b[1]
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=f"{what} {i}")


def _run_fused(kind, warm, threaded):
    model = _model()
    opt = _optimizer(kind, model.parameters())
    step = fused_step(model, F.cross_entropy, opt)
    x, y = _batch()
    losses = []
    if warm:
        losses.append(step(x, y).item())
    call = lambda: step(x, y).item()  # noqa: E731
    losses += _concurrently(call) if threaded else [call() for _ in range(THREADS * CALLS)]
    return sorted(losses), _params(model), _state(opt)


@pytest.mark.parametrize("kind,warm", [("sgd", True), ("adam", True), ("sgd", False), ("adam", False)],
                         ids=["sgd-compiled-first", "adam-compiled-first", "sgd-first-call-in-threads",
                              "adam-first-call-in-threads"])
def test_fused_step_from_several_threads_equals_serial(kind, warm):
    serial = _run_fused(kind, warm, threaded=False)
    concurrent = _run_fused(kind, warm, threaded=True)
    np.testing.assert_array_equal(serial[0], concurrent[0], err_msg="losses")
    _assert_same(serial[1], concurrent[1], "parameter")
    _assert_same(serial[2], concurrent[2], "optimizer state")


def _run_make_step(threaded, warm):
    model = _model()
    step = make_step(model, F.cross_entropy)
    x, y = _batch()
    # The first call creates the .grad buffers; later calls accumulate into them.
    losses = [step(x, y).item()] if warm else []
    call = lambda: step(x, y).item()  # noqa: E731
    losses += _concurrently(call) if threaded else [call() for _ in range(THREADS * CALLS)]
    return sorted(losses), [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("warm", [True, False],
                         ids=["grads-exist", "first-call-in-threads"])
def test_make_step_from_several_threads_equals_serial(warm):
    serial = _run_make_step(threaded=False, warm=warm)
    concurrent = _run_make_step(threaded=True, warm=warm)
    np.testing.assert_array_equal(serial[0], concurrent[0], err_msg="losses")
    # Accumulated gradients: T * N + 1 identical additions, in some order.
    for a, b in zip(serial[1], concurrent[1]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def _run_compiled_optimizer(kind, threaded):
    model = _model()
    opt = compile_optimizer(_optimizer(kind, model.parameters()))
    x, y = _batch()
    F.cross_entropy(model(x), y).backward()  # fixed gradients: every step sees the same
    opt.step()
    call = lambda: opt.step()  # noqa: E731
    _concurrently(call) if threaded else [call() for _ in range(THREADS * CALLS)]
    return _params(model), _state(opt)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_compile_optimizer_from_several_threads_equals_serial(kind):
    serial = _run_compiled_optimizer(kind, threaded=False)
    concurrent = _run_compiled_optimizer(kind, threaded=True)
    _assert_same(serial[0], concurrent[0], "parameter")
    _assert_same(serial[1], concurrent[1], "optimizer state")


def test_separate_steps_in_separate_threads_equal_their_serial_runs():
    """Each thread trains its own model (traced, compiled and run while the
    others do the same): the core's shared pieces (kernel table, thread pool,
    executables, the thread-local tracer) must not mix them up."""

    def setup(seed):  # models are made up front: initialisation draws from the global generator
        model = _model(seed)
        return model, _optimizer("sgd" if seed % 2 else "adam", model.parameters()), _batch(seed + 10)

    def train(model, opt, batch):
        step = fused_step(model, F.cross_entropy, opt)
        losses = [step(*batch).item() for _ in range(CALLS)]
        return losses, _params(model)

    serial = [train(*setup(s)) for s in range(THREADS)]
    jobs = [setup(s) for s in range(THREADS)]
    results = [None] * len(jobs)
    errors = []
    barrier = threading.Barrier(len(jobs))

    def work(i):
        try:
            barrier.wait()
            results[i] = train(*jobs[i])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    for (sl, sp), (cl, cp) in zip(serial, results):
        np.testing.assert_array_equal(sl, cl)
        _assert_same(sp, cp, "parameter")
