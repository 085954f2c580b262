"""Bags and sequences: embedding_bag (reductions over bags of embedding rows)
and ctc_loss (the connectionist temporal classification loss), composed of
lucid ops so that each differentiates and traces.

Bag boundaries come from `offsets` as data, never read on the host: each
index's bag number is a cumulative sum of the offsets' marks, the sums and
counts are index_adds, and a bag's first maximum is found by a segmented
scan of log2(N) steps.
"""
from .. import _C
from . import functional as F
from .functional import _INF, _check_tensor, _reduce

__all__ = ["embedding_bag", "ctc_loss"]


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
        if not offsets.is_symbolic and offsets.shape[0]:  # PyTorch's checks, eagerly (a trace cannot read)
            first, last_offset = int(offsets[0].item()), int(offsets[-1].item())
            if first != 0:
                raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                                   f"from position 0. However, got {first}")
            if last_offset > n:
                raise RuntimeError(f"offsets[-1] can not be greater than input's length ({n}), but got offsets[-1] "
                                   f"of {last_offset}")
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
            if n == 0:  # every bag empty: zeros, still in the weight's history (PyTorch's output requires grad)
                out = _C.broadcast_to(_C.sum(rows, [0], True), [bags, dim])
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


# ------------------------------------------------------------------ ctc_loss
def _lengths(lengths, batch, name, device):
    """input_lengths / target_lengths (tensor or sequence of ints) -> (int64
    tensor [batch], the host values when they were given on the host)."""
    if isinstance(lengths, _C.Tensor):
        if lengths.dtype not in (_C.dtype.int64, _C.dtype.int32):
            raise RuntimeError(f"ctc_loss: {name} must be of integer type, got {lengths.dtype}")
        if lengths.ndim > 1 or lengths.numel() != batch:
            raise RuntimeError(f"ctc_loss: expected {name} to have size {batch}, but got {list(lengths.shape)}")
        return _C.reshape(_C.cast(lengths, _C.dtype.int64), [batch]), None
    if not isinstance(lengths, (list, tuple)):
        raise TypeError(f"ctc_loss(): argument '{name}' must be a tuple of ints or a Tensor, not "
                        f"{type(lengths).__name__}")
    values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(f"ctc_loss: expected {name} to have size {batch}, but got {len(values)}")
    from .._creation import tensor

    return tensor(values, dtype=_C.dtype.int64, device=device), values


