"""Spatial-transformer sampling: affine_grid (the sampling grid of a batch of
affine maps) and grid_sample (reading an image at arbitrary normalised
coordinates), composed of gathers and elementwise ops, so the gradient
reaches both the input and the grid and the whole traces into a compiled
step. 4-D (images) and 5-D (volumes) inputs."""
import itertools

import numpy as np

from .. import _C
from .functional import _check_tensor, _warn

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _base_coords(n, align_corners):
    """The normalised coordinate of each of n pixel centres (or corners)."""
    if n <= 1:
        return np.zeros(n)
    coords = np.linspace(-1.0, 1.0, n)
    return coords if align_corners else coords * (n - 1) / n


def affine_grid(theta, size, align_corners=None):
    """theta [N, 2, 3] (or [N, 3, 4]) -> grid [N, H, W, 2] (or [N, D, H, W, 3])
    of the normalised input coordinates each output pixel samples."""
    _check_tensor(theta, "theta", "affine_grid")
    if align_corners is None:
        _warn(_ALIGN_WARNING)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(v) for v in size]
    if len(size) == 4:
        nd = 2
    elif len(size) == 5:
        nd = 3
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    n = size[0]
    if theta.ndim != 3 or tuple(theta.shape) != (n, nd, nd + 1):
        raise _C.InvalidArgument(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {size}. "
                         f"Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    spatial = size[2:]  # (H, W) or (D, H, W)
    # base[..., :] = (x, y[, z], 1): the last spatial dim is x
    axes = [_base_coords(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([m for m in reversed(mesh)] + [np.ones(spatial)], -1).reshape(-1, nd + 1)
    from .._creation import tensor

    base_t = tensor(base, dtype=theta.dtype, device=theta.device)
    grid = _C.matmul(base_t, _C.transpose(theta, 1, 2))  # [N, prod(spatial), nd]
    return _C.reshape(grid, [n] + spatial + [nd])


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return _C.mul(_C.add(coord, 1.0), (size - 1) / 2.0)
    return _C.div(_C.sub(_C.mul(_C.add(coord, 1.0), float(size)), 1.0), 2.0)


def _reflect(coord, twice_low, twice_high):
    """PyTorch's reflect_coordinates: coord folded into [low, high]."""
    if twice_low == twice_high:
        return _C.mul(coord, 0.0)
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    dist = _C.abs(_C.sub(coord, low))
    extra = _C.fmod(dist, span)
    flips = _C.floor(_C.div(dist, span)).detach()
    even = _C.eq(_C.fmod(flips, 2.0), 0.0)
    return _C.where(even, _C.add(extra, low), _C.add(_C.sub(span, extra), low))


def _padded_coord(x, size, padding_mode, align_corners):
    """PyTorch's compute_coordinates: x brought inside by the padding mode
    (zeros leaves it; taps outside then read zero)."""
    if padding_mode == "border":
        x = _C.clamp(x, 0.0, float(size - 1))
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = _C.clamp(x, 0.0, float(size - 1))
    return x


_CUBIC_A = -0.75  # PyTorch's bicubic convolution constant


def _cubic_weights(t):
    """The four bicubic convolution weights of taps -1, 0, 1, 2 at fraction t."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return _C.add(_C.mul(_C.mul(_C.sub(_C.mul(x, a + 2), a + 3), x), x), 1.0)

    def far(x):  # 1 < |x| < 2
        return _C.sub(_C.mul(_C.add(_C.mul(_C.sub(_C.mul(x, a), 5 * a), x), 8 * a), x), 4 * a)

    return [far(_C.add(t, 1.0)), near(t), near(_C.sub(1.0, t)), far(_C.sub(2.0, t))]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """input [N, C, H, W] read at grid [N, Ho, Wo, 2] (x, y in [-1, 1]) ->
    [N, C, Ho, Wo]; or [N, C, D, H, W] at [N, Do, Ho, Wo, 3]. Modes bilinear
    (trilinear for volumes), nearest and bicubic (images); padding zeros,
    border, reflection."""
    _check_tensor(input, "input", "grid_sample")
    _check_tensor(grid, "grid", "grid_sample")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warn(_ALIGN_WARNING)
        align_corners = False
    if input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    nd = input.ndim - 2
    if grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected grid to have same number of dimensions as input, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if 0 in tuple(input.shape)[2:]:
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                           f"sizes {list(input.shape)} with dimension {tuple(input.shape)[2:].index(0) + 2} being "
                           f"empty")
    n, c = input.shape[:2]
    sizes = list(input.shape[2:])  # (H, W) or (D, H, W)
    out_spatial = list(grid.shape[1:-1])
    points = int(np.prod(out_spatial))
    flat_grid = _C.reshape(grid, [n, points, nd])
    # coordinate k of the grid addresses spatial dim nd-1-k (x is the last dim)
    coords = [_unnormalize(_C.select(flat_grid, 2, nd - 1 - d), sizes[d], align_corners)
              for d in range(nd)]  # per spatial dim, [N, P]
    if mode != "bicubic":  # bicubic pads each of its taps instead
        coords = [_padded_coord(x, sizes[d], padding_mode, align_corners) for d, x in enumerate(coords)]
    flat_input = _C.reshape(input, [n, c, -1])
    strides = [int(np.prod(sizes[d + 1:])) for d in range(nd)]

    def tap(positions):
        """input at integer positions (per dim, [N, P] int64), zero outside."""
        inside = None
        index = None
        for d, pos in enumerate(positions):
            ok = _C.logical_and(_C.ge(pos, 0), _C.lt(pos, sizes[d]))
            inside = ok if inside is None else _C.logical_and(inside, ok)
            term = _C.mul(_C.clamp(pos, 0, sizes[d] - 1), strides[d])
            index = term if index is None else _C.add(index, term)
        vals = _C.gather(flat_input, 2, _C.expand(_C.unsqueeze(index, 1), [n, c, points]))
        return _C.where(_C.unsqueeze(inside, 1), vals, 0.0)

    if mode == "nearest":
        out = tap([_C.cast(_C.round(x), _C.dtype.int64) for x in coords])
        # The grid gets a zero gradient, as in PyTorch (not none): a branch where() never takes.
        never = _C.full([1, 1, 1], False, _C.dtype.bool, input.device)
        out = _C.add(out, _C.where(never, _C.unsqueeze(coords[0], 1), 0.0))
    elif mode == "bicubic":
        lows = [_C.floor(x).detach() for x in coords]
        weights = [_cubic_weights(_C.sub(x, lo)) for x, lo in zip(coords, lows)]
        # tap positions, padded as PyTorch's get_value_bounded pads them (no gradient: integers)
        taps = [[_C.cast(_C.round(_padded_coord(_C.add(lo, k - 1.0), sizes[d], padding_mode, align_corners)),
                         _C.dtype.int64) for k in range(4)] for d, lo in enumerate(lows)]
        out = None
        for i, j in itertools.product(range(4), repeat=2):
            term = _C.mul(tap([taps[0][i], taps[1][j]]), _C.unsqueeze(_C.mul(weights[0][i], weights[1][j]), 1))
            out = term if out is None else _C.add(out, term)
    else:
        lows = [_C.floor(x).detach() for x in coords]
        fracs = [_C.sub(x, lo) for x, lo in zip(coords, lows)]
        low_idx = [_C.cast(lo, _C.dtype.int64) for lo in lows]
        out = None
        for corner in itertools.product((0, 1), repeat=nd):
            weight = None
            positions = []
            for d, bit in enumerate(corner):
                w = fracs[d] if bit else _C.sub(1.0, fracs[d])
                weight = w if weight is None else _C.mul(weight, w)
                positions.append(_C.add(low_idx[d], bit) if bit else low_idx[d])
            term = _C.mul(tap(positions), _C.unsqueeze(weight, 1))
            out = term if out is None else _C.add(out, term)
    return _C.reshape(out, [n, c] + out_spatial)
