"""Backend flags, as ``torch.backends`` names them."""
from . import cuda  # noqa: F401
