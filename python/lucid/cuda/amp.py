"""lucid.cuda.amp: PyTorch's older spelling of autocast and GradScaler for
the CUDA device (``torch.cuda.amp.autocast()`` is ``torch.amp.autocast("cuda")``).
Without a CUDA device both warn and disable themselves, as in PyTorch."""
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


__all__ = ["GradScaler", "autocast"]
