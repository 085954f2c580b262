"""The neural-network functions torch also exposes at top level (torch.conv2d,
torch.dropout, torch.batch_norm...), with the top-level signatures, which
differ from torch.nn.functional's in places: positional `train` flags,
`reduction` as an int (0 none, 1 mean, 2 sum), embedding's weight first,
batch_norm's weight before the running statistics and a trailing
cudnn flag (accepted and ignored). Each forwards to lucid.nn.functional."""
from .nn import functional as F

__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "dropout", "dropout_", "alpha_dropout",
    "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_",
    "embedding", "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "max_pool1d", "max_pool2d",
    "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "bilinear",
    "binary_cross_entropy_with_logits", "kl_div", "celu", "celu_", "selu", "selu_", "threshold", "threshold_",
    "prelu", "rrelu", "rrelu_", "hardshrink", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "cosine_similarity", "pairwise_distance", "pdist", "cosine_embedding_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss", "constant_pad_nd",
]

conv1d = F.conv1d
conv2d = F.conv2d
conv_transpose1d = F.conv_transpose1d
conv_transpose2d = F.conv_transpose2d
bilinear = F.bilinear
prelu = F.prelu
hardshrink = F.hardshrink
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
channel_shuffle = F.channel_shuffle
native_channel_shuffle = F.channel_shuffle
cosine_similarity = F.cosine_similarity
pairwise_distance = F.pairwise_distance
pdist = F.pdist
adaptive_avg_pool1d = F.adaptive_avg_pool1d
rms_norm = F.rms_norm

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(value):
    if value not in _REDUCTIONS:
        raise ValueError(f"{value} is not a valid value for reduction (0: none, 1: mean, 2: sum)")
    return _REDUCTIONS[value]


# ------------------------------------------------------------------ dropout
def dropout(input, p, train):  # noqa: A002
    return F.dropout(input, p, train)


def dropout_(input, p, train):  # noqa: A002
    F.dropout(input, p, train, inplace=True)
    return input


def alpha_dropout(input, p, train):  # noqa: A002
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):  # noqa: A002
    F.alpha_dropout(input, p, train, inplace=True)
    return input


def feature_alpha_dropout(input, p, train):  # noqa: A002
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):  # noqa: A002
    F.feature_alpha_dropout(input, p, train, inplace=True)
    return input


def _channel_dropout(input, p, train, inplace):  # noqa: A002
    # Whole channels (dim 1) dropped per sample: dropout1d/2d/3d by the feature dims.
    by_rank = {3: F.dropout1d, 4: F.dropout2d, 5: getattr(F, "dropout3d", None)}
    fn = by_rank.get(input.ndim)
    if fn is None:
        raise RuntimeError(f"feature_dropout: expected a 3-D, 4-D or 5-D input (N, C, *), got {input.ndim}-D")
    return fn(input, p, train, inplace=inplace)


def feature_dropout(input, p, train):  # noqa: A002
    return _channel_dropout(input, p, train, False)


def feature_dropout_(input, p, train):  # noqa: A002
    _channel_dropout(input, p, train, True)
    return input


# ------------------------------------------------------------ normalization
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # aten's padding_idx -1 means none (F.embedding has already wrapped a negative index)
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):  # noqa: A002
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,  # noqa: A002
                  cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):  # noqa: A002
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):  # noqa: A002
    return F.group_norm(input, num_groups, weight, bias, eps)


# ------------------------------------------------------------------ pooling
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    return F.avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


# ------------------------------------------------------------- activations
def celu(input, alpha=1.0):  # noqa: A002
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):  # noqa: A002
    F.celu(input, alpha, inplace=True)
    return input


def selu(input):  # noqa: A002
    return F.selu(input)


def selu_(input):  # noqa: A002
    F.selu(input, inplace=True)
    return input


def threshold(input, threshold, value):  # noqa: A002
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):  # noqa: A002
    F.threshold(input, threshold, value, inplace=True)
    return input


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):  # noqa: A002
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):  # noqa: A002
    F.rrelu(input, lower, upper, training, inplace=True)
    return input


# ------------------------------------------------------------------- losses
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):  # noqa: A002
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):  # noqa: A002
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):  # noqa: A002
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def constant_pad_nd(input, pad, value=0):  # noqa: A002
    return F.pad(input, list(pad), "constant", value)
