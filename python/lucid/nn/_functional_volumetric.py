"""Volumetric (3-D) convolution and pooling, and max unpooling, composed of
the 2-D primitives (so each differentiates and traces like them).

The depth axis is handled by a gather: for each output depth the input
slices under the kernel's depth taps are gathered once, after which
- conv3d is one conv2d over the batch of output depths, the depth taps
  folded into the input channels (the weight [O, C/g, kd, kh, kw] read as
  [O, kd*C/g, kh, kw]); its im2col holds what a direct conv3d's would;
- conv_transpose3d is one conv_transpose2d whose output channels carry the
  depth taps, summed into their output depths by index_add;
- pooling pools each depth slice with the 2-D primitive, then reduces the
  gathered depth windows.
Window tables depend only on shapes, so they are constants of a trace.
"""
import numpy as np

from .. import _C
from ..autograd import no_grad
from . import functional as F
from .functional import _adaptive_size, _check_tensor, _conv_padding, _float_like, _index_tensor, _ntuple

__all__ = [
    "conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "lp_pool3d", "max_unpool1d", "max_unpool2d",
    "max_unpool3d",
]

_INF = float("inf")


def _batched(input, name, nd):  # noqa: A002
    """input with a batch dim (PyTorch's unbatched form adds one) and whether it had one."""
    if input.ndim == nd + 2:
        return input, True
    if input.ndim == nd + 1:
        return _C.unsqueeze(input, 0), False
    raise _C.InvalidArgument(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
                             f"input of size: {list(input.shape)}")


def _unbatched(out, batched):
    return out if batched else _C.squeeze(out, [0])


def _depth_table(n, k, s, lo, d, n_out):
    """[n_out, k] input depth of each (output depth, tap); a tap over the
    padding reads its window's nearest real tap instead (a duplicate, which
    never changes a max nor which depth holds it first)."""
    pos = np.arange(n_out)[:, None] * s - lo + np.arange(k)[None, :] * d
    first = np.where(pos >= 0, pos, np.iinfo(np.int64).max).min(axis=1, keepdims=True)
    last = np.where(pos < n, pos, -1).max(axis=1, keepdims=True)
    return np.where(pos < 0, first, np.where(pos >= n, last, pos))


# ------------------------------------------------------------- convolution
def _conv_weight_check(input, weight, groups, name, transposed):  # noqa: A002
    if weight.ndim != 5:
        raise _C.InvalidArgument(f"{name}: expected a 5-D weight, got size {list(weight.shape)}")
    if groups <= 0:
        raise _C.InvalidArgument("non-positive groups is not supported")
    c = input.shape[1]
    if transposed:
        if weight.shape[0] != c:
            raise _C.InvalidArgument(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                                     f"{list(input.shape)} to have {weight.shape[0]} channels, but got {c} channels "
                                     f"instead")
        if c % groups:
            raise _C.InvalidArgument(f"{name}: in_channels ({c}) must be divisible by groups ({groups})")
    else:
        if weight.shape[0] % groups:
            raise _C.InvalidArgument(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                                     f"dimension 0, but got weight of size {list(weight.shape)} instead")
        if weight.shape[1] * groups != c:
            raise _C.InvalidArgument(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                                     f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got {c} "
                                     f"channels instead")


