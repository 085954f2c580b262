"""make_step and fused_step: a training step traced once per signature and
run as one executable per call."""
import collections
import threading
import time

from .. import _C
from . import _bridge
from ..amp.grad_scaler import unscale_dtype
from ._trace import as_tensor_args, describe_change, tensor_meta, tracing, uninterruptible

CacheInfo = collections.namedtuple("CacheInfo", "hits misses entries compile_seconds last_miss")


class _Entry:
    """What a compiled signature needs besides its executable."""

    def __init__(self):
        self.executable = None
        self.compile_seconds = 0.0
        self.new_grad_params = []  # params whose new .grad is an output of the run
        self.bound_grad_params = []  # params whose existing .grad is accumulated into, bound per call
        self.scalar_fn = None      # gives the host scalar feeds of one call, in trace order
        self.after_run = []        # host bookkeeping after a successful run (step counts)


class _TracedStep:
    def __init__(self, model, loss_fn, cache_size):
        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        self.model = model
        self.loss_fn = loss_fn
        self._cache = _C.ExecutableCache(cache_size)
        self._entries = {}
        self._last_signature = None
        self._last_miss = None
        self._keys = {}  # fast signature key -> cache key
        # Calls of one step run one at a time: each reads what the previous
        # one wrote (parameters, state, step counts, the cache), and a run
        # releases the GIL. Separate steps still run in parallel.
        self._lock = threading.RLock()

    # -- signature ---------------------------------------------------------
    def _params(self):
        return list(self.model.parameters())

    def _signature(self, args):
        """The signature in readable form (for cache-miss reports)."""
        parts = {
            "inputs": tuple(tensor_meta(a) for a in args),
            "parameters": tuple((id(p), p.requires_grad, tensor_meta(p)) for p in self._params()),
            "training": getattr(self.model, "training", None),
            "loss_fn": id(self.loss_fn),
            "autocast": _autocast_state(),
        }
        parts.update(self._extra_signature())
        return parts

    def _signature_key(self, args):
        """The same facts as _signature, cheaply: checked on every call."""
        params = self._params()
        return (_C.tensor_key(args), tuple(map(id, params)), _C.tensor_key(params),
                getattr(self.model, "training", None), id(self.loss_fn), _C.autocast_state(),
                self._extra_key())

    def _extra_key(self):
        return tuple(self._extra_signature().values())

    def _extra_signature(self):
        return {}

    # -- calls ---------------------------------------------------------------
    def __call__(self, *args):
        if not args:
            raise TypeError("a compiled step needs at least the model input")
        args = as_tensor_args(args)
        with self._lock:
            return self._call(args)

    def _call(self, args):
        fast = self._signature_key(args)
        key = self._keys.get(fast)
        if key is None:  # not seen in this form: the readable signature decides
            key = repr(tuple(self._signature(args).items()))
        exe = self._cache.get(key)
        entry = self._entries.get(key)
        stateless = None  # what to undo if this call compiles and then fails
        if exe is None or entry is None or not exe.bindings_valid():
            parts = self._signature(args)
            self._last_miss = describe_change(self._last_signature, parts) if exe is None else \
                "captured buffers were rebound (e.g. a parameter's .data was replaced)"
            stateless = self._without_state()
            try:
                entry = self._compile(args)
            except BaseException:
                self._drop_state(stateless)
                raise
            # Tracing may create optimizer state: key the entry by the
            # signature it will be looked up with from now on.
            parts = self._signature(args)
            key = repr(tuple(parts.items()))
            fast = self._signature_key(args)
            for evicted in self._cache.put(key, entry.executable, entry.compile_seconds):
                self._entries.pop(evicted, None)
            self._entries[key] = entry
            self._last_signature = parts
        if len(self._keys) > 16 * self._cache.capacity:
            self._keys.clear()  # bounded memo; entries are re-found by their readable key
        self._keys[fast] = key
        with uninterruptible():
            scalars = entry.scalar_fn() if entry.scalar_fn else []
            try:
                outs = entry.executable.run(args, scalars, [p.grad for p in entry.bound_grad_params])
            except BaseException:
                if stateless is not None:
                    # A failed call changes nothing (PyTorch's state stays {}
                    # when a first step fails): the state its trace created
                    # goes, and with it the executable bound to that state.
                    self._drop_state(stateless)
                    self._cache.erase(key)
                    self._entries.pop(key, None)
                raise
            self._after_run(entry, outs)
            for f in entry.after_run:
                f(outs)
        return outs[0]

    def _backward(self, tracer, loss, entry):
        loss.backward()

    def _without_state(self):
        return []

    def _drop_state(self, slots):
        pass

    def _bind_grads(self, tracer, params, entry):
        pass

    def _compile(self, args):
        start = time.perf_counter()
        tracer = _C.GraphTracer()
        device = str(args[0].device)
        sym = [tracer.input(list(a.shape), a.dtype, str(a.device)) for a in args]
        entry = _Entry()
        params = [p for p in self._params() if p.requires_grad]
        saved_grads = {id(p): p.grad for p in params}
        self._bind_grads(tracer, params, entry)
        try:
            with tracing(tracer):
                out = self.model(sym[0])
                loss = self.loss_fn(out, *sym[1:])
                if not isinstance(loss, _C.Tensor) or loss.numel() != 1:
                    raise RuntimeError("loss_fn must return a scalar tensor to compile a training step")
                self._prepare_grads(params)
                self._backward(tracer, loss, entry)
                tracer.output(loss.detach())
                self._trace_update(tracer, params, saved_grads, entry)
        finally:
            for p in params:
                p.grad = saved_grads[id(p)]
        entry.executable = tracer.compile(device)
        entry.compile_seconds = time.perf_counter() - start
        return entry

    def cache_info(self):
        return CacheInfo(self._cache.hits, self._cache.misses, len(self._cache), self._cache.compile_seconds,
                         self._last_miss)

    @property
    def cache_size(self):
        return self._cache.capacity

    @cache_size.setter
    def cache_size(self, n):
        self._cache.capacity = n


