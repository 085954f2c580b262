"""torch.backends.mkl: Lucid's CPU BLAS is OpenBLAS (Accelerate on macOS), not MKL."""

__all__ = ["is_available"]


def is_available():
    return False
