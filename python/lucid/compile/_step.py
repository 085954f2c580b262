"""make_step, fused_step and train_step: a training step traced once per
signature and run as one executable per call.

Each is a thin subclass of ``lucid._C.CompiledStep``, the one C++ object
that checks a call's signature, keeps the executable cache, feeds the
hyper-parameters, runs the executable with the GIL released and does the
bookkeeping (step counts, the GradScaler's scale) before it returns. Python
only runs the user's model and loss under the tracer when a signature is
seen for the first time.
"""
import collections

from .. import _C

CacheInfo = collections.namedtuple("CacheInfo", "hits misses entries compile_seconds last_miss")


class _CompiledStep(_C.CompiledStep):
    def cache_info(self):
        """Hits, misses, entries, total compile seconds, and why the last
        compile happened (in your terms: ``input 0 shape [64, 784] -> [32, 784]``)."""
        return CacheInfo(*self._cache_counters())


def _scalar_loss(loss, who):
    if not isinstance(loss, _C.Tensor) or loss.numel() != 1:
        raise RuntimeError(f"{who} must return a scalar tensor to compile a training step")
    return loss


def _model_and_loss(model, loss_fn):
    """The forward of make_step/fused_step: ``loss_fn(model(x), *targets)``.
    A trace with a different number of arguments than the ones that worked
    says so when it fails (an extra argument otherwise surfaces as whatever
    loss_fn makes of it)."""
    traced = set()

    def forward(args):
        try:
            loss = _scalar_loss(loss_fn(model(args[0]), *args[1:]), "loss_fn")
        except Exception as e:
            if traced and len(args) not in traced:
                counts = " or ".join(str(n) for n in sorted(traced))
                raise type(e)(f"the compiled step was called with {len(args)} arguments (the model input and "
                              f"{len(args) - 1} targets for loss_fn), but earlier calls had {counts}; tracing the "
                              f"new call failed: {e}") from e
            raise
        traced.add(len(args))
        return [loss]

    return forward


def _check_loss_fn(loss_fn):
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")


def _check_optimizer(optimizer, who):
    if not getattr(optimizer, "_uses_engine", False) or not getattr(optimizer, "_engines", None):
        raise TypeError(f"{who}: {type(optimizer).__name__} has no update rule that can be compiled")


def _scaler(grad_scaler):
    if grad_scaler is not None and not hasattr(grad_scaler, "_core"):
        raise TypeError(f"grad_scaler must be a lucid.amp.GradScaler, got {type(grad_scaler).__name__}")
    return grad_scaler


def _clipping(clip_grad_norm, norm_type, clip_grad_value, accumulate):
    if accumulate is None or int(accumulate) != accumulate or accumulate < 1:
        raise ValueError(f"accumulate must be a positive number of micro-batches, got {accumulate!r}")
    norm = None if clip_grad_norm is None else float(clip_grad_norm)
    value = None if clip_grad_value is None else float(clip_grad_value)
    return dict(clip_norm=norm, norm_type=float(norm_type), clip_value=value, accumulate=int(accumulate))


class MakeStep(_CompiledStep):
    """Forward + loss + backward as one executable; gradients land in .grad
    as loss.backward() would leave them (accumulating into existing ones)."""

    def __init__(self, model, loss_fn, cache_size=8):
        _check_loss_fn(loss_fn)
        super().__init__(_C.StepMode.gradients, _model_and_loss(model, loss_fn), model, None, None, cache_size)
        self.model = model
        self.loss_fn = loss_fn


def make_step(model, loss_fn, *, cache_size=8):
    """Compiles ``model`` + ``loss_fn`` + backward into one executable.

    ``step(x, *targets)`` returns the loss and leaves gradients in ``.grad``
    exactly as ``loss_fn(model(x), *targets).backward()`` would; the caller
    drives the optimizer.
    """
    return MakeStep(model, loss_fn, cache_size)


class FusedStep(_CompiledStep):
    """Forward + loss + backward + optimizer update as one executable."""

    def __init__(self, model, loss_fn, optimizer, grad_scaler=None, cache_size=8, clip_grad_norm=None, norm_type=2.0,
                 clip_grad_value=None, accumulate=1):
        _check_loss_fn(loss_fn)
        _check_optimizer(optimizer, "fused_step")
        model_params = {id(p) for p in model.parameters()}
        for group in optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in model_params:
                    raise RuntimeError("fused_step: the optimizer holds a parameter that is not one of the model's "
                                       "parameters; pass the model that owns every optimized parameter")
        clip = _clipping(clip_grad_norm, norm_type, clip_grad_value, accumulate)
        super().__init__(_C.StepMode.update, _model_and_loss(model, loss_fn), model, optimizer, _scaler(grad_scaler),
                         cache_size, single_result=clip["clip_norm"] is None, **clip)
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.grad_scaler = grad_scaler


class _FusedStepWithNorm(FusedStep):
    """A fused step clipping by norm: returns (loss, total_norm)."""

    def __call__(self, *args):
        loss, norm = _C.CompiledStep.__call__(self, *args)
        return loss, norm