def _stride_dilation(stride, dilation, name):
    """A 3-D convolution's stride and dilation as triples, checked as PyTorch's."""
    stride = _ntuple(stride, 3, f"{name}: stride")
    dilation = _ntuple(dilation, 3, f"{name}: dilation")
    if any(v <= 0 for v in stride):
        raise _C.InvalidArgument("non-positive stride is not supported")
    if any(v <= 0 for v in dilation):
        raise _C.InvalidArgument("dilation should be greater than zero")
    return stride, dilation


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-D convolution over [N, C, D, H, W] (or unbatched [C, D, H, W])."""
    _check_tensor(input, "input", "conv3d")
    _check_tensor(weight, "weight", "conv3d")
    groups = int(groups)
    stride, dilation = _stride_dilation(stride, dilation, "conv3d")
    x, batched = _batched(input, "conv3d", 3)
    _conv_weight_check(x, weight, groups, "conv3d", False)
    kernel = tuple(weight.shape[2:])
    sides = _conv_padding(padding, kernel, dilation, stride, 3, "conv3d")
    if any(p < 0 for lo_hi in sides for p in lo_hi):
        raise _C.InvalidArgument("negative padding is not supported")
    n, c, depth, h, w = x.shape
    o = weight.shape[0]
    (kd, kh, kw), (sd, sh, sw), (dd, dh, dw) = kernel, stride, dilation
    padded = [n + lo + hi for n, (lo, hi) in zip((depth, h, w), sides)]
    if any(p < dl * (k - 1) + 1 for p, k, dl in zip(padded, kernel, dilation)):
        raise _C.InvalidArgument(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                                 f"Kernel size: ({' x '.join(str(dl * (k - 1) + 1) for k, dl in zip(kernel, dilation))})"
                                 f". Kernel size can't be greater than actual input size")
    (pd_lo, pd_hi) = sides[0]
    od = (padded[0] - dd * (kd - 1) - 1) // sd + 1
    cg = c // groups
    if pd_lo or pd_hi:
        x = _C.pad(x, [0, 0, 0, 0, pd_lo, pd_hi], 0.0)
    if kd == 1 and sd == 1:
        slices = x  # [N, C, OD, H, W] already
        cols = _C.reshape(_C.permute(slices, [0, 2, 1, 3, 4]), [n * od, c, h, w])
    else:
        taps = np.arange(od)[:, None] * sd + np.arange(kd)[None, :] * dd  # [OD, kd]
        slices = _C.index_select(x, 2, _index_tensor(taps.reshape(-1), x.device))  # [N, C, OD*kd, H, W]
        slices = _C.reshape(slices, [n, groups, cg, od, kd, h, w])
        cols = _C.reshape(_C.permute(slices, [0, 3, 1, 4, 2, 5, 6]), [n * od, groups * kd * cg, h, w])
    w2 = _C.reshape(_C.permute(weight, [0, 2, 1, 3, 4]), [o, kd * cg, kh, kw])
    (pt, pb), (pl, pr) = sides[1], sides[2]
    y = _C.conv2d(cols, w2, bias, (sh, sw), (pt, pb, pl, pr), (dh, dw), groups)  # [N*OD, O, OH, OW]
    # contiguous, as PyTorch's output is (so .view() works on it)
    y = _C.contiguous(_C.permute(_C.reshape(y, [n, od, o] + list(y.shape[2:])), [0, 2, 1, 3, 4]))
    return _unbatched(y, batched)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """The adjoint of conv3d with respect to its input; weight
    [in_channels, out_channels/groups, kd, kh, kw]."""
    _check_tensor(input, "input", "conv_transpose3d")
    _check_tensor(weight, "weight", "conv_transpose3d")
    if isinstance(padding, str):
        raise TypeError("conv_transpose3d(): argument 'padding' must be tuple of ints, not str")
    groups = int(groups)
    stride, dilation = _stride_dilation(stride, dilation, "conv_transpose3d")
    padding = _ntuple(padding, 3, "conv_transpose3d: padding")
    output_padding = _ntuple(output_padding, 3, "conv_transpose3d: output_padding")
    if any(v < 0 for v in padding):
        raise _C.InvalidArgument("negative padding is not supported")
    if any(op >= s and op >= dl for op, s, dl in zip(output_padding, stride, dilation)) or min(output_padding) < 0:
        raise _C.InvalidArgument(f"output padding must be smaller than either stride or dilation, but got "
                                 f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    x, batched = _batched(input, "conv_transpose3d", 3)
    _conv_weight_check(x, weight, groups, "conv_transpose3d", True)
    n, c, idp, ih, iw = x.shape
    og = weight.shape[1]
    kd, kh, kw = weight.shape[2:]
    (sd, sh, sw), (pd, ph, pw), (opd, oph, opw), (dd, dh, dw) = stride, padding, output_padding, dilation
    full = (idp - 1) * sd + dd * (kd - 1) + 1 + opd
    out_depth = full - 2 * pd
    if out_depth <= 0:
        raise _C.InvalidArgument(f"conv_transpose3d: the output depth {out_depth} is not positive")
    x2 = _C.reshape(_C.permute(x, [0, 2, 1, 3, 4]), [n * idp, c, ih, iw])
    # [C, O/g, kd, kh, kw] -> [C, kd*O/g, kh, kw]: each group's outputs carry the depth taps
    w2 = _C.reshape(_C.permute(weight, [0, 2, 1, 3, 4]), [c, kd * og, kh, kw])
    y = _C.conv_transpose2d(x2, w2, None, (sh, sw), (ph, pw), (oph, opw), groups, (dh, dw))
    oh, ow = y.shape[2:]
    y = _C.reshape(y, [n, idp, groups, kd, og, oh, ow])
    y = _C.reshape(_C.permute(y, [0, 2, 4, 1, 3, 5, 6]), [n, groups * og, idp * kd, oh, ow])
    if kd == 1 and sd == 1 and opd == 0:
        out = y
    else:
        taps = np.arange(idp)[:, None] * sd + np.arange(kd)[None, :] * dd  # output depth of (input depth, tap)
        zeros = _C.full([n, groups * og, full, oh, ow], 0.0, y.dtype, y.device)
        out = _C.index_add(zeros, 2, _index_tensor(taps.reshape(-1), y.device), y)
    if pd:
        out = _C.contiguous(_C.narrow(out, 2, pd, out_depth))
    if bias is not None:
        out = _C.add(out, _C.reshape(bias, [-1, 1, 1, 1]))
    return _unbatched(out, batched)


# ----------------------------------------------------------------- pooling
def _pool_out(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool3d_args(input, kernel_size, stride, padding, dilation, ceil_mode, name):  # noqa: A002
    _check_tensor(input, "input", name)
    k = _ntuple(kernel_size, 3, f"{name}: kernel_size")
    s = F._pool_stride(stride, k, name)
    p = _ntuple(padding, 3, f"{name}: padding")
    d = _ntuple(dilation, 3, f"{name}: dilation")
    if input.ndim not in (4, 5):
        raise _C.InvalidArgument(f"{name}: Expected 4D or 5D (batch mode) tensor for input, got input of size: "
                                 f"{list(input.shape)}")
    if any(v <= 0 for v in k):
        raise _C.InvalidArgument(f"{name}: kernel_size must be greater than zero, but got {k}")
    if any(v <= 0 for v in s):
        raise _C.InvalidArgument(f"{name}: stride must be greater than zero, but got {s}")
    if any(v <= 0 for v in d):
        raise _C.InvalidArgument(f"{name}: dilation must be greater than zero, but got {d}")
    if any(pv < 0 or pv > (dv * (kv - 1) + 1) // 2 for kv, pv, dv in zip(k, p, d)):
        raise _C.InvalidArgument(f"{name}: pad should be at most half of effective kernel size, but got pad={p}, "
                                 f"kernel_size={k} and dilation={d}")
    sizes = tuple(input.shape[-3:])
    if 0 in tuple(input.shape)[-4:]:
        raise _C.InvalidArgument(f"{name}: Expected input's non-batch dimensions to have positive length, but "
                                 f"input has a shape of {list(input.shape)}")
    out = tuple(_pool_out(n, kv, sv, pv, dv, bool(ceil_mode)) for n, kv, sv, pv, dv in zip(sizes, k, s, p, d))
    if any(o < 1 for o in out):
        raise _C.InvalidArgument(f"{name}: Given input size: {sizes}. Calculated output size: {out}. Output size "
                                 f"is too small")
    return k, s, p, d, sizes, out


def _depth_argmax(key, table):
    """key [L, D, ...]; table [OD, k] depths -> the first depth of each window
    holding its maximum (key has NaN mapped to inf), as [L, OD, 1, ...] positions
    into the window (for gathers) and the depths they name."""
    od, k = table.shape
    flat = _index_tensor(table.reshape(-1), key.device)
    rest = list(key.shape[2:])
    windows = _C.reshape(_C.index_select(key, 1, flat), [key.shape[0], od, k] + rest)
    at = _C.argmax(windows, 2, True)
    depths = _C.expand(_C.reshape(_index_tensor(table, key.device), [1, od, k] + [1] * len(rest)),
                       [key.shape[0], od, k] + rest)
    return flat, at, _C.gather(depths, 2, at)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
                            return_indices=True):
    k, s, p, d, (depth, h, w), (od, oh, ow) = _pool3d_args(input, kernel_size, stride, padding, dilation, ceil_mode,
                                                          "max_pool3d")
    lead = list(input.shape[:-3])
    x = _C.reshape(input, [-1, depth, h, w])
    with no_grad():
        # Each depth slice pooled by the 2-D primitive (NaN wins, first maximum
        # on ties), then the first depth holding the window's maximum.
        vals, hw = _C.max_pool2d(x, k[1:], s[1:], p[1:], d[1:], bool(ceil_mode), True)
        key = _C.where(_C.isnan(vals), _INF, vals)
        flat, at, depths = _depth_argmax(key, _depth_table(depth, k[0], s[0], p[0], d[0], od))
        hw = _C.reshape(_C.index_select(hw, 1, flat), [x.shape[0], od, k[0], oh, ow])
        index = _C.add(_C.mul(depths, h * w), _C.gather(hw, 2, at))
        index = _C.reshape(index, [x.shape[0], od * oh * ow])
    values = _C.gather(_C.reshape(x, [x.shape[0], depth * h * w]), 1, index)
    shape = lead + [od, oh, ow]
    return _C.reshape(values, shape), _C.reshape(index, shape)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    values, index = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (values, index) if return_indices else values


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    k, s, p, _, (depth, h, w), (od, oh, ow) = _pool3d_args(input, kernel_size, stride, padding, 1, ceil_mode,
                                                          "avg_pool3d")
    if divisor_override is not None and int(divisor_override) == 0:
        raise _C.InvalidArgument("avg_pool3d: divisor must be not zero")
    if not input.dtype.is_floating_point:
        raise _C.InvalidArgument(f"avg_pool3d: not implemented for '{input.dtype}'")
    lead = list(input.shape[:-3])
    x = _C.reshape(input, [-1, depth, h, w])
    sums = _C.avg_pool2d(x, k[1:], s[1:], p[1:], bool(ceil_mode), True, 1)  # window sums per depth slice
    hi = max(0, (od - 1) * s[0] + k[0] - depth - p[0])
    sums = _C.pad(sums, [0, 0, 0, 0, p[0], hi], 0.0)
    taps = np.arange(od)[:, None] * s[0] + np.arange(k[0])[None, :]
    windows = _C.reshape(_C.index_select(sums, 1, _index_tensor(taps.reshape(-1), x.device)),
                         [x.shape[0], od, k[0], oh, ow])
    total = _C.sum(windows, [2], False)
    if divisor_override is not None:
        out = _C.div(total, float(int(divisor_override)))
    else:
        # PyTorch's divisor: the window clipped to the padded input, or to the input itself.
        counts = []
        for n, kv, sv, pv, o in zip((depth, h, w), k, s, p, (od, oh, ow)):
            start = np.arange(o) * sv - pv
            end = np.minimum(start + kv, n + pv)
            counts.append(end - start if count_include_pad else np.minimum(end, n) - np.maximum(start, 0))
        divisor = counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]
        out = _C.div(total, F._weights_tensor(divisor.astype(np.float64), total))
    return _C.reshape(out, lead + [od, oh, ow])


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    kd, kh, kw = _ntuple(kernel_size, 3, "lp_pool3d: kernel_size")
    out = avg_pool3d(_C.pow(input, float(norm_type)), (kd, kh, kw), stride, 0, ceil_mode)
    return _C.pow(_C.mul(_C.mul(_C.sign(out), F.relu(_C.abs(out))), kd * kh * kw), 1.0 / float(norm_type))


def _adaptive_check(input, output_size, name):  # noqa: A002
    _check_tensor(input, "input", name)
    if input.ndim not in (4, 5):
        raise _C.InvalidArgument(f"{name}(): Expected 4D or 5D tensor, but got {list(input.shape)}")
    if 0 in tuple(input.shape)[-4:]:
        raise _C.InvalidArgument(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                                 f"input has sizes {list(input.shape)}")
    return _adaptive_size(output_size, tuple(input.shape[-3:]), name)


def _adaptive_windows(n, n_out):
    i = np.arange(n_out)
    return (i * n) // n_out, -((-(i + 1) * n) // n_out)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    out = _adaptive_check(input, output_size, "adaptive_avg_pool3d")
    sizes = tuple(input.shape[-3:])
    if all(o and n % o == 0 for n, o in zip(sizes, out)):
        if out == (1, 1, 1):
            return _C.mean(input, [-3, -2, -1], True)
        return avg_pool3d(input, tuple(n // o for n, o in zip(sizes, out)))
    x = input if input.dtype.is_floating_point else _C.cast(input, _float_like(input))
    for dim, o in zip((-1, -2, -3), reversed(out)):  # along W, H, then D
        x = _C.transpose(F._adaptive_mean(_C.transpose(x, dim, -1), o), dim, -1)
    return _C.contiguous(x)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):  # noqa: A002
    od, oh, ow = _adaptive_check(input, output_size, "adaptive_max_pool3d")
    depth, h, w = input.shape[-3:]
    if all(o and n % o == 0 for n, o in zip((depth, h, w), (od, oh, ow))):
        return max_pool3d_with_indices(input, (depth // od, h // oh, w // ow))
    lead = list(input.shape[:-3])
    x = _C.reshape(input, [-1, depth, h, w])
    with no_grad():
        # Dim by dim (W, then H, then D) the first position of each window's
        # maximum; the positions found so far ride along each gather.
        key = _C.where(_C.isnan(x), _INF, x)
        found = []
        for axis, n, o in ((3, w, ow), (2, h, oh), (1, depth, od)):
            start, end = _adaptive_windows(n, o)
            k = int((end - start).max())
            table = np.minimum(start[:, None] + np.arange(k)[None, :], end[:, None] - 1)  # [o, k]
            flat = _index_tensor(table.reshape(-1), x.device)
            shape = list(key.shape)
            wshape = shape[:axis] + [o, k] + shape[axis + 1:]
            windows = _C.reshape(_C.index_select(key, axis, flat), wshape)
            at = _C.argmax(windows, axis + 1, True)
            key = _C.squeeze(_C.gather(windows, axis + 1, at), [axis + 1])
            picked = [_C.squeeze(_C.gather(_C.reshape(_C.index_select(f, axis, flat), wshape), axis + 1, at),
                                 [axis + 1]) for f in found]
            tshape = [1] * len(wshape)
            tshape[axis], tshape[axis + 1] = o, k
            pos = _C.gather(_C.expand(_C.reshape(_index_tensor(table, x.device), tshape), wshape), axis + 1, at)
            found = picked + [_C.squeeze(pos, [axis + 1])]
        pw, ph, pd = found
        index = _C.add(_C.add(_C.mul(pd, h * w), _C.mul(ph, w)), pw)
        index = _C.reshape(index, [x.shape[0], od * oh * ow])
    values = _C.gather(_C.reshape(x, [x.shape[0], depth * h * w]), 1, index)
    shape = lead + [od, oh, ow]
    return _C.reshape(values, shape), _C.reshape(index, shape)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    values, index = adaptive_max_pool3d_with_indices(input, output_size)
    return (values, index) if return_indices else values


# ------------------------------------------------------------- unpooling
def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):  # noqa: A002
    name = f"max_unpool{nd}d"
    _check_tensor(input, "input", name)
    _check_tensor(indices, "indices", name)
    k = _ntuple(kernel_size, nd, f"{name}: kernel_size")
    s = F._pool_stride(stride, k, name)
    p = _ntuple(padding, nd, f"{name}: padding")
    if indices.dtype != _C.dtype.int64:
        raise _C.InvalidArgument(f"{name}: expected 'indices' to be of dtype int64, but got {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise _C.InvalidArgument(f"{name}: Expected shape of indices to be same as that of the input tensor "
                                 f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if input.ndim not in (nd + 1, nd + 2):
        raise _C.InvalidArgument(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, got "
                                 f"input of size: {list(input.shape)}")
    in_sizes = tuple(input.shape[-nd:])
    default = [(n - 1) * sv - 2 * pv + kv for n, kv, sv, pv in zip(in_sizes, k, s, p)]
    if output_size is None:
        out = default
    else:
        out = [int(v) for v in output_size]
        if len(out) == nd + 2:
            out = out[-nd:]
        if len(out) != nd:
            raise _C.InvalidArgument(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but "
                                     f"it has a length of '{len(out)}'")
        for size, lo, sv in zip(out, default, s):
            if not lo - sv < size < lo + sv:
                raise _C.InvalidArgument(f"invalid output_size \"{out}\" (dim must be between {lo - sv} and "
                                         f"{lo + sv})")
    lead = list(input.shape[:-nd])
    plane = int(np.prod(out))
    window = int(np.prod(in_sizes))  # spelled out: -1 is ambiguous in an empty batch
    flat_in = _C.reshape(input, lead + [window])
    flat_idx = _C.reshape(indices, lead + [window])
    zeros = _C.full(lead + [plane], 0.0, input.dtype, input.device)
    return _C.reshape(_C.scatter(zeros, -1, flat_idx, flat_in), lead + out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
