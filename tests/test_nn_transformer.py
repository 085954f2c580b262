"""nn.Transformer, TransformerDecoder and TransformerDecoderLayer against
torch.nn with the weights copied over (masks, key padding, norm_first,
batch_first, activations); state_dict layout, initialisation, subclassing
and use inside a compiled step."""
import copy
import math

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from conftest import rnd
from test_nn_helpers import compare_module

T = torch.nn
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _seq(bf, b, s, e, seed):
    return rnd(b, s, e, seed=seed) if bf else rnd(s, b, e, seed=seed)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_matches_torch(batch_first, norm_first, activation):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              batch_first=batch_first, norm_first=norm_first, activation=activation)
    lm, tm = nn.Transformer(**kw), T.Transformer(**kw)
    assert list(lm.state_dict()) == list(tm.state_dict())
    src, tgt = _seq(batch_first, 2, 5, 8, 1), _seq(batch_first, 2, 4, 8, 2)
    mask = T.Transformer.generate_square_subsequent_mask(4).numpy()
    compare_module(lm, tm, src, tgt)
    compare_module(lm, tm, src, tgt, kwargs=dict(tgt_mask=mask, tgt_is_causal=True))
    kpm = np.array([[False] * 5, [False] * 3 + [True] * 2])
    tgt_kpm = np.array([[False] * 4, [False] * 2 + [True] * 2])
    compare_module(lm, tm, src, tgt, kwargs=dict(src_key_padding_mask=kpm, memory_key_padding_mask=kpm,
                                                 tgt_key_padding_mask=tgt_kpm, tgt_mask=mask))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_and_stack(norm_first):
    kw = dict(d_model=6, nhead=3, dim_feedforward=10, dropout=0.0, norm_first=norm_first)
    lm, tm = nn.TransformerDecoderLayer(**kw), T.TransformerDecoderLayer(**kw)
    assert repr(lm) == repr(tm)
    tgt, mem = rnd(4, 2, 6, seed=1), rnd(3, 2, 6, seed=2)
    mem_mask = np.triu(np.full((4, 3), -np.inf, dtype=np.float32), 1)
    compare_module(lm, tm, tgt, mem, kwargs=dict(memory_mask=mem_mask))
    lstack = nn.TransformerDecoder(lm, 3, norm=nn.LayerNorm(6))
    tstack = T.TransformerDecoder(tm, 3, norm=T.LayerNorm(6))
    assert list(lstack.state_dict()) == list(tstack.state_dict())
    compare_module(lstack, tstack, tgt, mem)


def test_unbatched():
    lm, tm = (m(d_model=4, nhead=1, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8, dropout=0.0)
              for m in (nn.Transformer, T.Transformer))
    compare_module(lm, tm, rnd(5, 4), rnd(3, 4, seed=1))


def test_initialisation_is_xavier_for_matrices():
    lm = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    w = lm.encoder.layers[0].linear1.weight.detach().numpy()
    bound = math.sqrt(6 / (16 + 32))
    assert np.all(np.abs(w) <= bound) and np.abs(w).max() > 0.9 * bound
    # vectors (biases, norms) keep their own initialisation
    np.testing.assert_array_equal(lm.encoder.norm.weight.detach().numpy(), np.ones(16, np.float32))


def test_errors_match_torch():
    lm = nn.Transformer(d_model=4, nhead=1, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    tm = T.Transformer(d_model=4, nhead=1, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    for src, tgt in [((5, 2, 4), (3, 3, 4)), ((5, 2, 4), (3, 2, 5))]:
        with pytest.raises(RuntimeError) as t_err:
            tm(torch.zeros(src), torch.zeros(tgt))
        with pytest.raises(RuntimeError) as l_err:
            lm(lucid.zeros(*src), lucid.zeros(*tgt))
        assert str(l_err.value) == str(t_err.value)


class WordLM(nn.Transformer):
    """Subclassed as PyTorch's word_language_model example does: the
    encoder only, with its own embedding, positions and head."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers, dropout=0.0)
        self.model_type = "Transformer"
        self.src_mask = None
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.shape[0] != src.shape[0]:
            self.src_mask = nn.Transformer.generate_square_subsequent_mask(src.shape[0])
        x = self.input_emb(src) * math.sqrt(self.ninp)
        out = self.encoder(x, mask=self.src_mask)
        return F.log_softmax(self.decoder(out), dim=-1)


def test_subclass_like_the_word_language_model_and_compile():
    from lucid.compile import fused_step

    lucid.manual_seed(0)
    eager = WordLM(20, 8, 2, 16, 2)
    assert "decoder.weight" in eager.state_dict() and "encoder.layers.1.linear2.bias" in eager.state_dict()
    compiled = copy.deepcopy(eager)

    def loss_fn(out, y):
        return F.nll_loss(out.view(-1, 20), y.view(-1))

    opt_e = lucid.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = lucid.optim.SGD(compiled.parameters(), lr=0.1)
    step = fused_step(compiled, loss_fn, opt_c)
    rng = np.random.default_rng(0)
    for _ in range(2):
        x, y = lucid.tensor(rng.integers(0, 20, (6, 3))), lucid.tensor(rng.integers(0, 20, (6, 3)))
        opt_e.zero_grad()
        e = loss_fn(eager(x), y)
        e.backward()
        opt_e.step()
        np.testing.assert_allclose(float(step(x, y)), float(e), rtol=1e-5)