def _autocast_state():
    try:
        from ..amp import autocast_state
    except ImportError:
        return None
    return autocast_state()


class MakeStep(_TracedStep):
    """Forward + loss + backward as one executable; gradients land in .grad
    as loss.backward() would leave them (accumulating into existing ones)."""

    def __init__(self, model, loss_fn, cache_size=8):
        super().__init__(model, loss_fn, cache_size)

    def _bind_grads(self, tracer, params, entry):
        # An existing .grad is accumulated into in place; zero_grad() and the
        # runs that create gradients replace the tensor between calls, so the
        # buffer is bound on each call rather than at trace time.
        for p in params:
            if p.grad is not None:
                tracer.bind_per_call(p.grad)
                entry.bound_grad_params.append(p)

    def _extra_signature(self):
        # Whether each parameter already has a gradient decides accumulate vs create.
        return {"grads": tuple(None if p.grad is None else tensor_meta(p.grad) for p in self._params())}

    def _prepare_grads(self, params):
        pass  # existing .grad buffers are captured and accumulated into in place

    def _trace_update(self, tracer, params, saved_grads, entry):
        # A parameter that had no .grad gets a new one, returned by the run;
        # an existing .grad was accumulated into in place (a writeback).
        for p in params:
            if saved_grads[id(p)] is None and p.grad is not None:
                tracer.output(p.grad)
                entry.new_grad_params.append(p)

    def _after_run(self, entry, outs):
        for p, g in zip(entry.new_grad_params, outs[1:]):
            p.grad = g


def make_step(model, loss_fn, *, cache_size=8):
    """Compiles ``model`` + ``loss_fn`` + backward into one executable.

    ``step(x, *targets)`` returns the loss and leaves gradients in ``.grad``
    exactly as ``loss_fn(model(x), *targets).backward()`` would; the caller
    drives the optimizer.
    """
    return MakeStep(model, loss_fn, cache_size)


