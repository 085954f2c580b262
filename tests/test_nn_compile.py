"""nn layers inside a compiled training step: the forward code is made of ops
only, so it traces, and the compiled step matches the eager one (loss,
gradients, BatchNorm running statistics); Dropout draws a fresh mask per call."""
import copy

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

compile_mod = pytest.importorskip("lucid.compile")


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 4, 3, padding="same", groups=2), nn.GELU(), nn.AvgPool2d(2, ceil_mode=True),
                         nn.AdaptiveAvgPool2d((3, 2)), nn.Flatten(), nn.Linear(24, 5))


class Text(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8, padding_idx=0)
        self.enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                              norm_first=True)
        self.norm = nn.RMSNorm(8)
        self.head = nn.Linear(8, 3)

    def forward(self, idx):
        h = self.norm(self.enc(self.emb(idx)))
        return self.head(h.mean(1))


CASES = {
    "cnn": (cnn, lambda: lucid.randn(3, 1, 8, 8), lambda: lucid.tensor([0, 1, 4]), F.cross_entropy),
    "text": (Text, lambda: lucid.tensor(np.random.default_rng(0).integers(0, 11, (2, 5))),
             lambda: lucid.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]), F.cross_entropy),
    "bce": (lambda: nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.SiLU(), nn.Linear(6, 2)),
            lambda: lucid.randn(5, 4), lambda: lucid.rand(5, 2), F.binary_cross_entropy_with_logits),
}


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_step_matches_eager(name):
    build, make_x, make_y, loss_fn = CASES[name]
    lucid.manual_seed(0)
    eager = build()
    compiled = copy.deepcopy(eager)
    step = compile_mod.make_step(compiled, loss_fn)
    for i in range(2):
        x, y = make_x(), make_y()
        for m in (eager, compiled):
            m.zero_grad()
        e_loss = loss_fn(eager(x), y)
        e_loss.backward()
        c_loss = step(x, y)
        np.testing.assert_allclose(float(c_loss), float(e_loss), rtol=1e-5, atol=1e-6)
        for (n, pe), (_, pc) in zip(eager.named_parameters(), compiled.named_parameters()):
            assert (pe.grad is None) == (pc.grad is None), n
            if pe.grad is not None:
                np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
        for (n, be), (_, bc) in zip(eager.named_buffers(), compiled.named_buffers()):
            np.testing.assert_allclose(bc.numpy(), be.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)


def test_dropout_in_compiled_step_draws_fresh_masks():
    lucid.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5), nn.Linear(16, 1))
    step = compile_mod.make_step(model, F.mse_loss)
    x, y = lucid.randn(32, 16), lucid.randn(32, 1)
    losses = {round(float(step(x, y)), 6) for _ in range(4)}
    assert len(losses) > 1
    model.eval()  # eval is part of the signature: no dropout, a deterministic loss
    a, b = float(step(x, y)), float(step(x, y))
    assert a == b
