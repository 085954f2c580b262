"""Recurrent layers against torch.nn with the weights copied over: RNN (tanh,
relu), LSTM (with projections) and GRU over every combination of layers,
directions, batch_first, bias and dtype, packed sequences, the cells, the
parameter layout and initialisation, the fused gate primitive's own
gradients, and the layers inside a compiled step."""
import copy
import itertools

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import assert_close, gradcheck, rnd
from test_nn_helpers import copy_weights, torch_state_as_numpy

T = torch.nn
TU = torch.nn.utils.rnn
LU = nn.utils.rnn


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _flat(v)]
    return [x]


def _data(x):
    return x.data if isinstance(x, (LU.PackedSequence, TU.PackedSequence)) else x


def compare(lm, tm, l_args, t_args, leaves, tol=None, seed=3, modules=None):
    """lm(*l_args) vs tm(*t_args): every output tensor (nested, packed data
    included), then after a backward pass with the same random upstream
    gradients, the gradients of `leaves` ((lucid, torch) pairs) and of every
    parameter of `modules` (default: lm and tm themselves)."""
    rtol, atol = tol if tol else (None, None)
    lmod, tmod = modules or (lm, tm)
    l_out, t_out = _flat(lm(*l_args)), _flat(tm(*t_args))
    assert len(l_out) == len(t_out)
    l_out, t_out = [_data(o) for o in l_out], [_data(o) for o in t_out]
    for i, (lo, to) in enumerate(zip(l_out, t_out)):
        assert_close(lo, to, rtol, atol, msg=f"output {i}: ")
    rng = np.random.default_rng(seed)
    ups = [rng.standard_normal(tuple(to.shape)) for to in t_out]
    torch.autograd.backward(t_out, [torch.tensor(u).to(to.dtype) for u, to in zip(ups, t_out)])
    lucid.autograd.backward(l_out, [lucid.tensor(u).to(lo.dtype) for u, lo in zip(ups, l_out)])
    g_rtol = rtol if rtol is not None else 1e-4
    g_atol = atol if atol is not None else 1e-5
    for i, (li, ti) in enumerate(leaves):
        assert_close(li.grad, ti.grad, g_rtol, g_atol, msg=f"grad of input {i}: ")
    lp = dict(lmod.named_parameters())
    for name, tp in tmod.named_parameters():
        assert (lp[name].grad is None) == (tp.grad is None), name
        if tp.grad is not None:
            assert_close(lp[name].grad, tp.grad, g_rtol, g_atol, msg=f"grad of {name}: ")


def pair(array, dtype, requires_grad=True):
    return (lucid.tensor(array, dtype=getattr(lucid, dtype), requires_grad=requires_grad),
            torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=requires_grad))


def build(cls, *args, dtype="float32", **kwargs):
    lm = getattr(nn, cls)(*args, **kwargs)
    tm = getattr(T, cls)(*args, **kwargs)
    if dtype == "float64":
        lm, tm = lm.double(), tm.double()
    copy_weights(lm, tm)
    return lm, tm


MODES = [("RNN", {"nonlinearity": "tanh"}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {}),
         ("LSTM", {"proj_size": 3})]
COMBOS = list(itertools.product(range(len(MODES)), [1, 2], [False, True], [False, True], [True, False],
                                ["float32", "float64"]))


def _ids(c):
    mode, extra = MODES[c[0]]
    tag = mode + ("-" + "-".join(f"{k}={v}" for k, v in extra.items()) if extra else "")
    return f"{tag}-L{c[1]}-{'bi' if c[2] else 'uni'}-{'bf' if c[3] else 'tf'}-{'bias' if c[4] else 'nobias'}-{c[5]}"


