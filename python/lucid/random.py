"""torch.random: the global generator's functions, and fork_rng."""
import contextlib

from . import _C
from ._settings import get_rng_state, seed, set_rng_state
from .utils.data._random import Generator

manual_seed = _C.manual_seed
initial_seed = _C.initial_seed

__all__ = ["Generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Within the block the global stream may be reseeded or drawn from
    freely; on exit it is where it was on entry. Lucid draws every device's
    numbers from that one stream, so ``devices`` selects nothing more."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