def fused_step(model, loss_fn, optimizer, grad_scaler=None, *, clip_grad_norm=None, norm_type=2.0,
               clip_grad_value=None, accumulate=1, cache_size=8):
    """Compiles the whole training step into one executable.

    ``step = fused_step(model, loss_fn, opt)`` then ``loss = step(x, *targets)``
    behaves like ``opt.zero_grad(); loss = loss_fn(model(x), *targets);
    loss.backward(); opt.step()`` — parameters and optimizer state are updated
    in place and the loss is returned — but runs as one executable per call.
    Hyper-parameters are read from ``optimizer.param_groups`` on every call.

    With ``clip_grad_norm=max_norm`` the gradients are clipped by their total
    norm before the update (``nn.utils.clip_grad_norm_``, after unscaling with
    a GradScaler) and the step returns ``(loss, total_norm)``;
    ``clip_grad_value`` clamps them (``clip_grad_value_``). With
    ``accumulate=k`` every argument carries k micro-batches along dim 0:
    the gradients of ``loss_i / k`` are summed before one update, and the
    mean of the k losses is returned. See :func:`train_step` for steps that
    are not ``loss_fn(model(x), *targets)``.

    >>> import lucid, lucid.nn as nn, lucid.nn.functional as F, lucid.optim
    >>> from lucid.compile import fused_step
    >>> model = nn.Linear(4, 2)
    >>> opt = lucid.optim.SGD(model.parameters(), lr=0.1)
    >>> step = fused_step(model, F.mse_loss, opt)
    >>> loss = step(lucid.ones(3, 4), lucid.zeros(3, 2))
    >>> loss.shape
    lucid.Size([])
    """
    cls = FusedStep if clip_grad_norm is None else _FusedStepWithNorm
    return cls(model, loss_fn, optimizer, grad_scaler, cache_size, clip_grad_norm, norm_type, clip_grad_value,
               accumulate)


class TrainStep(_CompiledStep):
    """A user's step function (batch -> loss, or (loss, *outputs)) with
    backward, clipping, accumulation and the optimizer update, as one
    executable."""

    def __init__(self, fn, optimizer, grad_scaler=None, cache_size=8, clip_grad_norm=None, norm_type=2.0,
                 clip_grad_value=None, accumulate=1, model=None):
        if not callable(fn):
            raise TypeError(f"train_step needs a callable, got {type(fn).__name__}")
        _check_optimizer(optimizer, "train_step")
        clip = _clipping(clip_grad_norm, norm_type, clip_grad_value, accumulate)
        shape = self._shape = {}
        name = getattr(fn, "__name__", "the step function")
        # An extra that is (a view of) a parameter or buffer would otherwise
        # come back as memory a later write overwrites: the update, or with
        # accumulation the next micro-batch's in-place update of a buffer
        # (graph soak seed 5023413: every micro-batch's extra read the last
        # running_var). A copy holds the value fn computed; the executable
        # drops the copies nothing writes over.
        def own(t):
            return t.clone()

        def forward(args):
            out = fn(*args)
            if isinstance(out, (tuple, list)):
                if not out or not all(isinstance(t, _C.Tensor) for t in out):
                    raise TypeError(f"{name} must return the loss or a tuple (loss, *tensors), got "
                                    f"{type(out).__name__} of {[type(t).__name__ for t in out]}")
                shape["kind"] = type(out)
                shape["n"] = len(out)
                return [_scalar_loss(out[0], name), *(own(t) for t in out[1:])]
            shape["kind"] = None
            return [_scalar_loss(out, name)]

        super().__init__(_C.StepMode.update, forward, model, optimizer, _scaler(grad_scaler), cache_size,
                         single_result=False, **clip)
        self.fn = fn
        self.model = model
        self.optimizer = optimizer
        self.grad_scaler = grad_scaler
        self._with_norm = clip["clip_norm"] is not None

    def __call__(self, *args):
        outs = _C.CompiledStep.__call__(self, *args)
        kind = self._shape["kind"]
        if self._with_norm:
            *outs, norm = outs
        result = outs[0] if kind is None else kind(outs)
        return (result, norm) if self._with_norm else result


def train_step(fn, optimizer, grad_scaler=None, *, clip_grad_norm=None, norm_type=2.0, clip_grad_value=None,
               accumulate=1, model=None, cache_size=8):
    """Compiles a training step written as a function of the batch.

    ``fn(*batch)`` returns the loss, or a tuple whose first element is the
    loss and whose others are tensors to hand back (logits for a metric, an
    RNN's hidden state for the next call: they come back detached, as
    ``repackage_hidden`` would leave them, with the values ``fn`` computed:
    one that is a parameter or a view of one holds its value before the
    update). ``step = train_step(fn, opt)``
    then ``step(*batch)`` behaves like ``opt.zero_grad(); out = fn(*batch);
    loss.backward(); opt.step()`` and returns what ``fn`` returned, as one
    executable per call. The parameters are the optimizer's.

    ``grad_scaler``, ``clip_grad_norm``/``norm_type``/``clip_grad_value``
    and ``accumulate`` work as in :func:`fused_step` (with ``clip_grad_norm``
    the step returns ``(result, total_norm)``; with ``accumulate=k`` extra
    outputs are stacked along a new first dimension). Pass ``model=`` when
    the model switches between ``train()`` and ``eval()``: its ``training``
    flag is then part of the signature.

    >>> import lucid, lucid.nn as nn, lucid.nn.functional as F, lucid.optim
    >>> from lucid.compile import train_step
    >>> model = nn.Linear(4, 2)
    >>> opt = lucid.optim.SGD(model.parameters(), lr=0.1)
    >>> def step_fn(x, y):
    ...     logits = model(x)
    ...     return F.cross_entropy(logits, y), logits
    >>> step = train_step(step_fn, opt, clip_grad_norm=1.0)
    >>> (loss, logits), norm = step(lucid.ones(3, 4), lucid.tensor([0, 1, 1]))
    >>> logits.shape, norm.shape
    (lucid.Size([3, 2]), lucid.Size([]))
    """
    return TrainStep(fn, optimizer, grad_scaler, cache_size, clip_grad_norm, norm_type, clip_grad_value, accumulate,
                     model)
