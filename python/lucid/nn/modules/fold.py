"""torch.nn.modules.fold's layers (defined with the convolutions)."""
from .conv import Fold, Unfold  # noqa: F401

__all__ = ["Fold", "Unfold"]
