"""Bags and sequences: embedding_bag (reductions over bags of embedding rows)
and ctc_loss (the connectionist temporal classification loss), composed of
lucid ops so that each differentiates and traces.

Bag boundaries come from `offsets` as data, never read on the host: each
index's bag number is a cumulative sum of the offsets' marks, the sums and
counts are index_adds, and a bag's first maximum is found by a segmented
scan of log2(N) steps.
"""
import math

from .. import _C
from . import functional as F
from .functional import _INF, _check_tensor, _reduce

__all__ = ["embedding_bag"]


# ------------------------------------------------------------ embedding_bag
def _bag_first_max(values, seg):
    """values [N, D] (-inf where excluded), seg [N] contiguous bag numbers ->
    [N, D] positions of the first maximum of each element's bag up to that
    element (a Hillis-Steele scan: the state of i - s only ever holds its own
    bag's elements, and bags are contiguous)."""
    n = values.shape[0]
    pos = _C.expand(_C.unsqueeze(_C.arange(0, n, 1, _C.dtype.int64, values.device), 1), list(values.shape))
    s = 1
    while s < n:
        prev_v = _C.pad(_C.narrow(values, 0, 0, n - s), [0, 0, s, 0], -_INF)
        prev_p = _C.pad(_C.narrow(pos, 0, 0, n - s), [0, 0, s, 0], 0)
        prev_seg = _C.pad(_C.narrow(seg, 0, 0, n - s), [s, 0], -2)
        take = _C.logical_and(_C.unsqueeze(_C.eq(prev_seg, seg), 1), _C.ge(prev_v, values))
        values = _C.where(take, prev_v, values)
        pos = _C.where(take, prev_p, pos)
        s *= 2
    return pos


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,  # noqa: A002
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows: the rows of a 2-D
    input [B, L], or of a 1-D input cut into bags at `offsets`. Indices equal
    to padding_idx are left out of their bag; an empty bag gives zeros.
    `sparse` is accepted for compatibility; gradients are always dense."""
    _check_tensor(input, "input", "embedding_bag")
    _check_tensor(weight, "weight", "embedding_bag")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({list(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    for name, t in (("indices", input), ("offsets", offsets)):
        if t is not None and t.dtype not in (_C.dtype.int64, _C.dtype.int32):
            raise RuntimeError(f"embedding_bag: expected tensor for argument '{name}' to have one of the following "
                               f"scalar types: Long, Int; but got {t.dtype} instead")
    num, dim = weight.shape
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} through {num - 1}, "
                               f"but got {padding_idx}")
        padding_idx %= num
    flat = _C.reshape(input, [-1])
    if max_norm is not None:
        F._embedding_renorm_(weight, flat, float(max_norm), float(norm_type))
    rows = F.embedding(flat, weight, None, None, 2.0, scale_grad_by_freq)  # [N, D]
    if per_sample_weights is not None:
        rows = _C.mul(rows, _C.unsqueeze(_C.reshape(per_sample_weights, [-1]), 1))
    n = flat.shape[0]
    kept = _C.full([n], True, _C.dtype.bool, flat.device) if padding_idx is None else _C.ne(flat, padding_idx)
    if input.ndim == 2:
        b, length = input.shape
        kept = _C.reshape(kept, [b, length, 1])
        rows = _C.reshape(rows, [b, length, dim])
        count = _C.sum(_C.cast(kept, weight.dtype), [1], False)  # [B, 1]
        if mode == "max":
            at = _C.argmax(_C.where(kept, rows, -_INF), 1, True)  # the first maximum of each bag
            out = _C.squeeze(_C.gather(rows, 1, at), [1])
        else:
            out = _C.sum(_C.where(kept, rows, 0.0), [1], False)
    else:
        bags = offsets.shape[0] - (1 if include_last_offset else 0)
        offsets = _C.cast(offsets, _C.dtype.int64)
        starts = _C.narrow(offsets, 0, 0, bags)
        # each index's bag: the number of bag starts at or before it, less one
        marks = _C.scatter_add(_C.full([n + 1], 0, _C.dtype.int64, flat.device), 0, starts,
                               _C.full([bags], 1, _C.dtype.int64, flat.device))
        seg = _C.sub(_C.cumsum(_C.narrow(marks, 0, 0, n), 0), 1)
        kept = _C.logical_and(kept, _C.ge(seg, 0))
        ends = _C.cat([_C.narrow(offsets, 0, 1, bags - 1), _C.full([1], n, _C.dtype.int64, flat.device)], 0) \
            if bags else starts
        if include_last_offset:
            last = _C.narrow(offsets, 0, bags, 1)
            kept = _C.logical_and(kept, _C.lt(_C.arange(0, n, 1, _C.dtype.int64, flat.device), last))
            ends = _C.minimum(ends, last)
        seg = _C.clamp(seg, 0, None)
        kept_col = _C.unsqueeze(kept, 1)
        zeros = _C.full([bags, dim], 0.0, weight.dtype, weight.device)
        count = _C.index_add(_C.full([bags, 1], 0.0, weight.dtype, weight.device), 0, seg,
                             _C.cast(kept_col, weight.dtype))
        if mode == "max":
            if n == 0:
                out = zeros
            else:
                pos = _bag_first_max(_C.where(kept_col, rows, -_INF), seg)
                last_row = _C.clamp(_C.sub(ends, 1), 0, None)
                at = _C.gather(pos, 0, _C.expand(_C.unsqueeze(last_row, 1), [bags, dim]))
                out = _C.gather(rows, 0, at)
        else:
            out = _C.index_add(zeros, 0, seg, _C.where(kept_col, rows, 0.0))
    if mode == "mean":
        out = _C.div(out, _C.clamp(count, 1.0, None))
    elif mode == "max":
        out = _C.where(_C.gt(count, 0.0), out, 0.0)
    return out
