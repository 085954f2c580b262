"""lucid.nn.functional: layers, activations and losses as functions, with
PyTorch's names, arguments and defaults. Everything here is composed of
lucid ops (no host reads of tensor data), so it traces into a compiled step.
"""
import functools
import math
import numbers
import os
import sys
import warnings

import numpy as np

from .. import _C
from .._functions import _wrap_dim, one_hot  # noqa: F401  (F.one_hot is lucid.one_hot)
from .._memory_format import suggested_layout
from .._utils import to_dtype, torch_type_name
from ..autograd import no_grad

Tensor = _C.Tensor
_INF = float("inf")

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "pixel_shuffle",
    "pixel_unshuffle", "dropout1d", "dropout2d", "dropout3d", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "unfold", "fold", "max_pool1d", "max_pool2d", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "batch_norm", "layer_norm", "group_norm",
    "rms_norm", "instance_norm", "normalize", "embedding", "one_hot", "dropout", "pad", "relu", "relu6",
    "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "softsign", "logsigmoid",
    "hardtanh", "hardsigmoid", "hardswish", "tanh", "sigmoid", "softmax", "softmin", "log_softmax", "glu",
    "threshold", "scaled_dot_product_attention", "multi_head_attention_forward", "cross_entropy", "nll_loss",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "pairwise_distance",
]


# ------------------------------------------------------------------ helpers
def _ntuple(x, n, name):
    if isinstance(x, (tuple, list)):
        if len(x) == 1:
            x = tuple(x) * n
        if len(x) != n:
            raise _C.InvalidArgument(f"{name} must be an int or a tuple of {n} ints, got {tuple(x)}")
        out = tuple(x)
    else:
        out = (x,) * n
    for v in out:
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {x!r}")
    return tuple(int(v) for v in out)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _warn(message):
    """warnings.warn pointing at the user's line: the first frame outside the
    lucid package (a loss may be reached through nn modules, autocast
    wrappers or a compiled step's tracer)."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is _warn's caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _check_tensor(x, name, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _float_like(x):
    return x.dtype if x.dtype.is_floating_point else _C.get_default_dtype()


def _floating_only(input, kernel):  # noqa: A002
    """PyTorch's CPU kernel `kernel` has no integer or bool form: its error,
    not a result silently computed in floating point."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{torch_type_name(input.dtype)}\'')


def _inplace(input, fn, inplace):  # noqa: A002
    """fn(input), or written back into `input` (PyTorch's inplace=True); the
    in-place form returns `input` itself, the same Python object."""
    if not inplace:
        return fn(input)
    _C.assign_(input, fn(_C.source_for_inplace(input)))
    return input


def _bshape(ndim, dim, size):
    shape = [1] * ndim
    shape[dim] = size
    return shape


