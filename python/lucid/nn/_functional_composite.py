"""More of torch.nn.functional, composed of lucid ops (so each traces and
differentiates through its ops): in-place activation forms, shrinkage and
randomized activations, adaptive max and power-average pooling, local
response normalisation, channel shuffle, pairwise distances and the margin,
embedding and likelihood losses. Imported into lucid.nn.functional."""
import math
import numbers

import numpy as np

from .. import _C
from . import functional as F
from .functional import (_check_reduction, _check_tensor, _float_like, _inplace, _ntuple, _reduce, _reduction,
                         _adaptive_size)

__all__ = [
    "relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_", "rrelu", "rrelu_", "hardshrink",
    "softshrink", "tanhshrink", "prelu", "gumbel_softmax", "alpha_dropout", "feature_alpha_dropout",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "lp_pool1d", "lp_pool2d",
    "local_response_norm", "channel_shuffle", "pdist", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss", "multi_margin_loss",
    "multilabel_margin_loss", "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
]


# ------------------------------------------------------------- activations
def relu_(input):  # noqa: A002
    F.relu(input, inplace=True)
    return input


def elu_(input, alpha=1.0):  # noqa: A002
    F.elu(input, alpha, inplace=True)
    return input


def leaky_relu_(input, negative_slope=0.01):  # noqa: A002
    F.leaky_relu(input, negative_slope, inplace=True)
    return input


def hardtanh_(input, min_val=-1.0, max_val=1.0):  # noqa: A002
    F.hardtanh(input, min_val, max_val, inplace=True)
    return input


def selu_(input):  # noqa: A002
    F.selu(input, inplace=True)
    return input


def celu_(input, alpha=1.0):  # noqa: A002
    F.celu(input, alpha, inplace=True)
    return input


