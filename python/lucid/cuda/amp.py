"""lucid.cuda.amp: PyTorch's older spelling of autocast and GradScaler for
the CUDA device (``torch.cuda.amp.autocast()`` is ``torch.amp.autocast("cuda")``).
Without a CUDA device both warn and disable themselves, as in PyTorch."""
import warnings

from .. import amp as _amp
from .. import _C


class autocast(_amp.autocast):
    def __init__(self, enabled=True, dtype=_C.dtype.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """The deprecated ``torch.cuda.amp.custom_fwd``: ``amp.custom_fwd(device_type="cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """The deprecated ``torch.cuda.amp.custom_bwd``: ``amp.custom_bwd(device_type="cuda")``."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _amp.custom_bwd(bwd, device_type="cuda")


__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
