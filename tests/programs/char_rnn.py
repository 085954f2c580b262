"""A character-level language model with an RNN, GRU or LSTM, in the style
of makemore / char-rnn: random windows of a text file, AdamW, gradient
clipping, periodic evaluation and sampling with torch.multinomial."""
import argparse
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F


class CharRNN(nn.Module):
    def __init__(self, vocab_size, n_embd, n_hidden, cell, n_layers):
        super().__init__()
        self.cell = cell
        self.wte = nn.Embedding(vocab_size, n_embd)
        rnn_cls = {'rnn': nn.RNN, 'gru': nn.GRU, 'lstm': nn.LSTM}[cell]
        self.rnn = rnn_cls(n_embd, n_hidden, num_layers=n_layers, batch_first=True)
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, targets=None, hidden=None):
        emb = self.wte(idx)  # (b, t, n_embd)
        out, hidden = self.rnn(emb, hidden)
        logits = self.lm_head(out)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float('Inf')
        probs = F.softmax(logits, dim=-1)
        if do_sample:
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--input-file', type=str,
                        default=os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'data', 'poems.txt'))
    parser.add_argument('--type', type=str, default='lstm', choices=['rnn', 'gru', 'lstm'])
    parser.add_argument('--max-steps', type=int, default=2000)
    parser.add_argument('--seed', type=int, default=3407)
    parser.add_argument('--n-embd', type=int, default=32)
    parser.add_argument('--n-hidden', type=int, default=64)
    parser.add_argument('--n-layer', type=int, default=2)
    parser.add_argument('--block-size', type=int, default=32)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--learning-rate', type=float, default=5e-3)
    parser.add_argument('--weight-decay', type=float, default=0.01)
    parser.add_argument('--eval-interval', type=int, default=500)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'

    with open(args.input_file, 'r', encoding='utf-8') as f:
        text = f.read()
    chars = sorted(list(set(text)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for ch, i in stoi.items()}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]

    def get_batch(split):
        d = train_data if split == 'train' else val_data
        ix = torch.randint(len(d) - args.block_size, (args.batch_size,))
        x = torch.stack([d[i:i + args.block_size] for i in ix])
        y = torch.stack([d[i + 1:i + args.block_size + 1] for i in ix])
        return x.to(device), y.to(device)

    @torch.inference_mode()
    def estimate_loss(iters=4):
        model.eval()
        out = {}
        for split in ['train', 'val']:
            losses = torch.zeros(iters)
            for k in range(iters):
                X, Y = get_batch(split)
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    model = CharRNN(len(chars), args.n_embd, args.n_hidden, args.type, args.n_layer).to(device)
    print(f"model #params: {sum(p.numel() for p in model.parameters())}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay,
                                  betas=(0.9, 0.99), eps=1e-8)

    for step in range(args.max_steps):
        t0 = time.time()
        X, Y = get_batch('train')
        logits, loss = model(X, Y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        t1 = time.time()
        print(f"step {step} | loss {loss.item():.6f} | step time {(t1 - t0) * 1000:.2f}ms")
        if step > 0 and step % args.eval_interval == 0:
            losses = estimate_loss()
            print(f"step {step} train loss: {losses['train']:.6f} val loss: {losses['val']:.6f}")

    start = torch.zeros((1, 1), dtype=torch.long, device=device)
    sample = generate(model, start, 40, do_sample=True, top_k=10)[0].tolist()
    print('sample:', repr(''.join(itos[i] for i in sample)))


if __name__ == '__main__':
    main()