def threshold_(input, threshold, value):  # noqa: A002
    F.threshold(input, threshold, value, inplace=True)
    return input


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    """Leaky ReLU with a slope drawn uniformly in [lower, upper] per element
    while training, and the mean slope otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    F._floating_only(input, "leaky_relu_cpu")

    def fn(x):
        if training:
            slope = _C.add(_C.mul(_C.rand(list(x.shape), _float_like(x), x.device), upper - lower), lower)
        else:
            slope = (lower + upper) / 2
        # x = 0 takes the slope (its gradient too), as PyTorch's leaky_relu does
        return _C.where(_C.gt(x, 0), x, _C.mul(x, slope))

    return _inplace(input, fn, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):  # noqa: A002
    rrelu(input, lower, upper, training, inplace=True)
    return input


def hardshrink(input, lambd=0.5):  # noqa: A002
    F._floating_only(input, "hardshrink_cpu")
    # PyTorch's form: 0 inside [-lambd, lambd], x elsewhere (NaN stays NaN)
    return _C.where(_C.logical_and(_C.ge(input, -lambd), _C.le(input, lambd)), 0.0, input)


def softshrink(input, lambd=0.5):  # noqa: A002
    F._floating_only(input, "softshrink_check")
    return _C.where(_C.gt(input, lambd), _C.sub(input, lambd), _C.where(_C.lt(input, -lambd), _C.add(input, lambd),
                                                                        0.0))


def tanhshrink(input):  # noqa: A002
    return _C.sub(input, _C.tanh(input))


def prelu(input, weight):  # noqa: A002
    """max(0, x) + weight * min(0, x); weight has 1 or C (channel dim 1) entries."""
    _check_tensor(input, "input", "prelu")
    if weight.numel() == 1:
        w = _C.reshape(weight, [])  # one slope: the output has the input's shape, a 0-d one's too
    else:
        if input.ndim == 0:
            raise _C.InvalidArgument("Not allow zero-dim input tensor.")
        if input.ndim < 2 or input.shape[1] != weight.numel():
            raise _C.InvalidArgument(f"Mismatch of parameter numbers and input channel size. Found parameter numbers "
                                     f"= {weight.numel()} and channel size = "
                                     f"{input.shape[1] if input.ndim >= 2 else 1}.")
        shape = [1] * input.ndim
        shape[1] = weight.numel()
        w = _C.reshape(weight, shape)
    return _C.where(_C.gt(input, 0), input, _C.mul(input, w))


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution; with hard=True the
    forward value is one-hot and the gradient the soft sample's (straight
    through)."""
    u = _C.rand(list(logits.shape), _float_like(logits), logits.device)
    gumbels = _C.neg(_C.log(_C.neg(_C.log(u))))  # -log(Exp(1))
    y_soft = _C.softmax(_C.div(_C.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = _C.argmax(y_soft, dim, True)
    y_hard = _C.scatter(_C.mul(y_soft, 0.0).detach(), dim, index,
                        _C.full(list(index.shape), 1.0, y_soft.dtype, y_soft.device))
    return _C.add(_C.sub(y_hard, y_soft.detach()), y_soft)


# SELU's negative saturation value (alpha * scale): where alpha dropout puts dropped units.
_ALPHA_PRIME = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature):  # noqa: A002
    """PyTorch's alpha dropout: dropped units take SELU's saturation value and
    an affine map (a, b) keeps the self-normalising mean and variance."""
    F._check_p(p)
    if not training or p == 0.0:
        return input

    def fn(x):
        if p == 1.0:
            return _C.mul(x, 0.0)
        shape = list(x.shape[:2]) + [1] * (x.ndim - 2) if feature and x.ndim > 2 else list(x.shape)
        keep = _C.cast(_C.lt(_C.rand(shape, _float_like(x), x.device), 1.0 - p), x.dtype)
        a = 1.0 / math.sqrt((_ALPHA_PRIME * _ALPHA_PRIME * p + 1) * (1 - p))
        b = _C.add(_C.mul(_C.sub(keep, 1.0), _ALPHA_PRIME * a), _ALPHA_PRIME * a * p)
        return _C.add(_C.mul(x, _C.mul(keep, a)), b)

    return _inplace(input, fn, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    return _alpha_dropout(input, p, training, inplace, True)


# ----------------------------------------------------------------- pooling
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _adaptive_max(x, dim, n_out, with_indices):
    """Max over PyTorch's adaptive windows [floor(i*n/o), ceil((i+1)*n/o))
    of dim `dim`: the windows as a mask, padded lanes at -inf."""
    n = x.shape[dim]
    i = np.arange(n_out)
    start = (i * n) // n_out
    end = -((-(i + 1) * n) // n_out)
    cols = np.arange(n)
    mask = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])  # [o, n]
    from .._creation import tensor

    moved = _C.unsqueeze(_C.transpose(x, dim, -1), -2)  # [..., 1, n]
    m = tensor(mask, device=x.device)
    filled = _C.where(m, moved, float("-inf"))  # [..., o, n]
    values = _C.amax(filled, [-1], False)
    # A NaN in a window wins, as in max pooling.
    nan = _C.any(_C.logical_and(_C.isnan(moved), m), [-1], False)
    values = _C.where(nan, float("nan"), values)
    values = _C.transpose(values, dim, -1)
    if not with_indices:
        return values, None
    idx = _C.argmax(_C.where(_C.isnan(filled), float("inf"), filled), -1, False)
    return values, _C.transpose(idx, dim, -1)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    if input.ndim not in (2, 3):
        raise _C.InvalidArgument(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got {list(input.shape)}")
    (o,) = _adaptive_size(output_size, (input.shape[-1],), "adaptive_max_pool1d")
    return _adaptive_max(input, input.ndim - 1, o, True)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    values, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (values, idx) if return_indices else values


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    if input.ndim not in (3, 4):
        raise _C.InvalidArgument(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    h, w = input.shape[-2:]
    oh, ow = _adaptive_size(output_size, (h, w), "adaptive_max_pool2d")
    # Windows over H then W: the maximum of maxima; the index comes from one pass over the flattened window grid.
    x = input
    if oh and ow and h % oh == 0 and w % ow == 0:
        return F.max_pool2d(x, (h // oh, w // ow), return_indices=True)
    rows, _ = _adaptive_max(x, x.ndim - 2, oh, False)
    values, _ = _adaptive_max(rows, x.ndim - 1, ow, False)
    # indices: position of the maximum in the H*W plane
    i = np.arange(oh)
    hs, he = (i * h) // oh, -((-(i + 1) * h) // oh)
    j = np.arange(ow)
    ws, we = (j * w) // ow, -((-(j + 1) * w) // ow)
    mask = ((np.arange(h)[None, :, None, None] >= hs[:, None, None, None]) &
            (np.arange(h)[None, :, None, None] < he[:, None, None, None]) &
            (np.arange(w)[None, None, None, :] >= ws[None, None, :, None]) &
            (np.arange(w)[None, None, None, :] < we[None, None, :, None]))  # [oh, h, ow, w]
    mask = np.transpose(mask, (0, 2, 1, 3)).reshape(oh, ow, h * w)
    from .._creation import tensor

    flat = _C.reshape(x, list(x.shape[:-2]) + [1, 1, h * w])
    filled = _C.where(tensor(mask, device=x.device), flat, float("-inf"))
    idx = _C.argmax(_C.where(_C.isnan(filled), float("inf"), filled), -1, False)
    return values, idx


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    values, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (values, idx) if return_indices else values


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    (k,) = _ntuple(kernel_size, 1, "lp_pool1d: kernel_size")
    out = F.avg_pool1d(_C.pow(input, float(norm_type)), k, stride, 0, ceil_mode)
    return _C.pow(_C.mul(_C.mul(_C.sign(out), F.relu(_C.abs(out))), k), 1.0 / float(norm_type))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    kh, kw = _ntuple(kernel_size, 2, "lp_pool2d: kernel_size")
    out = F.avg_pool2d(_C.pow(input, float(norm_type)), (kh, kw), stride, 0, ceil_mode)
    return _C.pow(_C.mul(_C.mul(_C.sign(out), F.relu(_C.abs(out))), kh * kw), 1.0 / float(norm_type))


# ----------------------------------------------------------- normalisation
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """x / (k + alpha/size * sum of x^2 over `size` neighbouring channels)^beta."""
    if input.ndim < 3:
        raise _C.InvalidArgument(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    n, c = input.shape[0], input.shape[1]
    sq = _C.reshape(_C.mul(input, input), [n, 1, c, -1])  # channels as a spatial dim
    sq = _C.pad(sq, [0, 0, size // 2, (size - 1) // 2], 0.0)
    div = F.avg_pool2d(sq, (size, 1), stride=1)
    div = _C.reshape(div, list(input.shape))
    div = _C.pow(_C.add(_C.mul(div, alpha), k), beta)
    return _C.div(input, div)


def channel_shuffle(input, groups):  # noqa: A002
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise _C.InvalidArgument(f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
                                 "groups.")
    rest = list(input.shape[2:])
    x = _C.reshape(input, [n, groups, c // groups] + rest)
    x = _C.transpose(x, 1, 2)
    return _C.reshape(x, [n, c] + rest)


def pdist(input, p=2.0):  # noqa: A002
    """Distances between every pair of rows i < j, in row-major order."""
    if input.ndim != 2:
        raise _C.InvalidArgument(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    from .._creation import tensor

    a = _C.index_select(input, 0, tensor(i.astype(np.int64), device=input.device))
    b = _C.index_select(input, 0, tensor(j.astype(np.int64), device=input.device))
    return _C.norm(_C.sub(a, b), float(p), [1], False)


# ------------------------------------------------------------------ losses
def _loss_reduction(size_average, reduce, reduction):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return reduction


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _loss_reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: {list(target.shape)} ")
    loss = F.relu(_C.add(_C.mul(_C.neg(target), _C.sub(input1, input2)), margin))
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    reduction = _loss_reduction(size_average, reduce, reduction)
    margin_clamp = F.relu(_C.sub(margin, input))
    loss = _C.add(_C.where(_C.ne(target, 1), margin_clamp, 0.0), _C.where(_C.ne(target, -1), input, 0.0))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _loss_reduction(size_average, reduce, reduction)
    eps = 1e-12
    prod = _C.sum(_C.mul(input1, input2), [-1], False)
    m1 = _C.add(_C.sum(_C.mul(input1, input1), [-1], False), eps)
    m2 = _C.add(_C.sum(_C.mul(input2, input2), [-1], False), eps)
    cos = _C.div(prod, _C.sqrt(_C.mul(m1, m2)))
    loss = _C.where(_C.eq(target, 1), _C.sub(1.0, cos), F.relu(_C.sub(cos, margin)))
    loss = _C.where(_C.logical_or(_C.eq(target, 1), _C.eq(target, -1)), loss, 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    reduction = _loss_reduction(size_average, reduce, reduction)
    if target.dtype == _C.dtype.bool:  # promoted first, as PyTorch's
        target = _C.cast(target, _C.result_type(input, target))
    return _reduce(_C.log1p(_C.exp(_C.mul(_C.neg(target), input))), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction="mean"):
    reduction = _loss_reduction(size_average, reduce, reduction)
    loss = _C.neg(_C.add(_C.mul(target, F.logsigmoid(input)), _C.mul(_C.sub(1.0, target),
                                                                       F.logsigmoid(_C.neg(input)))))
    if weight is not None:
        loss = _C.mul(loss, weight)
    # PyTorch's: a sum over input's class dim divided by input's class count
    # (not by the broadcast loss's, where a target broadcasts input)
    loss = _C.div(_C.sum(loss, [input.ndim - 1], False), float(input.shape[-1]))
    return _reduce(loss, reduction)


def _check_triplet(anchor, positive, negative, margin):
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise _C.InvalidArgument(f"The anchor, positive, and negative tensors are expected to have the same number "
                                 f"of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
                                 f"negative {negative.ndim}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _loss_reduction(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin)
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, F.pairwise_distance(positive, negative, p, eps))
    return _reduce(F.relu(_C.add(_C.sub(d_pos, d_neg), margin)), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    _check_reduction(reduction)
    _check_triplet(anchor, positive, negative, margin)
    dist = distance_function or F.pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, dist(positive, negative))
    return _reduce(F.relu(_C.add(_C.sub(d_pos, d_neg), margin)), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean"):
    reduction = _loss_reduction(size_average, reduce, reduction)
    if log_input:
        loss = _C.sub(_C.exp(input), _C.mul(target, input))
    else:
        loss = _C.sub(input, _C.mul(target, _C.log(_C.add(input, eps))))
    if full:
        # Stirling's term for targets > 1
        stirling = _C.add(_C.sub(_C.mul(target, _C.log(_C.where(_C.gt(target, 1), target, 1.0))), target),
                          _C.mul(_C.log(_C.mul(_C.where(_C.gt(target, 1), target, 1.0), 2 * math.pi)), 0.5))
        loss = _C.add(loss, _C.where(_C.gt(target, 1), stirling, 0.0))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """0.5 (log(var) + (input - target)^2 / var), var clamped below at eps
    (the clamp changes the value, not the gradient, as in PyTorch)."""
    if isinstance(var, numbers.Number):
        var = _C.full(list(input.shape), float(var), input.dtype, input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = _C.unsqueeze(var, -1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise _C.InvalidArgument("var is of incorrect size")
    _check_reduction(reduction)
    if not var.is_symbolic and bool(_C.any(_C.lt(var.detach(), 0), None, False).item()):
        raise _C.InvalidArgument("var has negative entry/entries")
    v = _C.add(var, _C.sub(_C.clamp(var, eps, None), var).detach())
    loss = _C.mul(_C.add(_C.log(v), _C.div(_C.square(_C.sub(input, target)), v)), 0.5)
    if full:
        loss = _C.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,  # noqa: A002
                      reduction="mean"):
    """Multi-class hinge loss: sum over j != y of max(0, margin - x[y] + x[j])^p / C."""
    reduction = _loss_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise _C.InvalidArgument("only p == 1 and p == 2 supported")
    x = input if input.ndim == 2 else _C.unsqueeze(input, 0)
    t = _C.reshape(_C.cast(target, _C.dtype.int64), [x.shape[0], 1])
    c = x.shape[1]
    xy = _C.gather(x, 1, t)
    margins = F.relu(_C.add(_C.sub(x, xy), margin))
    if p == 2:
        margins = _C.mul(margins, margins)
    if weight is not None:
        margins = _C.mul(margins, _C.reshape(_C.index_select(weight, 0, _C.reshape(t, [-1])), [x.shape[0], 1]))
    not_y = _C.ne(_C.reshape(_C.arange(0.0, float(c), 1.0, _C.dtype.int64, x.device), [1, c]), t)
    loss = _C.div(_C.sum(_C.where(not_y, margins, 0.0), [1], False), float(c))
    if input.ndim == 1:
        loss = _C.squeeze(loss, [0])
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """Hinge loss between each target class (the leading non-negative entries
    of `target`) and every non-target class."""
    reduction = _loss_reduction(size_average, reduce, reduction)
    x = input if input.ndim == 2 else _C.unsqueeze(input, 0)
    if tuple(target.shape) != tuple(input.shape):
        raise _C.InvalidArgument(f"inconsistent target size: {list(target.shape)} for input of size: "
                                 f"{list(input.shape)}")
    n, c = x.shape
    tgt = target.detach().cpu().numpy().reshape(n, c)
    # [row, target class j, other class k]: how often j is listed (a class
    # listed twice counts twice, as in PyTorch's loop over the targets)
    pairs = np.zeros((n, c, c))
    for r in range(n):
        labels = []
        for v in tgt[r]:
            if v < 0:
                break
            if v >= c:
                raise _C.InvalidArgument(f"multilabel_margin_loss: target out of range: {int(v)} for {c} classes")
            labels.append(int(v))
        for j in labels:
            pairs[r, j] += 1
        pairs[r][:, labels] = 0
    from .._creation import tensor

    diff = F.relu(_C.add(_C.sub(_C.unsqueeze(x, 1), _C.unsqueeze(x, 2)), 1.0))  # [n, j, k]: 1 - (x_j - x_k)
    loss = _C.div(_C.sum(_C.mul(diff, tensor(pairs, dtype=x.dtype, device=x.device)), [1, 2], False), float(c))
    if input.ndim == 1:
        loss = _C.squeeze(loss, [0])
    return _reduce(loss, reduction)


# ---------------------------------------------------------- fractional pooling
def _fractional_starts(u, n_in, n_out, k, dtype):
    """PyTorch's generate_intervals: the window starts along one dim for the
    samples u [N, C], computed in the input's dtype as PyTorch computes them."""
    lead = list(u.shape)
    last = _C.full(lead + [1], n_in - k, _C.dtype.int64, u.device)
    if n_out == 1:
        return last
    real = np.float32 if dtype == _C.dtype.float32 else np.float64
    alpha = float(real(n_in - k) / real(n_out - 1))
    i = _C.arange(0, n_out - 1, 1, dtype, u.device)
    scaled = _C.cast(_C.mul(_C.add(i, _C.unsqueeze(u, -1)), alpha), _C.dtype.int64)  # truncation, as int()
    offset = _C.cast(_C.mul(u, alpha), _C.dtype.int64)
    return _C.cat([_C.sub(scaled, _C.unsqueeze(offset, -1)), last], -1)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=False, _random_samples=None):
    """Max over windows of kernel_size placed at pseudo-random fractional
    strides (Graham, 2014). The windows come from `_random_samples` [N, C, 2]
    in [0, 1) as PyTorch places them; drawn here when not given, from lucid's
    generator, so the windows (not the shapes) differ from PyTorch's run."""
    _check_tensor(input, "input", "fractional_max_pool2d")
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size or an output_ratio")
    if input.ndim not in (3, 4):
        raise _C.InvalidArgument(f"fractional_max_pool2d(): Expected 3D or 4D tensor, but got: "
                                 f"{list(input.shape)}")
    h, w = input.shape[-2:]
    if output_size is None:
        if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of "
                             "Ints.")
        rh, rw = tuple(output_ratio) * (2 // len(output_ratio)) if isinstance(output_ratio, (tuple, list)) \
            else (output_ratio, output_ratio)
        output_size = (int(h * rh), int(w * rw))
    kh, kw = _ntuple(kernel_size, 2, "fractional_max_pool2d: kernel_size")
    oh, ow = _ntuple(output_size, 2, "fractional_max_pool2d: output_size")
    if oh + kh - 1 > h:
        raise _C.InvalidArgument(f"fractional_max_pool2d(): pool height {kh} too large relative to input height {h} "
                                 f"and output height {oh}")
    if ow + kw - 1 > w:
        raise _C.InvalidArgument(f"fractional_max_pool2d(): pool width {kw} too large relative to input width {w} "
                                 f"and output width {ow}")
    x = input if input.ndim == 4 else _C.unsqueeze(input, 0)
    n, c = x.shape[:2]
    samples = _random_samples if _random_samples is not None else _C.rand([n, c, 2], x.dtype, x.device)
    if tuple(samples.shape) != (n, c, 2):
        raise _C.InvalidArgument(f"fractional_max_pool2d(): expected _random_samples of size {[n, c, 2]}, got "
                                 f"{list(samples.shape)}")
    samples = samples.detach()
    # sample 0 places the columns, sample 1 the rows (PyTorch's order)
    rows = _fractional_starts(_C.select(samples, 2, 1), h, oh, kh, x.dtype)  # [N, C, OH]
    cols = _fractional_starts(_C.select(samples, 2, 0), w, ow, kw, x.dtype)  # [N, C, OW]
    rows = _C.add(_C.unsqueeze(rows, -1), _C.arange(0, kh, 1, _C.dtype.int64, x.device))  # [N, C, OH, kh]
    cols = _C.add(_C.unsqueeze(cols, -1), _C.arange(0, kw, 1, _C.dtype.int64, x.device))  # [N, C, OW, kw]
    index = _C.add(_C.mul(_C.reshape(rows, [n, c, oh, 1, kh, 1]), w), _C.reshape(cols, [n, c, 1, ow, 1, kw]))
    index = _C.reshape(index, [n, c, oh * ow, kh * kw])
    windows = _C.reshape(_C.gather(_C.reshape(x, [n, c, h * w]), 2, _C.reshape(index, [n, c, -1])),
                         [n, c, oh * ow, kh * kw])
    at = _C.argmax(_C.where(_C.isnan(windows), float("inf"), windows).detach(), -1, True)  # the first maximum
    values = _C.reshape(_C.gather(windows, 3, at), list(input.shape[:-2]) + [oh, ow])
    return values, _C.reshape(_C.gather(index, 3, at), list(input.shape[:-2]) + [oh, ow])


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    values, index = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                       _random_samples=_random_samples)
    return (values, index) if return_indices else values
