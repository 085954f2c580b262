"""Mixed precision: autocast and GradScaler (torch.amp's contract)."""
from .autocast_mode import (autocast, autocast_state, custom_bwd, custom_fwd, get_autocast_dtype,  # noqa: F401
                            is_autocast_available, is_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "autocast_state", "custom_bwd", "custom_fwd", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_enabled"]
