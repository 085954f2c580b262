"""GradScaler: loss scaling for float16 training, with torch.amp.GradScaler's
contract and defaults.

The loss is multiplied by ``scale`` before backward so small gradients do
not flush to zero in half precision; ``unscale_`` divides the gradients back
(in float32, or float64 for float64 gradients) and records whether any is
inf/NaN; ``step`` skips the optimizer step when one is; ``update`` halves the scale after an overflow and
doubles it after ``growth_interval`` clean steps. Inside
``fused_step(..., grad_scaler=scaler)`` the same contract runs within the
compiled executable (see lucid.compile).

The numbers live in a C++ ``lucid._C.GradScalerState`` (``_core``), so a
compiled step updates the scale in the same C++ call that runs the step.
"""
import enum
import warnings

import numpy as np

from .. import _C


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _f32(x):
    return float(np.float32(x))


def _core_attr(name):
    return property(lambda self: getattr(self._core, name), lambda self, v: setattr(self._core, name, v))


def unscale_dtype(grad_dtype):
    """The precision gradients are unscaled in: float32, or float64 for
    float64 gradients (PyTorch's opmath type); the compiled step's C++ trace
    makes the same choice."""
    return _C.dtype.float64 if grad_dtype == _C.dtype.float64 else _C.dtype.float32


class GradScaler:
    _enabled = _core_attr("enabled")
    _init_scale = _core_attr("init_scale")
    _scale = _core_attr("scale")  # None until the first use
    _growth_factor = _core_attr("growth_factor")
    _backoff_factor = _core_attr("backoff_factor")
    _growth_interval = _core_attr("growth_interval")
    _init_growth_tracker = _core_attr("init_growth_tracker")
    _growth_tracker = _core_attr("growth_tracker")  # None until the first use

    def __init__(self, device="cpu", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        if not isinstance(growth_interval, int) or growth_interval <= 0:
            raise ValueError("The growth interval must be a positive integer.")
        self._core = _C.GradScalerState(float(init_scale), float(growth_factor), float(backoff_factor),
                                        growth_interval, bool(enabled))
        self._device = str(device)
        if enabled and _C.device(self._device).type != "cpu" and not _C.device_available(self._device):
            # As torch.amp.GradScaler: a scaler for a device that is not there disables itself.
            warnings.warn(f"lucid.amp.GradScaler is enabled, but device '{self._device}' is not available. "
                          "Disabling.", stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        self._init_scale = float(init_scale)
        self._scale = None  # set lazily, like torch
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer = {}

    # ------------------------------------------------------------ accessors
    def is_enabled(self):
        return self._enabled

    def _lazy_init(self):
        self._core.lazy_init()

    def _check_scale_growth_tracker(self, funcname):
        # torch's assertion: unscale_/step/update need a scale() call first
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)

    def get_scale(self):
        return self._core.get_scale()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": OptState.READY, "found_inf": None})

    # -------------------------------------------------------------- scaling
    def scale(self, outputs):
        """outputs * scale (tensors, or nested lists/tuples of them)."""
        if not self._enabled:
            return outputs
        self._lazy_init()
        if isinstance(outputs, _C.Tensor):
            return _C.mul(outputs, _C.full([], self._scale, outputs.dtype, outputs.device))
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer):
        """Divides optimizer's gradients by the scale (in place, float32
        math; float64 for float64 gradients) and records whether any scaled
        gradient was inf/NaN. Once per step."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        st = self._state(optimizer)
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # IEEE's reciprocal, as PyTorch's: a scale backed off to 0 gives inf.
        inv_scale = _f32(1.0 / self._scale) if self._scale else float("inf")
        found = None  # no gradient, no check (torch records none either)
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                found = bool(found)
                # the scaled values are checked, as PyTorch's kernel does: finite
                # ones that unscale to inf/NaN (a scale below 1 or 0) still step
                found = found or not bool(_C.all(_C.isfinite(g)).item())
                unscaled = _C.mul(_C.cast(g, unscale_dtype(g.dtype)), inv_scale)
                p.grad.copy_(_C.cast(unscaled, g.dtype))
        st["found_inf"] = found
        st["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales (if not done yet), then runs optimizer.step(*args) unless
        a gradient was inf/NaN. Returns what optimizer.step returned."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        st = self._state(optimizer)
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if st["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not st["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Updates the scale: `new_scale` if given, else backoff after an
        overflow in any optimizer stepped since the last update, growth after
        growth_interval clean steps."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, _C.Tensor):
                if new_scale.numel() != 1:
                    raise ValueError("new_scale should be a single-element tensor")
                new_scale = new_scale.item()
            self._scale = _f32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(found))
        self._per_optimizer = {}

    def _update_scale(self, found_inf):
        self._core.update(bool(found_inf))  # torch's _amp_update_scale_: float32 scale arithmetic

    # ------------------------------------------------------------ checkpoint
    def state_dict(self):
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = _f32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])
