"""torch.backends.opt_einsum: whether einsum orders its contractions with
the opt_einsum package. Lucid's einsum contracts left to right and does not
use it: ``is_available()`` is False; ``enabled`` and ``strategy`` are kept."""

__all__ = ["is_available", "get_opt_einsum"]

enabled = True
strategy = "auto"


def is_available():
    return False


def get_opt_einsum():
    return None