@pytest.mark.parametrize("combo", COMBOS, ids=[_ids(c) for c in COMBOS])
def test_layer_matches_torch(combo):
    mode_i, layers, bidir, batch_first, bias, dtype = combo
    mode, extra = MODES[mode_i]
    lm, tm = build(mode, 4, 6, num_layers=layers, bidirectional=bidir, batch_first=batch_first, bias=bias,
                   dtype=dtype, **extra)
    steps, batch = 5, 3
    x = rnd(batch, steps, 4, seed=1) if batch_first else rnd(steps, batch, 4, seed=1)
    lx, tx = pair(x, dtype)
    d = 2 if bidir else 1
    h_size = extra.get("proj_size", 6)
    h0 = rnd(layers * d, batch, h_size, seed=2)
    lh, th = pair(h0, dtype)
    leaves = [(lx, tx), (lh, th)]
    if mode == "LSTM":
        lc, tc = pair(rnd(layers * d, batch, 6, seed=4), dtype)
        leaves.append((lc, tc))
        compare(lm, tm, (lx, (lh, lc)), (tx, (th, tc)), leaves)
    else:
        compare(lm, tm, (lx, lh), (tx, th), leaves)


@pytest.mark.parametrize("mode,extra", MODES, ids=[m + str(e) for m, e in MODES])
def test_default_hidden_and_unbatched(mode, extra):
    lm, tm = build(mode, 3, 5, num_layers=2, bidirectional=True, **extra)
    lx, tx = pair(rnd(4, 2, 3), "float32")
    compare(lm, tm, (lx,), (tx,), [(lx, tx)])
    # unbatched [T, in], with and without a hidden state
    lx, tx = pair(rnd(4, 3, seed=5), "float32")
    compare(lm, tm, (lx,), (tx,), [(lx, tx)])
    h = rnd(4, extra.get("proj_size", 5), seed=6)
    lh, th = pair(h, "float32")
    if mode == "LSTM":
        lc, tc = pair(rnd(4, 5, seed=7), "float32")
        compare(lm, tm, (lx, (lh, lc)), (tx, (th, tc)), [(lx, tx), (lh, th), (lc, tc)])
    else:
        compare(lm, tm, (lx, lh), (tx, th), [(lx, tx), (lh, th)])
    lb, tb = build(mode, 3, 5, batch_first=True, **extra)
    lx, tx = pair(rnd(4, 3, seed=8), "float32")
    compare(lb, tb, (lx,), (tx,), [(lx, tx)])


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_parameter_names_shapes_and_init(mode):
    kw = dict(num_layers=2, bidirectional=True)
    if mode == "LSTM":
        kw["proj_size"] = 3
    lm, tm = getattr(nn, mode)(7, 8, **kw), getattr(T, mode)(7, 8, **kw)
    l_state, t_state = lm.state_dict(), tm.state_dict()
    assert list(l_state) == list(t_state)
    for k in t_state:
        assert tuple(l_state[k].shape) == tuple(t_state[k].shape), k
    assert lm._flat_weights_names == tm._flat_weights_names
    assert [list(w) for w in lm._all_weights] == [list(w) for w in tm._all_weights]
    assert repr(lm) == repr(tm)
    bound = 1 / np.sqrt(8)
    values = np.concatenate([p.detach().numpy().ravel() for p in lm.parameters()])
    assert np.all(np.abs(values) <= bound) and values.max() > 0.9 * bound and values.min() < -0.9 * bound
    assert abs(values.mean()) < 0.05 * bound * 10
    # a torch state_dict loads strictly
    copy_weights(lm, tm)