# -------------------------------------------------------------- linear/conv
def linear(input, weight, bias=None):  # noqa: A002
    """y = x W^T + b."""
    _check_tensor(input, "input", "linear")
    return _C.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T W_k x2 + b_k, weight [out, in1, in2]."""
    _check_bilinear_shapes(input1, input2, weight, bias)
    # [..., in1] x [out, in1, in2] -> [..., out, in2], then contract with x2
    t = _C.matmul(_C.unsqueeze(_C.unsqueeze(input1, -2), -3), weight)  # [..., out, 1, in2]
    out = _C.squeeze(_C.matmul(t, _C.unsqueeze(_C.unsqueeze(input2, -2), -1)), [-1, -2])
    return out if bias is None else _C.add(out, bias)


def _check_bilinear_shapes(input1, input2, weight, bias):
    """PyTorch's checks (and messages) before bilinear broadcasts anything."""
    if input1.ndim != input2.ndim:
        raise _C.InvalidArgument(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise _C.InvalidArgument(f"bilinear(): input batch dimensions do not match: got {input1.shape[i]} "
                                     f"and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise _C.InvalidArgument(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} "
                                 f"but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise _C.InvalidArgument(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} "
                                 f"but expected {weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise _C.InvalidArgument(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} "
                                 f"but expected {weight.shape[0]}")


def _conv_padding(padding, kernel, dilation, stride, nd, fn):
    """padding (int, tuple, 'valid' or 'same') -> per-dim (before, after)."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise _C.InvalidArgument("padding='same' is not supported for strided convolutions")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))  # the odd one goes after, like PyTorch
            return out
        raise _C.InvalidArgument(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    return [(p, p) for p in _ntuple(padding, nd, f"{fn}: padding")]


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    _check_tensor(input, "input", "conv2d")
    _check_tensor(weight, "weight", "conv2d")
    stride = _ntuple(stride, 2, "conv2d: stride")
    dilation = _ntuple(dilation, 2, "conv2d: dilation")
    kernel = tuple(weight.shape[2:]) if weight.ndim == 4 else (1, 1)
    (pt, pb), (pl, pr) = _conv_padding(padding, kernel, dilation, stride, 2, "conv2d")
    return _C.conv2d(input, weight, bias, stride, (pt, pb, pl, pr), dilation, int(groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    _check_tensor(input, "input", "conv1d")
    _check_tensor(weight, "weight", "conv1d")
    (stride,) = _ntuple(stride, 1, "conv1d: stride")
    (dilation,) = _ntuple(dilation, 1, "conv1d: dilation")
    kernel = (weight.shape[2],) if weight.ndim == 3 else (1,)
    ((pl, pr),) = _conv_padding(padding, kernel, (dilation,), (stride,), 1, "conv1d")
    return _C.conv1d(input, weight, bias, stride, (pl, pr), dilation, int(groups))


def _conv_transpose_args(input, weight, padding, nd, fn):  # noqa: A002
    _check_tensor(input, "input", fn)
    _check_tensor(weight, "weight", fn)
    if isinstance(padding, str):
        raise _C.InvalidArgument(f"{fn}: padding must be an int or a tuple of ints, got '{padding}'")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """The adjoint of conv2d with respect to its input; weight [in_channels,
    out_channels/groups, kH, kW]."""
    _conv_transpose_args(input, weight, padding, 2, "conv_transpose2d")
    return _C.conv_transpose2d(input, weight, bias, _ntuple(stride, 2, "conv_transpose2d: stride"),
                               _ntuple(padding, 2, "conv_transpose2d: padding"),
                               _ntuple(output_padding, 2, "conv_transpose2d: output_padding"), int(groups),
                               _ntuple(dilation, 2, "conv_transpose2d: dilation"))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """The adjoint of conv1d with respect to its input; weight [in_channels,
    out_channels/groups, kW]."""
    _conv_transpose_args(input, weight, padding, 1, "conv_transpose1d")
    (s,), (p,) = _ntuple(stride, 1, "conv_transpose1d: stride"), _ntuple(padding, 1, "conv_transpose1d: padding")
    (op,), (d,) = (_ntuple(output_padding, 1, "conv_transpose1d: output_padding"),
                   _ntuple(dilation, 1, "conv_transpose1d: dilation"))
    return _C.conv_transpose1d(input, weight, bias, s, p, op, int(groups), d)


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]."""
    _check_tensor(input, "input", "pixel_shuffle")
    r = int(upscale_factor)
    if input.ndim < 3:
        raise _C.InvalidArgument(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                                 f"{input.ndim} dimension(s)")
    if r <= 0:
        raise _C.InvalidArgument(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise _C.InvalidArgument(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                                 f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = _C.reshape(input, list(lead) + [c // (r * r), r, r, h, w])
    x = _C.permute(x, list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2])
    return suggested_layout(_C.reshape(x, list(lead) + [c // (r * r), h * r, w * r]), input)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W]."""
    _check_tensor(input, "input", "pixel_unshuffle")
    r = int(downscale_factor)
    if input.ndim < 3:
        raise _C.InvalidArgument(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                                 f"{input.ndim} dimension(s)")
    if r <= 0:
        raise _C.InvalidArgument(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise _C.InvalidArgument(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                                 f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise _C.InvalidArgument(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                                 f"input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = _C.reshape(input, list(lead) + [c, h // r, r, w // r, r])
    x = _C.permute(x, list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return suggested_layout(_C.reshape(x, list(lead) + [c * r * r, h // r, w // r]), input)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Sliding blocks [N, C, H, W] -> [N, C*kH*kW, L]."""
    if input.ndim not in (3, 4):
        raise _C.InvalidArgument(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = input if input.ndim == 4 else _C.unsqueeze(input, 0)
    p = _ntuple(padding, 2, "unfold: padding")
    cols = _C.im2col(x, _ntuple(kernel_size, 2, "unfold: kernel_size"), _ntuple(stride, 2, "unfold: stride"),
                     (p[0], p[0], p[1], p[1]), _ntuple(dilation, 2, "unfold: dilation"))
    out = _C.contiguous(_C.permute(cols, [1, 0, 2]))  # row-major, as PyTorch's
    return out if input.ndim == 4 else _C.squeeze(out, [0])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """The adjoint of unfold: [N, C*kH*kW, L] -> [N, C, H, W], summing overlaps."""
    if input.ndim not in (2, 3):
        raise _C.InvalidArgument(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                 f"(got {input.ndim}D)")
    x = input if input.ndim == 3 else _C.unsqueeze(input, 0)
    p = _ntuple(padding, 2, "fold: padding")
    out = _C.col2im(_C.permute(x, [1, 0, 2]), _ntuple(output_size, 2, "fold: output_size"),
                    _ntuple(kernel_size, 2, "fold: kernel_size"), _ntuple(stride, 2, "fold: stride"),
                    (p[0], p[0], p[1], p[1]), _ntuple(dilation, 2, "fold: dilation"))
    return out if input.ndim == 3 else _C.squeeze(out, [0])


# ------------------------------------------------------------------ pooling
def _pool_stride(stride, kernel, name):
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return kernel
    return _ntuple(stride, len(kernel), f"{name}: stride")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    _check_tensor(input, "input", "max_pool2d")
    k = _ntuple(kernel_size, 2, "max_pool2d: kernel_size")
    return _C.max_pool2d(input, k, _pool_stride(stride, k, "max_pool2d"), _ntuple(padding, 2, "max_pool2d: padding"),
                         _ntuple(dilation, 2, "max_pool2d: dilation"), bool(ceil_mode), bool(return_indices))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    _check_tensor(input, "input", "avg_pool2d")
    k = _ntuple(kernel_size, 2, "avg_pool2d: kernel_size")
    return _C.avg_pool2d(input, k, _pool_stride(stride, k, "avg_pool2d"), _ntuple(padding, 2, "avg_pool2d: padding"),
                         bool(ceil_mode), bool(count_include_pad), divisor_override)


def _pool1d_input(input, name):  # noqa: A002
    if input.ndim not in (2, 3):
        raise _C.InvalidArgument(f"{name}: Expected 2D or 3D (batch mode) tensor for input, got input of size: "
                                 f"{list(input.shape)}")
    return _C.unsqueeze(input, -2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    (k,) = _ntuple(kernel_size, 1, "max_pool1d: kernel_size")
    (s,) = _pool_stride(stride, (k,), "max_pool1d")
    (p,) = _ntuple(padding, 1, "max_pool1d: padding")
    (d,) = _ntuple(dilation, 1, "max_pool1d: dilation")
    out = _C.max_pool2d(_pool1d_input(input, "max_pool1d"), (1, k), (1, s), (0, p), (1, d), bool(ceil_mode),
                        bool(return_indices))
    if return_indices:
        return _C.squeeze(out[0], [-2]), _C.squeeze(out[1], [-2])
    return _C.squeeze(out, [-2])


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    (k,) = _ntuple(kernel_size, 1, "avg_pool1d: kernel_size")
    (s,) = _pool_stride(stride, (k,), "avg_pool1d")
    (p,) = _ntuple(padding, 1, "avg_pool1d: padding")
    out = _C.avg_pool2d(_pool1d_input(input, "avg_pool1d"), (1, k), (1, s), (0, p), bool(ceil_mode),
                        bool(count_include_pad), None)
    return _C.squeeze(out, [-2])


def _adaptive_mean(x, n_out):
    """Means of x's last dim over PyTorch's adaptive windows
    [floor(i*n/n_out), ceil((i+1)*n/n_out)). The windows are gathered and the
    positions beyond a short window masked with where(), so an inf or NaN
    stays in its own windows (a matmul with an averaging matrix multiplied
    it by the zeros of every other window)."""
    n = x.shape[-1]
    i = np.arange(n_out)
    start = (i * n) // n_out
    end = -((-(i + 1) * n) // n_out)
    k = int((end - start).max()) if n_out else 0
    pos = start[:, None] + np.arange(k)[None, :]
    valid = pos < end[:, None]
    from .._creation import tensor

    idx = tensor(np.where(valid, pos, 0).reshape(-1).astype(np.int64), device=x.device)
    windows = _C.reshape(_C.index_select(x, -1, idx), list(x.shape[:-1]) + [n_out, k])
    windows = _C.where(tensor(valid, device=x.device), windows, 0.0)
    counts = tensor((end - start).astype(np.float64), dtype=windows.dtype, device=x.device)
    return _C.div(_C.sum(windows, [-1], False), counts)


def _adaptive_size(output_size, in_sizes, name):
    if isinstance(output_size, (tuple, list)):
        sizes = tuple(output_size)
        if len(sizes) == 1:
            sizes = sizes * len(in_sizes)
    else:
        sizes = (output_size,) * len(in_sizes)
    if len(sizes) != len(in_sizes):
        raise _C.InvalidArgument(f"{name}: output_size must be {len(in_sizes)} ints, got {output_size}")
    out = tuple(n if s is None else int(s) for s, n in zip(sizes, in_sizes))
    if any(s < 0 for s in out):
        raise _C.InvalidArgument(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                                 f"{out}")
    return out


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    _check_tensor(input, "input", "adaptive_avg_pool2d")
    _floating_only(input, "adaptive_avg_pool2d")
    if input.ndim not in (3, 4):
        raise _C.InvalidArgument(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    if 0 in tuple(input.shape)[-2:]:  # (no channels is an empty output, as in PyTorch)
        raise _C.InvalidArgument(f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                                 f"dimensions, but input has sizes {list(input.shape)}")
    h, w = input.shape[-2:]
    oh, ow = _adaptive_size(output_size, (h, w), "adaptive_avg_pool2d")
    if oh and ow and h % oh == 0 and w % ow == 0:
        if (oh, ow) == (1, 1):
            return _C.mean(input, [-2, -1], True)
        return avg_pool2d(input, (h // oh, w // ow))
    # Overlapping or uneven windows: along W, then along H.
    x = input if input.dtype.is_floating_point else _C.cast(input, _float_like(input))
    t = _adaptive_mean(x, ow)  # [..., H, ow]
    return _C.transpose(_adaptive_mean(_C.transpose(t, -1, -2), oh), -1, -2)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    if input.ndim not in (2, 3):
        raise _C.InvalidArgument(f"adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got {list(input.shape)}")
    _floating_only(input, "adaptive_avg_pool2d")
    (ol,) = _adaptive_size(output_size, (input.shape[-1],), "adaptive_avg_pool1d")
    x = input
    return _adaptive_mean(x, ol)


# ------------------------------------------------------------ interpolation
_INTERP_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}


def _interp_sizes(input, size, scale_factor, recompute_scale_factor, nd):  # noqa: A002
    """-> (output sizes, the scale each dim's kernel uses or None)."""
    if size is not None and scale_factor is not None:
        raise _C.InvalidArgument("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise _C.InvalidArgument("either size or scale_factor should be defined")
    in_sizes = list(input.shape[2:])
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * nd
        if len(sizes) != nd:
            raise _C.InvalidArgument(f"Input and output must have the same number of spatial dimensions, but got "
                                     f"input with spatial dimensions of {in_sizes} and output size of {size}. "
                                     "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size "
                                     "in (o1, o2, ...,oK) format.")
        if recompute_scale_factor:
            raise _C.InvalidArgument("recompute_scale_factor is not meaningful with an explicit size.")
        return [int(v) for v in sizes], [None] * nd
    factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
    if len(factors) != nd:
        raise _C.InvalidArgument(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {in_sizes} and scale_factor of shape {scale_factor}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                                 "(s1, s2, ...,sK) format.")
    sizes = [int(math.floor(float(n) * float(f))) for n, f in zip(in_sizes, factors)]
    return sizes, [None if recompute_scale_factor else float(f) for f in factors]


def _index_tensor(arr, device):
    from .._creation import tensor

    return tensor(np.ascontiguousarray(arr, dtype=np.int64), device=device)


def _weights_tensor(arr, like):
    from .._creation import tensor

    return tensor(np.ascontiguousarray(arr), dtype=like.dtype, device=like.device)


def _scale(n_in, n_out, scale, align_corners, acc):
    """PyTorch's area_pixel_compute_scale (in the kernel's accumulation type)."""
    if align_corners:
        return acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0)
    if scale is not None and scale > 0:
        return acc(1.0 / scale)
    return acc(acc(n_in) / acc(n_out))


def _resample_dim(x, dim, n_out, mode, align_corners, scale):
    """Resamples dim `dim` of x to n_out points (nearest / nearest-exact:
    one gather; linear: two gathers and a weighted sum)."""
    n_in = x.shape[dim]
    # PyTorch computes source indices in float for float, half and bfloat16 inputs, in double for double.
    acc = np.float64 if x.dtype == _C.dtype.float64 else np.float32
    dst = np.arange(n_out)
    if mode in ("nearest", "nearest-exact"):
        if n_out == n_in and mode == "nearest":  # PyTorch's nearest_idx: equal sizes map one to one
            return x
        s = _scale(n_in, n_out, scale, False, np.float32)
        if mode == "nearest":
            src = np.floor(dst.astype(np.float32) * s)
        else:
            src = np.floor((dst.astype(np.float32) + np.float32(0.5)) * s)
        src = np.minimum(src.astype(np.int64), n_in - 1)
        return _C.index_select(x, dim, _index_tensor(src, x.device))
    s = _scale(n_in, n_out, scale, align_corners, acc)
    if align_corners:
        src = dst.astype(acc) * s
    else:
        src = np.maximum((dst.astype(acc) + acc(0.5)) * s - acc(0.5), acc(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    l1 = np.clip(src - i0.astype(acc), acc(0), acc(1)).astype(acc)
    l0 = (acc(1) - l1).astype(acc)
    shape = [1] * x.ndim
    shape[dim] = n_out
    w0 = _C.reshape(_weights_tensor(l0, x), shape)
    w1 = _C.reshape(_weights_tensor(l1, x), shape)
    a = _C.index_select(x, dim, _index_tensor(i0, x.device))
    b = _C.index_select(x, dim, _index_tensor(i1, x.device))
    return _C.add(_C.mul(a, w0), _C.mul(b, w1))


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial dims of [N, C, *spatial]: 'nearest',
    'nearest-exact', 'linear' (3-D), 'bilinear' (4-D), 'trilinear' (5-D) and
    'area' (adaptive average pooling). Separable: one dim at a time."""
    _check_tensor(input, "input", "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise _C.InvalidArgument("align_corners option can only be set with the interpolating modes: linear | "
                                     "bilinear | bicubic | trilinear")
    elif mode in _INTERP_DIMS:
        align_corners = bool(align_corners)
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode == "bicubic":
        raise NotImplementedError("interpolate: mode 'bicubic' is not supported by lucid")
    if antialias:
        if mode not in ("bilinear", "bicubic") or input.ndim != 4:
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
                             "a 4-D tensor as input")
        raise NotImplementedError("interpolate: antialias=True is not supported by lucid")
    nd = input.ndim - 2
    if nd not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _INTERP_DIMS and _INTERP_DIMS[mode] != nd:
        needs = _INTERP_DIMS[mode] + 2
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needs}D input")
    sizes, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor, nd)
    if any(s <= 0 for s in sizes):
        raise _C.InvalidArgument(f"Input and output sizes should be greater than 0, but got input "
                                 f"({', '.join(map(str, input.shape[2:]))}) and output ({', '.join(map(str, sizes))})")
    if mode == "area":
        if nd == 1:
            return adaptive_avg_pool1d(input, sizes[0])
        if nd == 2:
            return adaptive_avg_pool2d(input, sizes)
        raise NotImplementedError("interpolate: mode 'area' on 5-D input is not supported by lucid")
    if not input.dtype.is_floating_point:  # PyTorch's CPU kernels take floats (and uint8, which Lucid lacks)
        raise NotImplementedError(f"interpolate: mode '{mode}' is not implemented for {input.dtype}")
    kernel_mode = mode if mode in ("nearest", "nearest-exact") else "linear"
    out = input
    for d in reversed(range(nd)):  # innermost first, the order of PyTorch's kernels
        out = _resample_dim(out, 2 + d, sizes[d], kernel_mode, align_corners, scales[d])
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ------------------------------------------------------------ normalization
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-5):
    """Normalizes over every dim but the channel dim (1). In training the
    batch statistics are used and, if given, the running ones are updated in
    place (unbiased variance), as PyTorch does."""
    _check_batch_norm(input, running_mean, running_var, weight, bias, training)
    c = input.shape[1]
    shape = _bshape(input.ndim, 1, c)
    dims = [0] + list(range(2, input.ndim))
    if training or running_mean is None or running_var is None:
        mean = _C.mean(input, dims, True)
        xc = _C.sub(input, mean)
        var = _C.mean(_C.mul(xc, xc), dims, True)
        # an empty batch leaves the running statistics untouched, as PyTorch's does
        if training and running_mean is not None and running_var is not None and input.numel():
            n = input.numel() // c
            with no_grad():
                m = momentum
                _C.assign_(running_mean, _C.add(_C.mul(running_mean, _rsub1(m)), _C.mul(_C.reshape(mean, [c]), m)))
                unbiased = _C.mul(_C.reshape(var, [c]), n / (n - 1))
                _C.assign_(running_var, _C.add(_C.mul(running_var, _rsub1(m)), _C.mul(unbiased, m)))
        out = _C.mul(xc, _C.rsqrt(_C.add(var, eps)))
        if weight is not None:
            out = _C.mul(out, _C.reshape(weight, shape))
        if bias is not None:
            out = _C.add(out, _C.reshape(bias, shape))
        return suggested_layout(out, input)
    # Eval: one scale and shift per channel, then a single pass over x.
    scale = _C.rsqrt(_C.add(running_var, eps))
    if weight is not None:
        scale = _C.mul(scale, weight)
    shift = _C.neg(_C.mul(running_mean, scale))
    if bias is not None:
        shift = _C.add(shift, bias)
    out = _C.add(_C.mul(input, _C.reshape(_C.cast(scale, input.dtype), shape)),
                 _C.reshape(_C.cast(shift, input.dtype), shape))
    return suggested_layout(out, input)


def _check_batch_norm(input, running_mean, running_var, weight, bias, training):  # noqa: A002
    _check_tensor(input, "input", "batch_norm")
    if input.ndim < 2:
        raise _C.InvalidArgument(f"batch_norm: expected at least a 2-D input [N, C, ...], got {list(input.shape)}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise _C.InvalidArgument(f"batch_norm: expected {name} of shape [{c}] (the input's channels), got "
                                     f"{list(t.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise _C.InvalidArgument(f"running_{'mean' if running_mean is None else 'var'} must be defined in "
                                 f"evaluation mode")
    if training and c and input.numel() // c == 1:
        raise _C.InvalidArgument(f"Expected more than 1 value per channel when training, got input size "
                                 f"{list(input.shape)}")


def _rsub1(m):
    return 1.0 - m if not isinstance(m, Tensor) else _C.sub(1.0, m)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalises each (sample, channel) over the spatial dims: batch_norm
    over the input viewed as one sample of N*C channels. Running statistics,
    when given, are updated with the mean over the batch (PyTorch's rule)."""
    _check_tensor(input, "input", "instance_norm")
    if input.ndim < 3:
        raise _C.InvalidArgument(f"instance_norm: expected an input with at least 3 dims [N, C, ...], got "
                                 f"{list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    x = _C.reshape(input, [1, n * c] + list(input.shape[2:]))
    rm = rv = None
    if running_mean is not None:
        rm = _C.reshape(_C.broadcast_to(_C.reshape(running_mean, [1, c]), [n, c]), [n * c])
    if running_var is not None:
        rv = _C.reshape(_C.broadcast_to(_C.reshape(running_var, [1, c]), [n, c]), [n * c])
    if rm is not None and rv is not None and use_input_stats:
        rm, rv = _C.clone(rm), _C.clone(rv)  # batch_norm updates these copies in place
    out = batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None and running_var is not None:
        with no_grad():
            _C.assign_(running_mean, _C.mean(_C.reshape(rm, [n, c]), [0], False))
            _C.assign_(running_var, _C.mean(_C.reshape(rv, [n, c]), [0], False))
    out = _C.reshape(out, list(input.shape))
    shape = _bshape(input.ndim, 1, c)
    if weight is not None:
        out = _C.mul(out, _C.reshape(weight, shape))
    if bias is not None:
        out = _C.add(out, _C.reshape(bias, shape))
    return _C.contiguous(out)  # row-major for any input, channels-last too, as PyTorch's


def _normalized_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def _check_normalized(input, ns, fn):  # noqa: A002
    if len(ns) == 0 or tuple(input.shape[input.ndim - len(ns):]) != ns or len(ns) > input.ndim:
        raise _C.InvalidArgument(f"{fn}: Given normalized_shape={list(ns)}, expected input with shape "
                                 f"[*, {', '.join(map(str, ns))}], but got input of size{list(input.shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    _check_tensor(input, "input", "layer_norm")
    ns = _normalized_shape(normalized_shape)
    _check_normalized(input, ns, "layer_norm")
    out = _C.layer_norm(input, len(ns), eps)
    if weight is not None:
        out = _C.mul(out, weight)
    if bias is not None:
        out = _C.add(out, bias)
    return out


_FINFO_EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps),
              "float16": float(np.finfo(np.float16).eps), "bfloat16": 0.0078125}


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    _check_tensor(input, "input", "rms_norm")
    ns = _normalized_shape(normalized_shape)
    _check_normalized(input, ns, "rms_norm")
    # 16-bit inputs are computed in float32 with float32's eps by default
    # (PyTorch's opmath) and the result rounded to the input's dtype once
    sixteen = input.dtype in (_C.dtype.float16, _C.dtype.bfloat16)
    x = _C.cast(input, _C.dtype.float32) if sixteen else input
    if eps is None:
        eps = _FINFO_EPS.get(str(x.dtype).split(".")[-1], _FINFO_EPS["float32"])
    dims = list(range(-len(ns), 0))
    out = _C.mul(x, _C.rsqrt(_C.add(_C.mean(_C.mul(x, x), dims, True), eps)))
    if weight is not None:
        out = _C.mul(out, weight)
    if sixteen:
        out = _C.cast(out, input.dtype)
    return suggested_layout(out, input)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    _check_tensor(input, "input", "group_norm")
    if input.ndim < 2:
        raise _C.InvalidArgument(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups > 0 and (n * c // num_groups) * math.prod(input.shape[2:]) == 1:
        # PyTorch's check (its _verify_batch_size), made whether training or not
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[n * c // num_groups, num_groups] + list(input.shape[2:])}")
    if num_groups <= 0 or c % num_groups:
        raise _C.InvalidArgument(f"Expected number of channels in input to be divisible by num_groups, but got "
                                 f"input of shape {list(input.shape)} and num_groups={num_groups}")
    x = _C.reshape(input, [n, num_groups, c // num_groups * math.prod(input.shape[2:])])
    mean = _C.mean(x, [-1], True)
    xc = _C.sub(x, mean)
    out = _C.reshape(_C.mul(xc, _C.rsqrt(_C.add(_C.mean(_C.mul(xc, xc), [-1], True), eps))), list(input.shape))
    shape = _bshape(input.ndim, 1, c)
    if weight is not None:
        out = _C.mul(out, _C.reshape(weight, shape))
    if bias is not None:
        out = _C.add(out, _C.reshape(bias, shape))
    return suggested_layout(out, input)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    if out is not None:
        raise TypeError("the out= argument is not supported")
    denom = _C.clamp(_C.norm(input, float(p), [dim], True), eps, None)
    return _C.div(input, denom)


# ---------------------------------------------------------------- embedding
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at `input`. The row at padding_idx gets no gradient.
    `sparse` is accepted for compatibility; gradients are always dense."""
    _check_tensor(input, "input", "embedding")
    if input.dtype not in (_C.dtype.int64, _C.dtype.int32):
        raise _C.TypeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                        f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding)")
    if weight.ndim != 2:
        raise _C.InvalidArgument(f"embedding: 'weight' must be 2-D, got {list(weight.shape)}")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += num
    flat = _C.reshape(input, [-1])
    if max_norm is not None:
        _embedding_renorm_(weight, flat, float(max_norm), float(norm_type))
    out = _C.index_select(weight, 0, flat, "embedding")
    if scale_grad_by_freq:
        # Same value, gradient scaled by 1 / (occurrences of the index in input).
        counts = _C.index_add(_C.full([num, 1], 0.0, weight.dtype, weight.device), 0, flat,
                              _C.full([flat.shape[0], 1], 1.0, weight.dtype, weight.device))
        s = _C.reciprocal(_C.index_select(counts, 0, flat))
        out = _C.add(_C.mul(out, s), _C.mul(out.detach(), _C.sub(1.0, s)))
    if padding_idx is not None:
        mask = _C.unsqueeze(_C.eq(flat, padding_idx), -1)
        out = _C.where(mask, out.detach(), out)
    return _C.reshape(out, list(input.shape) + [weight.shape[1]])


def _embedding_renorm_(weight, flat, max_norm, norm_type):
    """Rescales, in place, the rows used by `flat` whose norm exceeds max_norm."""
    with no_grad():
        w = weight.detach()
        used = _C.gt(_C.index_add(_C.full([w.shape[0]], 0.0, w.dtype, w.device), 0, flat,
                                  _C.full([flat.shape[0]], 1.0, w.dtype, w.device)), 0.0)
        norms = _C.norm(w, norm_type, [1], True)
        scale = _C.where(_C.logical_and(_C.unsqueeze(used, 1), _C.gt(norms, max_norm)),
                         _C.div(max_norm, _C.add(norms, 1e-7)), 1.0)
        _C.assign_(weight, _C.mul(w, scale))


# ------------------------------------------------------------------ dropout
def _check_p(p):
    if not 0.0 <= p <= 1.0:  # (NaN too)
        raise _C.InvalidArgument(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes each element with probability p and scales the rest by
    1/(1-p). The mask is drawn with lucid's generator (a fresh draw per call,
    and per step of a compiled training loop)."""
    _check_p(p)
    if not training or p == 0.0:
        return input

    def fn(x):
        if p == 1.0:
            return _C.mul(x, 0.0)
        u = _C.rand(list(x.shape), _float_like(x), x.device)
        keep = _C.mul(_C.cast(_C.lt(u, 1.0 - p), x.dtype), 1.0 / (1.0 - p))
        return _C.mul(x, keep)

    return _inplace(input, fn, inplace)


def _feature_dropout(input, p, training, inplace, batched_ndim, fn):  # noqa: A002
    """Zeroes whole channels: one draw per (sample, channel), broadcast over
    the remaining dims; the kept channels are scaled by 1/(1-p)."""
    _check_p(p)
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise _C.InvalidArgument(f"{fn}: Expected {batched_ndim - 1}D or {batched_ndim}D input, but received a "
                                 f"{input.ndim}D input. Note that {fn} exists to provide channel-wise dropout on "
                                 f"inputs with {batched_ndim - 2} spatial dimensions, a channel dimension, and an "
                                 "optional batch dimension (i.e. "
                                 f"{batched_ndim - 1}D or {batched_ndim}D inputs).")
    if not training or p == 0.0:
        return input
    lead = 2 if input.ndim == batched_ndim else 1  # (N, C) or (C,)

    def fn_(x):
        if p == 1.0:
            return _C.mul(x, 0.0)
        shape = list(x.shape[:lead]) + [1] * (x.ndim - lead)
        u = _C.rand(shape, _float_like(x), x.device)
        keep = _C.mul(_C.cast(_C.lt(u, 1.0 - p), x.dtype), 1.0 / (1.0 - p))
        return _C.mul(x, keep)

    return _inplace(input, fn_, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if input.ndim == 2:
        warnings.warn("dropout2d: Received a 2-D input to dropout2d, which is deprecated and will result in an error "
                      "in a future release. To retain the behavior and silence this warning, please use dropout "
                      "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
                      stacklevel=2)
        return dropout(input, p, training, inplace)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
        return _feature_dropout(input, p, training, inplace, 3, "dropout2d")
    return _feature_dropout(input, p, training, inplace, 4, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout(input, p, training, inplace, 5, "dropout3d")


# ---------------------------------------------------------------------- pad
def _pad_index(n, lo, hi, mode):
    i = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise _C.InvalidArgument(f"Padding size should be less than the corresponding input dimension, but got: "
                                     f"padding ({lo}, {hi}) at a dimension of size {n}")
        period = 2 * (n - 1)
        i = np.abs(i) % period if period else np.zeros_like(i)
        i = np.where(i >= n, period - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, n - 1)
    elif mode == "circular":
        if lo > n or hi > n:
            raise _C.InvalidArgument("Padding value causes wrapping around more than once.")
        i = i % n
    return i.astype(np.int64)


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """Pads the last len(pad)//2 dims; pad = (last_lo, last_hi, prev_lo, ...)."""
    _check_tensor(input, "input", "pad")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise _C.InvalidArgument("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise _C.InvalidArgument("Padding length too large")
    if mode == "constant":
        return _C.pad(input, pad, 0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise _C.InvalidArgument(f'Padding mode "{mode}" doesn\'t take in value argument')
    if not (1 <= len(pad) // 2 <= 3 and input.ndim - len(pad) // 2 in (1, 2)):
        # PyTorch pads 1-3 trailing dims of a batched or unbatched input, nothing else
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular" and 0 in tuple(input.shape)[1:]:
        raise _C.InvalidArgument(f"{mode} padding: expected a tensor with possibly 0 batch size and other non-zero "
                                 f"dimensions for input, got {list(input.shape)}")
    from .._creation import tensor

    out = input
    for k in range(len(pad) // 2):
        d = input.ndim - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        if lo or hi:
            out = _C.index_select(out, d, tensor(_pad_index(input.shape[d], lo, hi, mode), device=input.device))
    return out


# -------------------------------------------------------------- activations
def relu(input, inplace=False):  # noqa: A002
    return _inplace(input, _C.relu, inplace)


def relu6(input, inplace=False):  # noqa: A002
    return hardtanh(input, 0.0, 6.0, inplace)


def _inside(x, lo, hi):
    """x where lo < x < hi, else nothing: the mask of PyTorch's hardtanh /
    hardsigmoid derivatives, which are 0 at the corners (clamp's is 1)."""
    return _C.logical_and(_C.gt(x, lo), _C.lt(x, hi))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.dtype.is_floating_point and input.dtype != _C.dtype.bool:
        # an integer input keeps its dtype, the bounds truncated to integers (PyTorch's)
        min_val, max_val = int(min_val), int(max_val)

    def fn(x):
        return _C.where(_inside(x, min_val, max_val), x, _C.clamp(x.detach(), min_val, max_val))
    return _inplace(input, fn, inplace)


def threshold(input, threshold, value, inplace=False):  # noqa: A002
    # PyTorch: x <= threshold ? value : x (a NaN input or threshold keeps x),
    # in the input's dtype (an integer input takes both as integers).
    if input.dtype == _C.dtype.bool:
        raise NotImplementedError('"threshold_cpu" not implemented for \'Bool\'')
    if not input.dtype.is_floating_point:
        threshold = _C.full([], threshold, input.dtype, input.device)
        value = _C.full([], value, input.dtype, input.device)
    return _inplace(input, lambda x: _C.where(_C.le(x, threshold), value, x), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    _floating_only(input, "leaky_relu_cpu")
    return _inplace(input, lambda x: _C.where(_C.gt(x, 0), x, _C.mul(x, negative_slope)), inplace)


def _exponential_below_zero(x, scale, alpha):
    """where(x > 0, x, alpha * expm1(x / scale)), the branch not taken fed a
    zero: expm1 of a large x overflows, and its inf times where's zero
    cotangent would make the gradient NaN where PyTorch's is 1."""
    positive = _C.gt(x, 0)
    below = _C.where(positive, _C.wrap_scalar(0.0, x), x)
    return _C.where(positive, x, _C.mul(_C.expm1(_C.div(below, scale)), alpha))


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    _floating_only(input, "elu_cpu")
    return _inplace(input, lambda x: _exponential_below_zero(x, 1.0, alpha), inplace)


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    _floating_only(input, "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _inplace(input, lambda x: _exponential_below_zero(x, alpha, alpha), inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):  # noqa: A002
    _floating_only(input, "elu_cpu")
    return _inplace(input, lambda x: _C.mul(_exponential_below_zero(x, 1.0, _SELU_ALPHA), _SELU_SCALE), inplace)


def gelu(input, approximate="none"):  # noqa: A002
    _floating_only(input, "GeluKernelImpl")
    if approximate not in ("none", "tanh"):
        raise _C.InvalidArgument(f"approximate argument must be either none or tanh, got '{approximate}'")
    return _C.gelu(input, approximate == "tanh")


def silu(input, inplace=False):  # noqa: A002
    _floating_only(input, "silu_cpu")
    return _inplace(input, _C.silu, inplace)


def mish(input, inplace=False):  # noqa: A002
    _floating_only(input, "mish_cpu")
    return _inplace(input, lambda x: _C.mul(x, _C.tanh(_C.softplus(x, 1.0, 20.0))), inplace)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    _floating_only(input, "softplus_cpu")
    return _C.softplus(input, float(beta), float(threshold))


def softsign(input):  # noqa: A002
    return _C.div(input, _C.add(_C.abs(input), 1.0))


def _in_float32(fn, x, *others):
    """fn computed in float32 for half-precision inputs and rounded once (as
    PyTorch's kernels compute them), so a composite's intermediate roundings
    do not add up (1 - sigmoid(-x) cancels in float16)."""
    if x.dtype not in (_C.dtype.float16, _C.dtype.bfloat16):
        return fn(x, *others)
    up = [None if t is None else _C.cast(t, _C.dtype.float32) for t in (x,) + others]
    return _C.cast(fn(*up), x.dtype)


def _logsigmoid(x):
    # min(x, 0) - log1p(exp(-|x|)): exact where exp(x) is below x's ulp (a
    # softplus thresholded at 20 drops it there); minimum's tie split gives
    # the derivative sigmoid(0) = 1/2 at 0.
    return _C.sub(_C.minimum(x, _C.wrap_scalar(0.0, x)), _C.log1p(_C.exp(_C.neg(_C.abs(x)))))


def logsigmoid(input):  # noqa: A002
    _floating_only(input, "log_sigmoid_cpu")
    return _C.contiguous(_in_float32(_logsigmoid, input))  # row-major, as PyTorch's


def hardsigmoid(input, inplace=False):  # noqa: A002
    _floating_only(input, "hardsigmoid_cpu")
    # relu6(x + 3) / 6; the derivative, 1/6, is 0 outside (-3, 3) and at the corners (PyTorch's)
    def fn(x):
        return _C.div(_C.where(_inside(x, -3.0, 3.0), _C.add(x, 3.0), _C.clamp(_C.add(x.detach(), 3.0), 0.0, 6.0)),
                      6.0)
    return _inplace(input, fn, inplace)


def hardswish(input, inplace=False):  # noqa: A002
    _floating_only(input, "hardswish_cpu")
    # x * relu6(x + 3) / 6 rounded in PyTorch's order; the derivative is 0 for
    # x <= -3, x/3 + 1/2 inside, 1 from x = 3 on (PyTorch's corners)
    def fn(x):
        middle = _C.div(_C.mul(x, _C.add(x, 3.0)), 6.0)
        return _C.where(_C.le(x, -3.0), _C.mul(x.detach(), 0.0), _C.where(_C.lt(x, 3.0), middle, x))
    return _inplace(input, fn, inplace)


def tanh(input):  # noqa: A002
    return _C.tanh(input)


def sigmoid(input):  # noqa: A002
    return _C.sigmoid(input)


def _softmax_dim(name, ndim):
    _warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
          "as an argument.")
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    return _C.softmax(input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    return _C.softmax(_C.neg(input), dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    if dtype is not None:
        input = _C.cast(input, to_dtype(dtype))
    return _C.log_softmax(input, dim)


def glu(input, dim=-1):  # noqa: A002
    _floating_only(input, "glu_cpu")
    if input.ndim == 0:
        raise _C.InvalidArgument("glu does not support scalars because halving size must be even")
    n = input.shape[_wrap_dim(dim, input.ndim)]
    if n % 2:
        raise _C.InvalidArgument(f"Halving dimension must be even, but dimension {dim} is size {n}")
    a, b = _C.narrow(input, dim, 0, n // 2), _C.narrow(input, dim, n // 2, n // 2)
    return _C.mul(a, _C.sigmoid(b))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum((x1 / |x1|) * (x2 / |x2|)) over dim, each norm floored at eps in
    value only: its gradient stays the norm's (PyTorch clamps the norms in
    place under no_grad)."""
    x1, x2 = _broadcast_pair(x1, x2, "cosine_similarity")

    def floored_norm(x):
        n = _C.norm(x, 2.0, [dim], True)
        with no_grad():
            lift = _C.sub(_C.clamp(n, eps, None), n)
        return _C.add(n, lift)

    return _C.sum(_C.mul(_C.div(x1, floored_norm(x1)), _C.div(x2, floored_norm(x2))), [dim], False)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _C.norm(_C.add(_C.sub(x1, x2), eps), float(p), [-1], keepdim)


# ---------------------------------------------------------------- attention
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v over the last two dims. A boolean
    attn_mask marks the positions that may be attended (True = keep)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_tensor(t, name, "scaled_dot_product_attention")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise _C.InvalidArgument("scaled_dot_product_attention: query, key and value must be at least 2-D")
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if key.shape[-1] != E:
        raise _C.InvalidArgument(f"scaled_dot_product_attention: query and key must have the same embedding size, "
                                 f"got {E} and {key.shape[-1]}")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk:
            raise _C.InvalidArgument(f"scaled_dot_product_attention: {hq} query heads are not a multiple of {hk} "
                                     "key/value heads")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hk)
    s = 1.0 / math.sqrt(E) if scale is None else float(scale)
    scores = _C.mul(_C.matmul(query, _C.transpose(key, -2, -1)), s)
    attn = None
    if is_causal:
        if attn_mask is not None:
            raise _C.InvalidArgument("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                                     "is_causal=True")
        causal = _C.tril(_C.full([L, S], True, _C.dtype.bool, query.device))
        scores = _C.where(causal, scores, -_INF)
    elif attn_mask is not None:
        if attn_mask.dtype == _C.dtype.bool:
            scores = _C.where(attn_mask, scores, -_INF)
        else:
            scores = _C.add(scores, _C.cast(attn_mask, scores.dtype))
        # A query that may attend to nothing gets zeros (PyTorch's safe
        # softmax), with a zero gradient rather than NaN.
        dead = _C.all(_C.eq(scores, -_INF), [-1], True)
        attn = _C.where(dead, 0.0, _C.softmax(_C.where(dead, 0.0, scores), -1))
    if attn is None:
        attn = _C.softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return _C.matmul(attn, value)


def _repeat_heads(t, r):
    shape = list(t.shape)
    x = _C.unsqueeze(t, -3)  # [..., Hk, 1, S, E]
    x = _C.broadcast_to(x, shape[:-2] + [r] + shape[-2:])
    return _C.reshape(x, shape[:-3] + [shape[-3] * r] + shape[-2:])


def _canonical_mask(mask, name, dtype):
    """A boolean mask (True = masked out) -> an additive float mask."""
    if mask is None:
        return None
    if mask.dtype == _C.dtype.bool:
        return _C.where(mask, -_INF, _C.full([], 0.0, dtype, mask.device))
    if not mask.dtype.is_floating_point:
        raise TypeError(f"only bool and floating types of {name} are supported")
    return _C.cast(mask, dtype)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's MHA on sequence-first inputs: query [L, N, E] (or [L, E]),
    key/value [S, N, E]; returns (output [L, N, E], weights or None)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k / static_v are not supported")
    batched = query.ndim == 3
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise _C.InvalidArgument(f"query, key and value must be all 2-D (unbatched) or all 3-D (batched), got "
                                 f"{query.ndim}-D, {key.ndim}-D and {value.ndim}-D")
    if not batched:
        query, key, value = (_C.unsqueeze(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = _C.unsqueeze(key_padding_mask, 0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if embed_dim % num_heads:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {list(key.shape)} does not match value shape {list(value.shape)}")
    head_dim = embed_dim // num_heads
    dt = query.dtype
    if key_padding_mask is not None and tuple(key_padding_mask.shape) != (bsz, src_len):
        raise _C.InvalidArgument(f"expecting key_padding_mask shape of {[bsz, src_len]}, but got "
                                 f"{list(key_padding_mask.shape)}")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", dt)
    if is_causal and attn_mask is None:
        raise _C.InvalidArgument("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                                 "module method `generate_square_subsequent_mask` to create this mask.")
    attn_mask = _canonical_mask(attn_mask, "attn_mask", dt)

    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise _C.InvalidArgument("use_separate_proj_weight is False but in_proj_weight is None")
        E = embed_dim
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = _C.split(in_proj_bias, [E, E, E], 0)
        if query is key and key is value:
            q, k, v = _C.chunk(linear(query, in_proj_weight, in_proj_bias), 3, -1)
        else:
            wq, wk, wv = _C.split(in_proj_weight, [E, E, E], 0)
            q = linear(query, wq, bq)
            k = linear(key, wk, bk)
            v = linear(value, wv, bv)
    else:
        E = embed_dim
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = _C.split(in_proj_bias, [E, E, E], 0)
        q = linear(query, q_proj_weight, bq)
        k = linear(key, k_proj_weight, bk)
        v = linear(value, v_proj_weight, bv)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise _C.InvalidArgument(f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, but should be "
                                         f"{[tgt_len, src_len]}.")
            attn_mask = _C.unsqueeze(attn_mask, 0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise _C.InvalidArgument(f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, but should be "
                                         f"{[bsz * num_heads, tgt_len, src_len]}.")
        else:
            raise _C.InvalidArgument(f"attn_mask's dimension {attn_mask.ndim} is not supported")

    if bias_k is not None and bias_v is not None:
        k = _C.cat([k, _C.broadcast_to(_C.reshape(bias_k, [1, 1, E]), [1, bsz, E])], 0)
        v = _C.cat([v, _C.broadcast_to(_C.reshape(bias_v, [1, 1, E]), [1, bsz, E])], 0)
        if attn_mask is not None:
            attn_mask = _C.pad(attn_mask, [0, 1], 0.0)
        if key_padding_mask is not None:
            key_padding_mask = _C.pad(key_padding_mask, [0, 1], 0.0)

    # [len, N, E] -> [N*H, len, hd]
    q = _C.transpose(_C.reshape(q, [tgt_len, bsz * num_heads, head_dim]), 0, 1)
    k = _C.transpose(_C.reshape(k, [k.shape[0], bsz * num_heads, head_dim]), 0, 1)
    v = _C.transpose(_C.reshape(v, [v.shape[0], bsz * num_heads, head_dim]), 0, 1)
    if add_zero_attn:
        zeros = _C.full([bsz * num_heads, 1, head_dim], 0.0, dt, q.device)
        k = _C.cat([k, zeros], 1)
        v = _C.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = _C.pad(attn_mask, [0, 1], 0.0)
        if key_padding_mask is not None:
            key_padding_mask = _C.pad(key_padding_mask, [0, 1], 0.0)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        kpm = _C.broadcast_to(_C.reshape(key_padding_mask, [bsz, 1, 1, src_len]), [bsz, num_heads, 1, src_len])
        kpm = _C.reshape(kpm, [bsz * num_heads, 1, src_len])
        attn_mask = kpm if attn_mask is None else _C.add(attn_mask, kpm)
    if not training:
        dropout_p = 0.0

    scores = _C.matmul(_C.mul(q, 1.0 / math.sqrt(head_dim)), _C.transpose(k, -2, -1))  # [N*H, L, S]
    if attn_mask is not None:
        scores = _C.add(scores, attn_mask)
    weights = _C.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    out = _C.matmul(weights, v)  # [N*H, L, hd]
    out = _C.reshape(_C.transpose(out, 0, 1), [tgt_len * bsz, embed_dim])
    out = _C.reshape(linear(out, out_proj_weight, out_proj_bias), [tgt_len, bsz, embed_dim])
    if not batched:
        out = _C.squeeze(out, [1])
    if not need_weights:
        return out, None
    weights = _C.reshape(weights, [bsz, num_heads, tgt_len, src_len])
    if average_attn_weights:
        weights = _C.mean(weights, [1], False)
    if not batched:
        weights = _C.squeeze(weights, [0])
    return out, weights


# ------------------------------------------------------------------- losses
def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _C.mean(loss, None, False)
    if reduction == "sum":
        return _C.sum(loss, None, False)
    raise _C.InvalidArgument(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction, allowed=("none", "mean", "sum")):
    if reduction not in allowed:
        raise _C.InvalidArgument(f"{reduction} is not a valid value for reduction")


def _check_logits(input, target, fn):  # noqa: A002
    """The input of a classification loss: floating scores with a class dim."""
    if not input.dtype.is_floating_point:
        hint = ""
        if target.dtype.is_floating_point and target.ndim == input.ndim + 1:
            hint = (f"; the target ({target.dtype}, shape {list(target.shape)}) looks like the scores: pass them "
                    f"first, {fn}(input, target)")
        raise TypeError(f"{fn}(): input must hold floating-point scores, got {input.dtype} of shape "
                        f"{list(input.shape)}{hint}")
    if input.ndim < 1:
        raise _C.InvalidArgument(f"{fn}(): input must have at least one dimension (a class dimension), got a 0-d "
                                 f"tensor")


def _check_class_weight(weight, c, fn):
    if weight is not None and tuple(weight.shape) != (c,):
        raise _C.InvalidArgument(f"{fn}(): weight tensor should be defined either for all {c} classes or no classes "
                                 f"but got weight tensor of shape: {list(weight.shape)}")


def _nll(logp, target, weight, ignore_index, reduction, fn):
    """Negative log-likelihood of class indices; class dim 1 (0 if 1-D)."""
    cdim = 0 if logp.ndim == 1 else 1
    expect = [] if logp.ndim == 1 else [logp.shape[0]] + list(logp.shape[2:])
    if target.dtype.is_floating_point or target.dtype == _C.dtype.bool:
        raise _C.TypeError(f"{fn}(): expected a target of class indices (an integer dtype, shape {expect}), got "
                        f"{target.dtype} of shape {list(target.shape)}; convert it with target.long()")
    if logp.ndim == 1:
        if target.ndim != 0:
            raise _C.InvalidArgument(f"{fn}(): expected a 0-D target for a 1-D input of shape {list(logp.shape)}, "
                                     f"got target of size {list(target.shape)}")
    else:
        if target.ndim >= 1 and target.shape[0] != logp.shape[0]:
            raise _C.InvalidArgument(f"{fn}(): Expected input batch_size ({logp.shape[0]}) to match target "
                                     f"batch_size ({target.shape[0]}) (input {list(logp.shape)}, target "
                                     f"{list(target.shape)}).")
        if list(target.shape) != expect:
            raise _C.InvalidArgument(f"{fn}(): Expected target size {expect} for input of shape "
                                     f"{list(logp.shape)} (classes along dim 1), got {list(target.shape)}")
    c = logp.shape[cdim]
    _check_class_weight(weight, c, fn)
    t = _C.cast(target, _C.dtype.int64)
    valid = _C.ne(t, ignore_index)
    safe = _C.where(valid, t, 0)
    # An out-of-range class raises IndexError naming `fn` (eagerly and in a compiled step).
    picked = _C.squeeze(_C.gather_targets(logp, cdim, _C.unsqueeze(safe, cdim), fn), [cdim])
    w = _C.cast(valid, logp.dtype)
    if weight is not None:
        w = _C.mul(w, _C.reshape(_C.index_select(_C.cast(weight, logp.dtype), 0, _C.reshape(safe, [-1]), fn),
                                 list(safe.shape)))
    loss = _C.neg(_C.mul(picked, w))
    if reduction == "none":
        return loss, valid, w
    if reduction == "sum":
        return _C.sum(loss, None, False), valid, w
    return _weighted_mean(_C.sum(loss, None, False), _C.sum(w, None, False)), valid, w


def _weighted_mean(total, weight):
    """total / weight, with PyTorch's answer when every target is ignored
    (weight 0): a NaN loss whose gradient is zero, not 0 * inf = NaN."""
    empty = _C.eq(weight, 0)
    return _C.where(empty, float("nan"), _C.div(total, _C.where(empty, 1.0, weight)))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    _check_tensor(input, "input", "nll_loss")
    _check_tensor(target, "target", "nll_loss")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_logits(input, target, "nll_loss")
    return _nll(input, target, weight, ignore_index, reduction, "nll_loss")[0]


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits `input` (class dim 1, or 0 for a 1-D input)
    against class indices or class probabilities."""
    _check_tensor(input, "input", "cross_entropy")
    _check_tensor(target, "target", "cross_entropy")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise _C.InvalidArgument(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    _check_logits(input, target, "cross_entropy")
    cdim = 0 if input.ndim == 1 else 1
    c = input.shape[cdim]
    _check_class_weight(weight, c, "cross_entropy")  # before the reshape below, which would name itself
    logp = _C.log_softmax(input, cdim)
    wb = None if weight is None else _C.reshape(_C.cast(weight, logp.dtype), _bshape(input.ndim, cdim, c))
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            indices = [] if input.ndim == 1 else [input.shape[0]] + list(input.shape[2:])
            raise _C.InvalidArgument(
                f"cross_entropy(): a floating-point target holds class probabilities and must have the input's "
                f"shape {list(input.shape)}, got {target.dtype} of shape {list(target.shape)}; for class indices, "
                f"pass an integer target of shape {indices} (target.long())")
        if ignore_index >= 0:
            raise _C.InvalidArgument("ignore_index is not supported for floating point target")
        t = _C.cast(target, logp.dtype)
        if label_smoothing > 0:
            t = _C.add(_C.mul(t, 1.0 - label_smoothing), label_smoothing / c)
        prod = _C.mul(logp, t)
        if wb is not None:
            prod = _C.mul(prod, wb)
        loss = _C.neg(_C.sum(prod, [cdim], False))
        if reduction == "mean":
            return _C.div(_C.sum(loss, None, False), float(input.numel() // c) if c else float("nan"))
        return _reduce(loss, reduction)
    nll, valid, w = _nll(logp, target, weight, ignore_index, reduction, "cross_entropy")
    if label_smoothing <= 0:
        return nll
    smooth = _C.neg(_C.sum(logp if wb is None else _C.mul(logp, wb), [cdim], False))
    smooth = _C.where(valid, smooth, 0.0)
    if reduction == "mean":
        smooth = _weighted_mean(_C.sum(smooth, None, False), _C.sum(w, None, False))
    elif reduction == "sum":
        smooth = _C.sum(smooth, None, False)
    return _C.add(_C.mul(nll, 1.0 - label_smoothing), _C.mul(smooth, label_smoothing / c))


def _pointwise_target(input, target, fn):  # noqa: A002
    """Warns about a broadcasting target, then broadcasts both (as PyTorch
    does: a 0-d target then takes part in type promotion like any tensor)."""
    _check_tensor(input, "input", fn)
    if not isinstance(target, Tensor):
        raise TypeError(f"{fn}(): argument 'target' must be Tensor, not {type(target).__name__}")
    if target.dtype == _C.dtype.bool and fn != "l1_loss":  # promoted first, as PyTorch's (l1_loss subtracts as is)
        target = _C.cast(target, _C.result_type(input, target))
    if tuple(target.shape) == tuple(input.shape):
        return input, target
    _warn(f"{fn}(): Using a target size ({list(target.shape)}) that is different to the input size "
          f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
          "Please ensure they have the same size.")
    return _broadcast_pair(input, target, fn)


def _broadcast_pair(a, b, fn):
    """Both tensors broadcast to their common shape."""
    sa, sb = list(a.shape), list(b.shape)
    n = max(len(sa), len(sb))
    sa, sb = [1] * (n - len(sa)) + sa, [1] * (n - len(sb)) + sb
    if any(x != y and 1 not in (x, y) for x, y in zip(sa, sb)):
        raise _C.InvalidArgument(f"{fn}(): shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast together")
    shape = [y if x == 1 else x for x, y in zip(sa, sb)]
    return _C.broadcast_to(a, shape), _C.broadcast_to(b, shape)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    if not input.dtype.is_floating_point and not target.dtype.is_floating_point:
        _floating_only(input, "mse_cpu")
    input, target = _pointwise_target(input, target, "mse_loss")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    d = _C.sub(input, target)
    loss = _C.mul(d, d)
    if weight is not None:
        loss = _C.mul(loss, weight)
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):  # noqa: A002
    input, target = _pointwise_target(input, target, "l1_loss")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = _C.abs(_C.sub(input, target))
    if weight is not None:
        loss = _C.mul(loss, weight)
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    input, target = _pointwise_target(input, target, "smooth_l1_loss")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise _C.InvalidArgument("smooth_l1_loss does not support negative values for beta.")
    d = _C.abs(_C.sub(input, target))
    if beta == 0.0:
        return _reduce(d, reduction)
    loss = _C.where(_C.lt(d, beta), _C.div(_C.mul(_C.mul(d, d), 0.5), beta), _C.sub(d, 0.5 * beta))
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    input, target = _pointwise_target(input, target, "huber_loss")
    target = _C.cast(target, input.dtype)  # PyTorch computes huber_loss in the input's dtype
    _check_reduction(reduction)
    if delta <= 0:
        raise _C.InvalidArgument("huber_loss does not support non-positive values for delta.")
    d = _C.abs(_C.sub(input, target))
    loss = _C.where(_C.lt(d, delta), _C.mul(_C.mul(d, d), 0.5), _C.mul(_C.sub(d, 0.5 * delta), delta))
    if weight is not None:
        loss = _C.mul(loss, weight)
    return _reduce(loss, reduction)


_BCE_EPS = float(np.float32(1e-12))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """-(t log x + (1-t) log(1-x)), each log clamped at -100 like PyTorch."""
    _check_tensor(input, "input", "binary_cross_entropy")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise _C.InvalidArgument(f"Using a target size ({list(target.shape)}) that is different to the input size "
                                 f"({list(input.shape)}) is deprecated. Please ensure they have the same size.")
    if not (input.is_symbolic or target.is_symbolic) and input.numel():
        # PyTorch's kernel checks the values; a compiled step cannot read them.
        for name, t in (("input", input), ("target", target)):
            t = t.detach()
            if not _C.all(_C.logical_and(_C.ge(t, 0.0), _C.le(t, 1.0)), None, False).item():
                raise _C.InvalidArgument(f"binary_cross_entropy(): all elements of {name} should be between 0 and 1")
    x = input.detach()
    log_x = _C.clamp(_C.log(x), -100.0, None)
    log_1mx = _C.clamp(_C.log1p(_C.neg(x)), -100.0, None)
    loss = _C.neg(_C.add(_C.mul(target, log_x), _C.mul(_C.sub(1.0, target), log_1mx)))
    if input.requires_grad:
        # Where x (1 - x) >= 1e-12 (as a float) no clamp is active: the plain
        # formula, differentiable to any order. Elsewhere PyTorch's derivative,
        # (x - t) / max((1 - x) x, 1e-12), instead of the chain rule through the
        # clamped logs, which gives 0 * inf = NaN where the input saturates.
        # (The target's derivative there stays that of the clamped logs: finite
        # where PyTorch's -logit(x) is infinite.)
        t = target.detach()
        spread = _C.mul(_C.sub(1.0, x), x)
        dx = _C.div(_C.sub(x, t), _C.clamp(spread, _BCE_EPS, None))
        saturated = _C.add(loss, _C.mul(_C.sub(input, x), dx))
        inside = _C.ge(spread, _BCE_EPS)
        xs = _C.where(inside, input, 0.5)
        plain = _C.neg(_C.add(_C.mul(target, _C.log(xs)), _C.mul(_C.sub(1.0, target), _C.log1p(_C.neg(xs)))))
        loss = _C.where(inside, plain, saturated)
    if weight is not None:
        loss = _C.mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in the stable form
    (1-t) x + (1 + (pw-1) t) softplus(-x)."""
    _check_tensor(input, "input", "binary_cross_entropy_with_logits")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise _C.InvalidArgument(f"Target size ({list(target.shape)}) must be the same as input size "
                                 f"({list(input.shape)})")

    def pointwise(x, t, pw):
        sp = _C.neg(_logsigmoid(x))  # -log(sigmoid(x))
        if pw is not None:
            sp = _C.mul(sp, _C.add(_C.mul(_C.sub(pw, 1.0), t), 1.0))
        return _C.add(_C.mul(_C.sub(1.0, t), x), sp)

    loss = _in_float32(pointwise, input, target, pos_weight)
    if weight is not None:
        loss = _C.mul(loss, weight)
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    """KL(target || exp(input)) pointwise: input holds log-probabilities."""
    _check_tensor(input, "input", "kl_div")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction, ("none", "mean", "sum", "batchmean"))
    if reduction == "mean":
        _warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
              "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
              "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if log_target:
        loss = _C.mul(_C.exp(target), _C.sub(target, input))
    else:
        # xlogy(t, t) with 0 log 0 = 0 (and a finite gradient there)
        # (NaN for a negative target, whose log is NaN, as PyTorch's)
        pos = _C.gt(target, 0.0)
        safe = _C.where(pos, target, 1.0)
        zero = _C.mul(target, 0.0)  # of target's dtype (NaN where target is NaN)
        entropy = _C.where(pos, _C.mul(target, _C.log(safe)), _C.where(_C.lt(target, 0.0), float("nan"), zero))
        loss = _C.sub(entropy, _C.mul(target, input))
    if reduction == "batchmean":
        total = _C.sum(loss, None, False)
        return _C.div(total, float(input.shape[0])) if input.ndim else total
    return _reduce(loss, reduction)


# Autocast: the losses are on PyTorch's float32 list: under autocast their
# 16-bit inputs are computed in float32.
def _autocast_fp32(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _C.autocast_state()[0]:
            return fn(*args, **kwargs)
        from ..amp.autocast_mode import cast_fp32

        return fn(*cast_fp32(*args), **dict(zip(kwargs, cast_fp32(*kwargs.values()))))

    return wrapper


from ._functional_composite import *  # noqa: E402,F401,F403
from ._functional_composite import __all__ as _composite_names  # noqa: E402

__all__ += _composite_names

from ._functional_volumetric import *  # noqa: E402,F401,F403
from ._functional_volumetric import __all__ as _volumetric_names  # noqa: E402

__all__ += _volumetric_names

from ._functional_sequence import *  # noqa: E402,F401,F403
from ._functional_sequence import __all__ as _sequence_names  # noqa: E402

__all__ += _sequence_names

from ._functional_sampling import *  # noqa: E402,F401,F403
from ._functional_sampling import __all__ as _sampling_names  # noqa: E402

__all__ += _sampling_names

for _name in ("nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
              "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss",
              "hinge_embedding_loss", "cosine_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
              "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "multi_margin_loss",
              "multilabel_margin_loss", "ctc_loss"):
    globals()[_name] = _autocast_fp32(globals()[_name])
del _name
