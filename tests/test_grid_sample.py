"""F.grid_sample and F.affine_grid against torch: every mode (bicubic on
images), padding mode and align_corners on images and volumes, grids reaching outside the input;
values and gradients for input, grid and theta (float64 tight); unbatched
errors and bad arguments; a compiled spatial-transformer step equal to eager."""
import warnings

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_fused_step_matches_eager, check, rnd


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_grid_sample(nd, mode, padding_mode, align_corners, seed):
    x = rnd(2, 3, *([5, 6] if nd == 2 else [4, 5, 3]), dtype="float64", seed=seed)
    grid = rnd(2, *([4, 3] if nd == 2 else [3, 2, 4]), nd, dtype="float64", seed=seed + 10, low=-1.6, high=1.6)
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode, padding_mode, align_corners), x, grid,
          rtol=1e-10, atol=1e-12)


def test_noncontiguous_float32_and_size_one_dims():
    x = rnd(1, 6, 2, 1, seed=3)  # permuted to [1, 1, 6, 2]
    grid = rnd(3, 1, 4, 2, seed=4, low=-1.2, high=1.2)  # [1, 4, 3, 2] after permute
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x.permute(0, 3, 1, 2), g.permute(1, 2, 0, 3),
                                                          align_corners=False), x, grid)


@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 1, 1, 3], [2, 3, 4, 5, 2], [1, 2, 3, 1, 4]])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(size, align_corners):
    theta = rnd(size[0], len(size) - 2, len(size) - 1, dtype="float64", seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on unit sizes with align_corners
        check(lambda lib, t: lib.nn.functional.affine_grid(t, size, align_corners), theta, rtol=1e-12, atol=1e-12)


def test_default_align_corners_warns():
    x, grid = lucid.ones(1, 1, 2, 2), lucid.zeros(1, 1, 1, 2)
    with pytest.warns(UserWarning, match="align_corners"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="align_corners"):
        F.affine_grid(lucid.zeros(1, 2, 3), [1, 1, 2, 2])


@pytest.mark.parametrize("fn,exc", [
    (lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 1, 2), mode="cubic",
                                               align_corners=False), ValueError),
    (lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 1, 2), padding_mode="edge",
                                               align_corners=False), ValueError),
    (lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 2, 2), lib.zeros(1, 1, 2), align_corners=False),
     RuntimeError),
    (lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 1, 2, 2), lib.zeros(2, 1, 1, 2), align_corners=False),
     RuntimeError),
    (lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 1, 2, 2), lib.zeros(1, 1, 1, 3), align_corners=False),
     RuntimeError),
    (lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 1, 2, 2, 2), lib.zeros(1, 1, 1, 1, 3), mode="bicubic",
                                               align_corners=False), RuntimeError),
    (lambda lib: lib.nn.functional.affine_grid(lib.zeros(1, 2, 3), [1, 1, 2], align_corners=False),
     NotImplementedError),
    (lambda lib: lib.nn.functional.affine_grid(lib.zeros(1, 3, 3), [1, 1, 2, 2], align_corners=False), ValueError),
    (lambda lib: lib.nn.functional.affine_grid(lib.zeros(1, 2, 3, dtype=lib.int64), [1, 1, 2, 2],
                                               align_corners=False), ValueError),
])
def test_errors_as_torch(fn, exc):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        fn(lucid)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_bicubic(padding_mode, align_corners, seed):
    x = rnd(2, 3, 5, 6, dtype="float64", seed=seed)
    grid = rnd(2, 4, 3, 2, dtype="float64", seed=seed + 20, low=-1.7, high=1.7)
    check(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, "bicubic", padding_mode, align_corners), x, grid,
          rtol=1e-10, atol=1e-12)


def test_fused_step_equals_eager():
    class SpatialTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Linear(16, 6)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            theta = self.loc(x.flatten(1)).reshape(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            return self.head(F.grid_sample(x, grid, padding_mode="border", align_corners=False).flatten(1))

    lucid.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = [(lucid.tensor(rng.standard_normal((4, 1, 4, 4)).astype(np.float32)),
                lucid.tensor(rng.integers(0, 3, (4,)))) for _ in range(3)]
    assert_fused_step_matches_eager(SpatialTransformer(), F.cross_entropy,
                                    lambda ps: lucid.optim.SGD(ps, lr=0.1), batches)
