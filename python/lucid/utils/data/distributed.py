"""torch.utils.data.distributed: the sampler that splits a dataset among replicas."""
from .sampler import DistributedSampler  # noqa: F401

__all__ = ["DistributedSampler"]