def _logsumexp3(a, b, c):
    """log(e^a + e^b + e^c) whose gradient stays finite (zero) where all three
    are -inf: unreachable CTC states feed nothing, and must take no NaN back."""
    m = _C.maximum(_C.maximum(a, b), c).detach()
    dead = _C.eq(m, -_INF)
    shift = _C.where(dead, 0.0, m)
    total = _C.add(_C.add(_C.exp(_C.sub(a, shift)), _C.exp(_C.sub(b, shift))), _C.exp(_C.sub(c, shift)))
    return _C.where(dead, -_INF, _C.add(shift, _C.log(_C.where(dead, 1.0, total))))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",  # noqa: C901
             zero_infinity=False):
    """The CTC loss, -log p(target | input), by the forward (alpha) recursion
    in log space over time. log_probs [T, N, C] (or [T, C]) are log-softmax
    outputs; targets padded [N, S] or concatenated [sum(target_lengths)].
    The gradient with respect to log_probs is PyTorch's: that of the loss
    plus exp(log_probs) on the steps within each input length (the two agree
    once it passes through a log_softmax, where that term sums to zero)."""
    _check_tensor(log_probs, "log_probs", "ctc_loss")
    _check_tensor(targets, "targets", "ctc_loss")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D (unbatched) or 3-D, got "
                           f"{list(log_probs.shape)}")
    if not log_probs.dtype.is_floating_point:
        raise RuntimeError(f"ctc_loss: expected log_probs to be floating point, got {log_probs.dtype}")
    if targets.dtype not in (_C.dtype.int64, _C.dtype.int32):
        raise RuntimeError(f"ctc_loss: expected targets to be of integer type, got {targets.dtype}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = _C.unsqueeze(log_probs, 1)
        if targets.ndim == 1 and not isinstance(target_lengths, _C.Tensor) or \
                isinstance(target_lengths, _C.Tensor) and target_lengths.ndim == 0:
            targets = _C.unsqueeze(targets, 0)
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    device = log_probs.device
    in_len, in_host = _lengths(input_lengths, batch, "input_lengths", device)
    tgt_len, tgt_host = _lengths(target_lengths, batch, "target_lengths", device)
    # PyTorch reads the lengths to check them; so does an eager call here (a trace cannot).
    in_seen = in_host if in_host is not None or in_len.is_symbolic else in_len.tolist()
    if in_seen is not None and any(v < 0 or v > steps for v in in_seen):
        raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got {in_seen}")
    tgt_seen = tgt_host if tgt_host is not None or tgt_len.is_symbolic else tgt_len.tolist()
    targets = _C.cast(targets, _C.dtype.int64)
    if targets.ndim == 2:
        if targets.shape[0] != batch:
            raise RuntimeError(f"ctc_loss: expected targets of size [{batch}, S], got {list(targets.shape)}")
        padded = targets
        if tgt_seen is not None and any(v < 0 or v > targets.shape[1] for v in tgt_seen):
            raise RuntimeError(f"Expected tensor to have size at least {max(tgt_seen)} at dimension 1, but got "
                               f"size {targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                               f"ctc_loss_cpu)")
    elif targets.ndim == 1:
        total = targets.shape[0]
        if tgt_seen is not None and sum(tgt_seen) != total:
            raise RuntimeError(f"ctc_loss: the target lengths sum to {sum(tgt_seen)}, but the concatenated targets "
                               f"hold {total}")
        # Pad the concatenated targets to [N, S]: S is the longest target when
        # the lengths are on the host, else the total (a bound read from no data).
        width = max(tgt_host, default=0) if tgt_host is not None else total
        starts = _C.sub(_C.cumsum(tgt_len, 0), tgt_len)
        cols = _C.arange(0, width, 1, _C.dtype.int64, device)
        at = _C.add(_C.unsqueeze(starts, 1), _C.unsqueeze(cols, 0))
        if total:
            padded = _C.reshape(_C.index_select(targets, 0, _C.reshape(_C.clamp(at, 0, total - 1), [-1])),
                                [batch, width])
        else:
            padded = _C.full([batch, width], blank, _C.dtype.int64, device)
    else:
        raise RuntimeError(f"ctc_loss: expected targets to be 1-D or 2-D, got {list(targets.shape)}")
    width = padded.shape[1]
    states = 2 * width + 1
    # the extended label sequence: blank, l1, blank, l2, ..., blank
    blanks = _C.full([batch, width], blank, _C.dtype.int64, device)
    ext = _C.cat([_C.reshape(_C.stack([blanks, padded], 2), [batch, 2 * width]),
                  _C.full([batch, 1], blank, _C.dtype.int64, device)], 1)
    ext_lp = _C.gather(log_probs, 2, _C.expand(_C.unsqueeze(ext, 0), [steps, batch, states]))  # [T, N, 2S+1]
    # a transition may skip the blank between two different labels
    prev2 = _C.pad(_C.narrow(ext, 1, 0, states - 2), [2, 0], blank) if states > 2 else ext
    skip = _C.logical_and(_C.ne(ext, blank), _C.ne(ext, prev2))
    s_idx = _C.arange(0, states, 1, _C.dtype.int64, device)
    alpha = _C.where(_C.lt(s_idx, 2), _C.select(ext_lp, 0, 0), -_INF) if steps else \
        _C.full([batch, states], -_INF, log_probs.dtype, device)
    for t in range(1, steps):
        one = _C.pad(_C.narrow(alpha, 1, 0, states - 1), [1, 0], -_INF)
        two = _C.where(skip, _C.pad(_C.narrow(alpha, 1, 0, states - 2), [2, 0], -_INF), -_INF) \
            if states > 2 else _C.full([batch, states], -_INF, log_probs.dtype, device)
        step = _C.add(_logsumexp3(alpha, one, two), _C.select(ext_lp, 0, t))
        alpha = _C.where(_C.unsqueeze(_C.gt(in_len, t), 1), step, alpha)  # frozen past each input's length
    last = _C.gather(alpha, 1, _C.unsqueeze(_C.mul(tgt_len, 2), 1))
    before = _C.gather(alpha, 1, _C.unsqueeze(_C.clamp(_C.sub(_C.mul(tgt_len, 2), 1), 0, None), 1))
    before = _C.where(_C.unsqueeze(_C.gt(tgt_len, 0), 1), before, -_INF)
    loss = _C.neg(_C.squeeze(_logsumexp3(last, before, _C.full(list(last.shape), -_INF, last.dtype, device)), [1]))
    if steps == 0:
        loss = _C.where(_C.eq(tgt_len, 0), 0.0, _INF)
    # PyTorch's gradient adds exp(log_probs) on the steps within each input (see the docstring).
    within = _C.unsqueeze(_C.lt(_C.unsqueeze(_C.arange(0, steps, 1, _C.dtype.int64, device), 1), in_len), 2)
    probs = _C.exp(log_probs)
    extra = _C.sum(_C.where(within, _C.sub(probs, probs.detach()), 0.0), [0, 2], False)
    loss = _C.add(loss, extra)
    if zero_infinity:
        loss = _C.where(_C.eq(loss, _INF), 0.0, loss)
    else:
        # An infinite loss (no alignment fits the input) has NaN gradients on
        # the steps within its input, as PyTorch's, whose formula meets
        # inf - inf there: -log of a 0 built from log_probs is inf, with a
        # derivative of inf * 0.
        infinite = _C.eq(loss, _INF)
        nothing = _C.sum(_C.where(within, _C.mul(probs, 0.0), 0.0), [0, 2], False)
        loss = _C.where(infinite, _C.neg(_C.log(_C.where(infinite, nothing, 1.0))), loss)
    if unbatched and reduction == "none":
        return _C.squeeze(loss, [0])
    if reduction == "mean":
        return _C.mean(_C.div(loss, _C.cast(_C.clamp(tgt_len, 1, None), loss.dtype)), None, False)
    return _reduce(loss, reduction)
