"""A sentence-level word language model over variable-length sentences, the
usual way with packed sequences: pad_sequence, pack_padded_sequence
(enforce_sorted=False), an LSTM/GRU, pad_packed_sequence and a loss that
ignores the padding."""
import argparse
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

PAD = 0


class SentenceLM(nn.Module):
    def __init__(self, vocab, emb, hidden, layers, rnn_type, dropout):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.rnn = getattr(nn, rnn_type)(emb, hidden, num_layers=layers, batch_first=True, dropout=dropout)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, padding_value=0.0, total_length=tokens.size(1))
        return self.proj(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--model', default='LSTM', choices=['LSTM', 'GRU'])
    parser.add_argument('--emsize', type=int, default=64)
    parser.add_argument('--nhid', type=int, default=128)
    parser.add_argument('--nlayers', type=int, default=2)
    parser.add_argument('--dropout', type=float, default=0.0)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--max-batches', type=int, default=0)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    random.seed(args.seed)

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'examples', 'data', 'poems.txt')
    with open(path, encoding='utf8') as f:
        sentences = [line.lower().split() for line in f if len(line.split()) >= 2]
    vocab = {'<pad>': PAD, '<eos>': 1}
    for s in sentences:
        for w in s:
            vocab.setdefault(w, len(vocab))
    data = [torch.tensor([vocab[w] for w in s] + [1]) for s in sentences]
    print(f'{len(data)} sentences, {len(vocab)} words')

    model = SentenceLM(len(vocab), args.emsize, args.nhid, args.nlayers, args.model, args.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    order = list(range(len(data)))
    step = 0
    for epoch in range(args.epochs):
        random.shuffle(order)
        model.train()
        for b in range(0, len(order) - args.batch_size + 1, args.batch_size):
            batch = [data[i] for i in order[b:b + args.batch_size]]
            lengths = torch.tensor([len(s) - 1 for s in batch])
            inputs = pad_sequence([s[:-1] for s in batch], batch_first=True, padding_value=PAD)
            targets = pad_sequence([s[1:] for s in batch], batch_first=True, padding_value=PAD)
            logits = model(inputs, lengths)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=PAD)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            print(f'epoch {epoch} step {step} loss {loss.item():.6f}')
            step += 1
            if args.max_batches and (b // args.batch_size) + 1 >= args.max_batches:
                break


if __name__ == '__main__':
    main()
