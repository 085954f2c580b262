"""The random source of samplers and random_split.

Index permutations are drawn on the host with NumPy's PCG64 (a C loop, no
per-index Python). A `Generator` makes an order reproducible on its own; with
no generator, each draw takes a fresh seed from Lucid's global RNG, so
`lucid.manual_seed(s)` reproduces it, as `torch.manual_seed` does for PyTorch.
"""
import numbers

import numpy as np

from ... import _C

# PyTorch's default seed for a fresh torch.Generator().
_DEFAULT_SEED = 67280421310721


def _check_seed(seed):
    if isinstance(seed, _C.Tensor):
        seed = seed.item()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise ValueError(f"seed must fit in 64 bits, got {seed}")
    return seed % 2 ** 64


class Generator:
    """A seedable random source for `RandomSampler`, `DataLoader(shuffle=True)`
    and `random_split`: `Generator().manual_seed(0)`."""

    def __init__(self, device="cpu"):
        self.device = _C.device(str(device))
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        self._seed = _check_seed(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        """Re-seeds from OS entropy and returns the new seed."""
        s = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        self.manual_seed(s)
        return s

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self

    def __repr__(self):
        return f"Generator(device='{self.device}', initial_seed={self._seed})"


def _global_seed():
    # Two uniform doubles from the global RNG give ~64 seed bits.
    u = _C.rand([2], _C.dtype.float64, "cpu").numpy()
    return (int(u[0] * 2 ** 32) << 32) ^ int(u[1] * 2 ** 32)


def as_generator(generator):
    """None -> None (draw from the global RNG), an int -> a seeded Generator."""
    if generator is None or isinstance(generator, Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return Generator().manual_seed(generator)
    raise TypeError(f"generator must be a lucid.utils.data.Generator, an int seed or None, "
                    f"got {type(generator).__name__}")


def rng(generator):
    """The NumPy generator to draw from for one use."""
    if generator is None:
        return np.random.Generator(np.random.PCG64(_global_seed()))
    return generator._rng


def randperm(n, generator=None):
    return rng(generator).permutation(n)
