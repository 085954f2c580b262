"""PyTorch's tutorial "Text classification with the torchtext library"
(pytorch/tutorials beginner_source/text_sentiment_ngrams_tutorial.py): an
nn.EmbeddingBag (mean over offsets) and a linear layer, a collate_fn that
builds the flat text and offsets, random_split, SGD with gradient clipping
and a StepLR stepped when validation accuracy drops. Changed: AG_NEWS,
torchtext's basic_english tokenizer, build_vocab_from_iterator and
to_map_style_dataset are replaced by generated four-topic headlines and a
few lines doing what those helpers do; sizes come from the command line,
and each log line also prints the mean training loss since the last one."""
import argparse
import re
from collections import Counter

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument('--train-size', type=int, default=120000)
parser.add_argument('--test-size', type=int, default=7600)
parser.add_argument('--epochs', type=int, default=10)
parser.add_argument('--batch-size', type=int, default=64)
parser.add_argument('--log-interval', type=int, default=500)
cli = parser.parse_args()

# ---- stand-ins for torchtext's AG_NEWS, get_tokenizer("basic_english"), build_vocab_from_iterator and
# to_map_style_dataset
_topics = {1: "world election minister talks war peace border leaders treaty capital",
           2: "team match goal season coach league win cup players final",
           3: "shares market profit bank stocks oil prices company quarter deal",
           4: "software internet computer space scientists phone chip research data network"}
_filler = "the a of in on after says new over with for to and as".split()


def _headlines(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        label = int(rng.integers(1, 5))
        words = list(rng.choice(_topics[label].split(), 4)) + list(rng.choice(_filler, 5))
        if rng.random() < 0.3:  # a word from another topic
            words.append(str(rng.choice(_topics[int(rng.integers(1, 5))].split())))
        rng.shuffle(words)
        out.append((label, " ".join(words).capitalize() + ", Reuters."))
    return out


def AG_NEWS(split=None):
    train, test = _headlines(cli.train_size, 0), _headlines(cli.test_size, 1)
    return {"train": train, "test": test}[split] if split else (train, test)


_patterns = [r"\'", r"\"", r"\.", r"<br \/>", r",", r"\(", r"\)", r"\!", r"\?", r"\;", r"\:", r"\s+"]
_replacements = [" '  ", "", " . ", " ", " , ", " ( ", " ) ", " ! ", " ? ", " ", " ", " "]


def get_tokenizer(name):
    def basic_english(line):
        line = line.lower()
        for pattern, replacement in zip(_patterns, _replacements):
            line = re.sub(pattern, replacement, line)
        return line.split()
    return basic_english


class Vocab:
    def __init__(self, iterator, specials):
        counter = Counter()
        for tokens in iterator:
            counter.update(tokens)
        ordered = sorted(sorted(counter.items(), key=lambda x: x[0]), key=lambda x: x[1], reverse=True)
        self.itos = list(specials) + [t for t, _ in ordered if t not in specials]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.default_index = None

    def set_default_index(self, index):
        self.default_index = index

    def __getitem__(self, token):
        return self.stoi.get(token, self.default_index)

    def __call__(self, tokens):
        return [self.stoi.get(t, self.default_index) for t in tokens]

    def __len__(self):
        return len(self.itos)


def build_vocab_from_iterator(iterator, specials):
    return Vocab(iterator, specials)


def to_map_style_dataset(iter_data):
    return list(iter_data)
# ----


tokenizer = get_tokenizer("basic_english")
train_iter = AG_NEWS(split="train")


def yield_tokens(data_iter):
    for _, text in data_iter:
        yield tokenizer(text)


vocab = build_vocab_from_iterator(yield_tokens(train_iter), specials=["<unk>"])
vocab.set_default_index(vocab["<unk>"])

text_pipeline = lambda x: vocab(tokenizer(x))
label_pipeline = lambda x: int(x) - 1

from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


train_iter = AG_NEWS(split="train")
dataloader = DataLoader(
    train_iter, batch_size=8, shuffle=False, collate_fn=collate_batch
)

from torch import nn


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


train_iter = AG_NEWS(split="train")
num_class = len(set([label for (label, text) in train_iter]))
vocab_size = len(vocab)
emsize = 64
model = TextClassificationModel(vocab_size, emsize, num_class).to(device)

import time


def train(dataloader):
    model.train()
    total_acc, total_count, total_loss = 0, 0, 0.0
    log_interval = cli.log_interval
    start_time = time.time()

    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        total_loss += loss.item()
        if idx % log_interval == 0 and idx > 0:
            elapsed = time.time() - start_time
            print(
                "| epoch {:3d} | {:5d}/{:5d} batches "
                "| accuracy {:8.3f} | loss {:8.6f}".format(
                    epoch, idx, len(dataloader), total_acc / total_count, total_loss / log_interval
                )
            )
            total_acc, total_count, total_loss = 0, 0, 0.0
            start_time = time.time()


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0

    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


from torch.utils.data.dataset import random_split
# Hyperparameters
EPOCHS = cli.epochs  # epoch
LR = 5  # learning rate
BATCH_SIZE = cli.batch_size  # batch size for training

criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
total_accu = None
train_iter, test_iter = AG_NEWS()
train_dataset = to_map_style_dataset(train_iter)
test_dataset = to_map_style_dataset(test_iter)
num_train = int(len(train_dataset) * 0.95)
split_train_, split_valid_ = random_split(
    train_dataset, [num_train, len(train_dataset) - num_train]
)

train_dataloader = DataLoader(
    split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)
valid_dataloader = DataLoader(
    split_valid_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)
test_dataloader = DataLoader(
    test_dataset, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)

for epoch in range(1, EPOCHS + 1):
    epoch_start_time = time.time()
    train(train_dataloader)
    accu_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    print("-" * 59)
    print(
        "| end of epoch {:3d} | time: {:5.2f}s | "
        "valid accuracy {:8.3f} ".format(
            epoch, time.time() - epoch_start_time, accu_val
        )
    )
    print("-" * 59)

print("Checking the results of test dataset.")
accu_test = evaluate(test_dataloader)
print("test accuracy {:8.3f}".format(accu_test))

ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


ex_text_str = "Stocks and oil prices fell after the bank said quarter profit was down."

model = model.to("cpu")

print("This is a %s news" % ag_news_label[predict(ex_text_str, text_pipeline)])
