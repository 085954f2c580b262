"""F.fractional_max_pool2d / nn.FractionalMaxPool2d against torch: given the
same _random_samples the windows, values, indices and gradients are
PyTorch's; drawn samples give PyTorch's shapes; error kinds."""
import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import check, rnd


@pytest.mark.parametrize("shape,kernel,output_size,output_ratio", [
    ((2, 3, 9, 11), 2, (4, 5), None), ((3, 10, 7), (3, 2), None, (0.5, 0.5)), ((2, 2, 8, 8), 3, (6, 1), None),
    ((1, 2, 5, 5), 2, None, (0.5, 0.7)), ((2, 4, 31, 17), (2, 3), (13, 7), None), ((1, 1, 4, 4), 1, 4, None),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch_given_samples(shape, kernel, output_size, output_ratio, dtype):
    batch = 1 if len(shape) == 3 else shape[0]
    x = rnd(*shape, dtype=dtype, seed=1)
    x.reshape(-1)[:3] = x.reshape(-1)[3]  # ties: the first maximum wins
    samples = rnd(batch, shape[-3], 2, dtype=dtype, seed=2, low=0.0, high=1.0)
    check(lambda lib, x, u: lib.nn.functional.fractional_max_pool2d(x, kernel, output_size, output_ratio, True,
                                                                    _random_samples=u.detach()), x, samples)


def test_module_shapes_with_drawn_samples_and_noncontiguous_input():
    lucid.manual_seed(0)
    x = rnd(12, 10, 2, 3, seed=3)
    for kwargs in (dict(output_ratio=0.5), dict(output_size=(4, 3)), dict(output_ratio=(0.6, 0.4))):
        lm, tm = nn.FractionalMaxPool2d(3, **kwargs), torch.nn.FractionalMaxPool2d(3, **kwargs)
        lo = lm(lucid.tensor(x).permute(2, 3, 0, 1))
        to = tm(torch.tensor(x).permute(2, 3, 0, 1))
        assert tuple(lo.shape) == tuple(to.shape)
        # each value is the maximum of a 3x3 window of its plane
        assert np.isin(lo.numpy(), x.transpose(2, 3, 0, 1)).all()
    planes = np.ascontiguousarray(x.transpose(2, 3, 0, 1))  # [2, 3, 12, 10]
    values, index = F.fractional_max_pool2d(lucid.tensor(planes), 2, output_size=5, return_indices=True)
    flat = planes.reshape(2, 3, -1)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(flat, index.numpy().reshape(2, 3, -1), 2)
                                  .reshape(values.shape))


@pytest.mark.parametrize("call,exc", [
    (lambda lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(1, 1, 4, 4), 2), ValueError),
    (lambda lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(1, 1, 4, 4), 3, output_size=3), RuntimeError),
    # PyTorch fails drawing the samples (IndexError); lucid names the bad input (RuntimeError)
    (lambda lib: lib.nn.functional.fractional_max_pool2d(lib.zeros(4, 4), 2, output_size=2),
     (IndexError, RuntimeError)),
    (lambda lib: lib.nn.FractionalMaxPool2d(2), ValueError),
    (lambda lib: lib.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError),
    (lambda lib: lib.nn.FractionalMaxPool2d(2, output_ratio=1.5), ValueError),
])
def test_errors_as_torch(call, exc):
    with pytest.raises(exc):
        call(torch)
    with pytest.raises(exc):
        call(lucid)
