"""torch.nn.modules.channelshuffle's layer (defined with the other extra layers)."""
from .more import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
