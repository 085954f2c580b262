"""torch.backends.openmp: Lucid's CPU kernels run on its own thread pool, not OpenMP."""

__all__ = ["is_available"]


def is_available():
    return False
