"""The backward graph's nodes (``Tensor.grad_fn``), as torch.autograd.graph."""
from .. import _C

Node = _C.Node

__all__ = ["Node"]
