"""float16/bfloat16 <-> float32 conversions, exhaustively against PyTorch:
the scalar path (casts) and the bulk path (the 16-bit matmul widens its
operands and narrows its result 8 lanes at a time where F16C is built in)."""
import numpy as np
import pytest
import torch

import lucid

DTYPES = {"float16": (lucid.float16, torch.float16), "bfloat16": (lucid.bfloat16, torch.bfloat16)}


def all_16bit_patterns(dtype):
    """Every 16-bit pattern as a torch tensor of `dtype` (NaNs included)."""
    return torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)


def narrowing_inputs():
    """float32 values around every float16/bfloat16 rounding decision: each
    16-bit value, the midpoints to its neighbours (ties round to even) and
    one float32 ulp either side of them, plus overflow and underflow edges."""
    rng = np.random.default_rng(0)
    wide = np.concatenate([
        all_16bit_patterns(torch.float16).float().numpy(),
        all_16bit_patterns(torch.bfloat16).float().numpy(),
    ])
    wide = wide[np.isfinite(wide)]
    wide = np.unique(wide)
    mids = (wide[:-1].astype(np.float64) + wide[1:]) / 2
    mids = mids.astype(np.float32)
    extra = np.array([65504, 65519.99, 65520, 1e5, 3.4e38, 5.96e-8, 2.98e-8, 2.99e-8, 1e-45, -0.0,
                      np.inf, -np.inf, np.nan], np.float32)
    vals = np.concatenate([wide, mids, np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(-np.inf)), extra,
                           rng.standard_normal(4099).astype(np.float32) * 1e3])
    return vals


def test_widening_every_float16_pattern_matches_torch():
    bits = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    h = lucid.tensor(bits)
    assert h.dtype == lucid.float16
    np.testing.assert_array_equal(h.float().numpy(), torch.from_numpy(bits).float().numpy())


def test_every_bfloat16_value_survives_the_round_trip():
    wide = all_16bit_patterns(torch.bfloat16).float().numpy()  # exact in float32
    got = lucid.tensor(wide).to(lucid.bfloat16).float().numpy()
    np.testing.assert_array_equal(got, wide)


@pytest.mark.parametrize("name", DTYPES)
def test_narrowing_rounds_like_torch(name):
    ldt, tdt = DTYPES[name]
    x = narrowing_inputs()
    got = lucid.tensor(x).to(ldt).float().numpy()
    expected = torch.from_numpy(x).to(tdt).float().numpy()
    np.testing.assert_array_equal(got, expected)  # NaN positions compare equal too


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 1000])
def test_bulk_paths_of_the_16bit_matmul(name, n):
    """x @ [[1]] widens x and narrows the product: exact in both dtypes, so
    the result is x itself, NaN, infinities and all, for every length
    (vector body and scalar tail)."""
    ldt, tdt = DTYPES[name]
    x = narrowing_inputs()[:n * 50].reshape(-1, 1)
    xt = torch.from_numpy(x).to(tdt)
    one = np.ones((1, 1), np.float32)
    got = (lucid.tensor(x).to(ldt) @ lucid.tensor(one).to(ldt)).float().numpy()
    expected = (xt.float() @ torch.from_numpy(one)).to(tdt).float().numpy()
    np.testing.assert_array_equal(got, expected)
    # a product that rounds: 3 * x
    three = np.full((1, 1), 3.0, np.float32)
    got = (lucid.tensor(x).to(ldt) @ lucid.tensor(three).to(ldt)).float().numpy()
    expected = (xt.float() @ torch.from_numpy(three)).to(tdt).float().numpy()
    np.testing.assert_array_equal(got, expected)


@pytest.fixture(params=["amx", "no_amx"])
def amx(request):
    """bfloat16 matmuls with AMX allowed (used where the CPU has it) and not
    (the vdpbf16ps kernel, or the widening path, runs instead)."""
    lucid._C._set_cpu_amx(request.param == "amx")
    yield request.param
    lucid._C._set_cpu_amx(True)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_bfloat16_matmul_sums_in_float32(trans_a, trans_b, amx):
    """bfloat16 matmuls (on the CPU's bf16 dot-product instructions where it
    has them) are the exact product rounded once, up to float32 sums: shapes
    on both sides of each register tile (6 x 64, 12 x 32, 24 x 16), of the
    row block (96) and of the k block (128), odd and even k (row-major A
    with even k is read in place, with a packed partial strip), strided
    batches, and an operand with a subnormal (which takes the widening
    path)."""
    rng = np.random.default_rng(1)
    shapes = [(1, 1, 1), (5, 63, 3), (6, 64, 2), (7, 65, 513), (13, 130, 1025), (97, 200, 64), (1, 300, 17),
              (12, 32, 128), (25, 33, 130), (24, 16, 256), (23, 17, 129), (200, 9, 2), (97, 31, 258), (96, 48, 4)]
    for m, n, k in shapes:
        a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
        la, lb = lucid.tensor(a).to(lucid.bfloat16), lucid.tensor(b).to(lucid.bfloat16)
        a16, b16 = la.float().numpy().astype(np.float64), lb.float().numpy().astype(np.float64)
        if trans_a:
            la, a16 = la.T, a16.T
        if trans_b:
            lb, b16 = lb.T, b16.T
        exact = a16 @ b16
        got = (la @ lb).float().numpy()
        sum_error = k * 2.0**-23 * (np.abs(a16) @ np.abs(b16))
        assert np.all(np.abs(got - exact) <= 2.0**-8 * np.abs(exact) + sum_error), (m, n, k)
    x = np.array([[1e-40, 2.0], [3.0, -4e-39]], np.float32)  # subnormal as bfloat16 too
    got = (lucid.tensor(x).to(lucid.bfloat16) @ lucid.tensor(np.eye(2, dtype=np.float32)).to(lucid.bfloat16))
    want = torch.from_numpy(x).bfloat16().float().numpy()
    np.testing.assert_array_equal(got.float().numpy(), want)
    batch = rng.standard_normal((3, 9, 70)).astype(np.float32)
    lb = lucid.tensor(batch).to(lucid.bfloat16)
    exact = lb.float().numpy().astype(np.float64)
    got = (lb @ lb.transpose(1, 2)).float().numpy()
    exact = exact @ exact.transpose(0, 2, 1)
    np.testing.assert_allclose(got, exact, rtol=2.0**-8, atol=70 * 2.0**-23 * 20)
