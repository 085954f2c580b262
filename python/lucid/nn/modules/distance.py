"""torch.nn.modules.distance's layers (defined with the other extra layers)."""
from .more import CosineSimilarity, PairwiseDistance  # noqa: F401

__all__ = ["PairwiseDistance", "CosineSimilarity"]