@pytest.mark.parametrize("cls,nl", [("RNNCell", "tanh"), ("RNNCell", "relu"), ("LSTMCell", None), ("GRUCell", None)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(cls, nl, dtype, bias):
    kw = {"nonlinearity": nl} if nl else {}
    lm, tm = build(cls, 4, 5, bias=bias, dtype=dtype, **kw)
    assert list(lm.state_dict()) == list(tm.state_dict())
    lx, tx = pair(rnd(3, 4), dtype)
    compare(lm, tm, (lx,), (tx,), [(lx, tx)])
    lh, th = pair(rnd(3, 5, seed=2), dtype)
    if cls == "LSTMCell":
        lc, tc = pair(rnd(3, 5, seed=3), dtype)
        compare(lm, tm, (lx, (lh, lc)), (tx, (th, tc)), [(lx, tx), (lh, th), (lc, tc)])
    else:
        compare(lm, tm, (lx, lh), (tx, th), [(lx, tx), (lh, th)])
    # unbatched
    lx, tx = pair(rnd(4, seed=4), dtype)
    compare(lm, tm, (lx,), (tx,), [(lx, tx)])
    assert repr(lm) == repr(tm)


def test_cell_steps_in_a_loop_match_torch():
    lm, tm = build("LSTMCell", 3, 4)
    lx, tx = pair(rnd(6, 2, 3), "float32")
    lh = lc = th = tc = None
    louts, touts = [], []
    for t in range(6):
        lh, lc = lm(lx[t], None if lh is None else (lh, lc))
        th, tc = tm(tx[t], None if th is None else (th, tc))
        louts.append(lh)
        touts.append(th)
    assert_close(lucid.stack(louts).sum(), torch.stack(touts).sum())
    lucid.stack(louts).sum().backward()
    torch.stack(touts).sum().backward()
    assert_close(lx.grad, tx.grad, 1e-4, 1e-6)


# ------------------------------------------------------------ packed input
LENGTHS = [[5, 3, 3, 1], [2, 5, 1, 4], [3, 3, 3]]


@pytest.mark.parametrize("lengths", LENGTHS, ids=["sorted", "unsorted", "equal"])
@pytest.mark.parametrize("mode,extra", [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("LSTM", {"proj_size": 2})],
                         ids=["lstm", "gru", "rnn", "lstm-proj"])
@pytest.mark.parametrize("bidir", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_sequences_through_layers(lengths, mode, extra, bidir, batch_first):
    enforce = lengths == sorted(lengths, reverse=True)
    lm, tm = build(mode, 3, 4, num_layers=2, bidirectional=bidir, **extra)
    steps, batch = max(lengths), len(lengths)
    x = rnd(batch, steps, 3) if batch_first else rnd(steps, batch, 3)
    lx, tx = pair(x, "float32")
    lp = LU.pack_padded_sequence(lx, lengths, batch_first=batch_first, enforce_sorted=enforce)
    tp = TU.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=enforce)
    assert_close(lp.data, tp.data)
    assert_close(lp.batch_sizes, tp.batch_sizes)
    for a, b in ((lp.sorted_indices, tp.sorted_indices), (lp.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if b is not None:
            assert_close(a, b)
    d = 2 if bidir else 1
    lh, th = pair(rnd(2 * d, batch, extra.get("proj_size", 4), seed=2), "float32")
    hx_l, hx_t = lh, th
    leaves = [(lx, tx), (lh, th)]
    if mode == "LSTM":
        lc, tc = pair(rnd(2 * d, batch, 4, seed=3), "float32")
        hx_l, hx_t = (lh, lc), (th, tc)
        leaves.append((lc, tc))

    lengths_out = {}

    def run(m, p, hx, utils):
        out, hidden = m(p, hx)
        assert type(out).__name__ == "PackedSequence"
        padded, lengths_out[utils] = utils.pad_packed_sequence(out, batch_first=batch_first, total_length=steps + 1)
        return padded, hidden

    compare(lambda p, hx: run(lm, p, hx, LU), lambda p, hx: run(tm, p, hx, TU), (lp, hx_l), (tp, hx_t), leaves,
            modules=(lm, tm))
    assert_close(lengths_out[LU], lengths_out[TU])


def test_pad_and_pack_sequence_utilities():
    seqs = [rnd(n, 2, seed=n) for n in (4, 1, 3)]
    l_seqs = [lucid.tensor(s, requires_grad=True) for s in seqs]
    t_seqs = [torch.tensor(s, requires_grad=True) for s in seqs]
    for bf in (False, True):
        for side in ("right", "left"):
            lo = LU.pad_sequence(l_seqs, batch_first=bf, padding_value=-1.0, padding_side=side)
            to = TU.pad_sequence(t_seqs, batch_first=bf, padding_value=-1.0, padding_side=side)
            assert_close(lo, to)
    lo.sum().backward()
    to.sum().backward()
    for a, b in zip(l_seqs, t_seqs):
        assert_close(a.grad, b.grad)
    lp = LU.pack_sequence(l_seqs, enforce_sorted=False)
    tp = TU.pack_sequence(t_seqs, enforce_sorted=False)
    assert_close(lp.data, tp.data)
    assert_close(lp.batch_sizes, tp.batch_sizes)
    for a, b in zip(LU.unpack_sequence(lp), TU.unpack_sequence(tp)):
        assert_close(a, b)
    padded, lengths = LU.pad_packed_sequence(lp, batch_first=True, padding_value=7.0)
    t_padded, t_lengths = TU.pad_packed_sequence(tp, batch_first=True, padding_value=7.0)
    assert_close(padded, t_padded)
    assert_close(lengths, t_lengths)
    for a, b in zip(LU.unpad_sequence(padded, lengths, batch_first=True),
                    TU.unpad_sequence(t_padded, t_lengths, batch_first=True)):
        assert_close(a, b)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        LU.pack_sequence(l_seqs)
    with pytest.raises(RuntimeError, match="has to be greater than 0"):
        LU.pack_padded_sequence(lucid.zeros(3, 2, 1), [3, 0])
    with pytest.raises(ValueError, match="total_length"):
        LU.pad_packed_sequence(lp, total_length=2)
    assert isinstance(lp, tuple) and lp._fields == tp._fields


# ------------------------------------------------------------------ errors
def test_construction_errors_match_torch():
    cases = [dict(dropout=1.5), dict(dropout=-0.1), dict(proj_size=-1), dict(proj_size=8), dict(num_layers=0)]
    for kw in cases:
        with pytest.raises(ValueError) as t_err:
            T.LSTM(4, 8, **kw)
        with pytest.raises(ValueError) as l_err:
            nn.LSTM(4, 8, **kw)
        assert str(l_err.value) == str(t_err.value), kw
    for cls in ("GRU", "RNN"):
        with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
            getattr(nn, cls)(4, 8, proj_size=2)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(4, 0)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(4, 8, nonlinearity="sigmoid")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(4, 8, dropout=0.5)


def test_forward_errors():
    m = nn.LSTM(4, 6)
    with pytest.raises(ValueError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 3"):
        m(lucid.zeros(5, 2, 3))
    with pytest.raises(ValueError, match="Expected hidden size"):
        m(lucid.zeros(5, 2, 4), (lucid.zeros(1, 3, 6), lucid.zeros(1, 2, 6)))
    with pytest.raises(ValueError, match="Expected hidden\\[1\\] size"):
        m(lucid.zeros(5, 2, 4), (lucid.zeros(1, 2, 6), lucid.zeros(1, 2, 5)))
    with pytest.raises(RuntimeError, match="should also be 2-D"):
        m(lucid.zeros(5, 4), (lucid.zeros(1, 2, 6), lucid.zeros(1, 2, 6)))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        m(lucid.zeros(4))
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
        nn.GRUCell(4, 6)(lucid.zeros(2, 2, 4))
    with pytest.raises(ValueError, match="inconsistent input_size"):
        nn.GRUCell(4, 6)(lucid.zeros(2, 3))
    with pytest.raises(TypeError, match="same dtype"):
        m(lucid.zeros(5, 2, 4, dtype=lucid.float64))


# ------------------------------------------------------- dropout, train/eval
def test_dropout_between_layers():
    lm, tm = build("GRU", 3, 4, num_layers=3, dropout=1.0)
    x = rnd(5, 2, 3)
    # p=1 zeroes every layer's input but the first: the output is a function
    # of the biases alone, the same in both libraries.
    compare(lm, tm, (lucid.tensor(x),), (torch.tensor(x),), [])
    lm.eval()
    tm.eval()
    lx, tx = pair(x, "float32")
    compare(lm, tm, (lx,), (tx,), [(lx, tx)])
    lm2 = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = lucid.tensor(rnd(5, 2, 3))
    lm2.eval()
    a = lm2(x)[0]
    lm2.train()
    lucid.manual_seed(1)
    b = lm2(x)[0]
    lucid.manual_seed(1)
    c = lm2(x)[0]
    a, b, c = (t.detach().numpy() for t in (a, b, c))
    assert not np.allclose(a, b) and np.array_equal(b, c)


# ---------------------------------------------- the fused gate primitive
@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "lstm", "gru"])
def test_cell_primitive_gradcheck(kind):
    h, b = 3, 2
    g = {"lstm": 4, "gru": 3}.get(kind, 1)
    arrays = [rnd(b, g * h, seed=1), rnd(b, g * h, seed=2), rnd(g * h, seed=3)]
    if kind in ("lstm", "gru"):
        arrays.append(rnd(b, h, seed=4))

    def fn(*ts):
        if kind == "lstm":
            hn, cn = lucid._C.lstm_cell_step(*ts)
            return hn * 2 + cn
        if kind == "gru":
            return lucid._C.gru_cell_step(*ts)
        return lucid._C.rnn_cell_step(*ts, kind == "rnn_relu")

    gradcheck(fn, *arrays)


def test_cell_primitive_mixed_dtypes_and_errors():
    gi = lucid.randn(2, 8, dtype=lucid.bfloat16)
    h, c = lucid._C.lstm_cell_step(gi, gi, lucid.zeros(8), lucid.zeros(2, 2))
    assert h.dtype == c.dtype == lucid.float32
    with pytest.raises(ValueError, match="not a multiple of 4"):
        lucid._C.lstm_cell_step(lucid.zeros(2, 6), lucid.zeros(2, 6), lucid.zeros(6), lucid.zeros(2, 1))
    with pytest.raises(ValueError, match="state of shape"):
        lucid._C.gru_cell_step(lucid.zeros(2, 6), lucid.zeros(2, 6), lucid.zeros(6), lucid.zeros(2, 3))
    with pytest.raises(TypeError, match="floating-point"):
        lucid._C.rnn_cell_step(lucid.zeros(2, 3, dtype=lucid.int64), lucid.zeros(2, 3, dtype=lucid.int64),
                               lucid.zeros(3, dtype=lucid.int64), False)


# ------------------------------------------------------- compiled steps
class CharLM(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.emb = nn.Embedding(11, 6)
        self.rnn = getattr(nn, cell)(6, 8, num_layers=2, batch_first=True, bidirectional=cell == "GRU")
        self.head = nn.Linear(8 * (2 if cell == "GRU" else 1), 11)

    def forward(self, idx):
        out, _ = self.rnn(self.emb(idx))
        return self.head(out).flatten(0, 1)


def _lm_loss(logits, y):
    return F.cross_entropy(logits, y.flatten())


@pytest.mark.parametrize("cell", ["RNN", "LSTM", "GRU"])
def test_recurrent_model_in_fused_step_matches_eager(cell):
    from lucid.compile import fused_step

    lucid.manual_seed(0)
    eager = CharLM(cell)
    compiled = copy.deepcopy(eager)
    opt_e = lucid.optim.Adam(eager.parameters(), lr=1e-2)
    opt_c = lucid.optim.Adam(compiled.parameters(), lr=1e-2)
    step = fused_step(compiled, _lm_loss, opt_c)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = lucid.tensor(rng.integers(0, 11, (4, 7)))
        y = lucid.tensor(rng.integers(0, 11, (4, 7)))
        opt_e.zero_grad()
        e_loss = _lm_loss(eager(x), y)
        e_loss.backward()
        opt_e.step()
        c_loss = step(x, y)
        np.testing.assert_allclose(float(c_loss), float(e_loss), rtol=1e-5, atol=1e-6)
    for (n, pe), (_, pc) in zip(eager.named_parameters(), compiled.named_parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
    assert step.cache_info().misses == 1