class FusedStep(_TracedStep):
    """Forward + loss + backward + optimizer update as one executable."""

    def __init__(self, model, loss_fn, optimizer, grad_scaler=None, cache_size=8):
        super().__init__(model, loss_fn, cache_size)
        self.grad_scaler = grad_scaler
        self._rules = _bridge.rules(optimizer)
        model_params = {id(p) for p in model.parameters()}
        for _, _, p in _bridge.param_slots(optimizer):
            if id(p) not in model_params:
                raise RuntimeError("fused_step: the optimizer holds a parameter that is not one of the model's "
                                   "parameters; pass the model that owns every optimized parameter")
        self.optimizer = optimizer

    def _extra_signature(self):
        opt = self.optimizer
        return {
            "groups": tuple(tuple(id(p) for p in g["params"]) for g in opt.param_groups),
            # validates the hyper-parameters before anything runs
            "optimizer": self._rules.prepare(),
            "grad_scaler": self._scaling(),
        }

    def _scaling(self):
        return self.grad_scaler is not None and self.grad_scaler.is_enabled()

    def _without_state(self):
        return self._rules.without_state()

    def _drop_state(self, slots):
        self._rules.drop_state(slots)

    def _backward(self, tracer, loss, entry):
        if not self._scaling():
            loss.backward()
            return
        # The scale is a feed: a changing scale never recompiles.
        self.grad_scaler._lazy_init()
        scale = tracer.feed([], _C.dtype.float32)
        _C.mul(loss, _C.cast(scale, loss.dtype)).backward()
        entry.scale_tensor = scale

    def _prepare_grads(self, params):
        # The eager loop starts from zero_grad(): every gradient is fresh.
        for p in params:
            p.grad = None

    def _trace_update(self, tracer, params, saved_grads, entry):
        rules = self._rules
        slots, grads = [], []
        for gi, i, p in _bridge.param_slots(self.optimizer):
            g = p.grad
            if g is None or not p.requires_grad:
                continue  # no gradient: skipped entirely, as in the eager step
            slots.append((gi, i, p))
            grads.append(g)
        scaling = self._scaling()
        if scaling:
            # Unscale (in float32, float64 for float64 grads) and flag any inf/NaN; the update below is
            # then made conditional on the flag.
            # 1/scale rounded to float32 from float64, as the eager scaler's inv_scale
            inv = _C.cast(_C.div(1.0, _C.cast(entry.scale_tensor, _C.dtype.float64)), _C.dtype.float32)
            unscaled = [_C.mul(_C.cast(g, unscale_dtype(g.dtype)), _C.cast(inv, unscale_dtype(g.dtype)))
                        for g in grads]
            flags = [_C.any(_C.logical_not(_C.isfinite(u)), None, False) for u in unscaled]
            found_inf = flags[0]
            for f in flags[1:]:
                found_inf = _C.logical_or(found_inf, f)
            grads = [_C.cast(u, g.dtype) for u, g in zip(unscaled, grads)]
            before = tracer.writebacks()
        for (gi, i, p), g in zip(slots, grads):
            rules.emit(tracer, gi, i, p, g)
        positions = [(gi, i) for gi, i, _ in slots]
        scaler = self.grad_scaler
        if scaling:
            tracer.guard_writebacks_since(before, found_inf)
            tracer.output(found_inf)
            # the scale feed was made first (in backward), then the update's
            entry.scalar_fn = lambda: [scaler.get_scale()] + rules.host_scalars(positions)
        else:
            entry.scalar_fn = lambda: rules.host_scalars(positions)
        entry.after_run.append(lambda outs: self._finish(rules, positions, outs, scaling))

    def _finish(self, rules, positions, outs, scaling):
        if not scaling:
            rules.advance(positions)
            return
        found_inf = bool(outs[1].item())
        if not found_inf:  # an overflow step does not count, as with scaler.step(opt)
            rules.advance(positions)
        self.grad_scaler._update_scale(found_inf)

    def _after_run(self, entry, outs):
        pass


def fused_step(model, loss_fn, optimizer, grad_scaler=None, *, cache_size=8):
    """Compiles the whole training step into one executable.

    ``step = fused_step(model, loss_fn, opt)`` then ``loss = step(x, *targets)``
    behaves like ``opt.zero_grad(); loss = loss_fn(model(x), *targets);
    loss.backward(); opt.step()`` — parameters and optimizer state are updated
    in place and the loss is returned — but runs as one executable per call.
    Hyper-parameters are read from ``optimizer.param_groups`` on every call.

    >>> import lucid, lucid.nn as nn, lucid.nn.functional as F, lucid.optim
    >>> from lucid.compile import fused_step
    >>> model = nn.Linear(4, 2)
    >>> opt = lucid.optim.SGD(model.parameters(), lr=0.1)
    >>> step = fused_step(model, F.mse_loss, opt)
    >>> loss = step(lucid.ones(3, 4), lucid.zeros(3, 2))
    >>> loss.shape
    ()
    """
    return FusedStep(model, loss_fn, optimizer, grad_scaler, cache_size)
