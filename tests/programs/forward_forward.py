"""PyTorch's forward-forward example (pytorch/examples
mnist_forward_forward/main.py): layers trained one by one on positive and
negative data, each with its own Adam. Synthetic flattened digits replace
the torchvision dataset."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam


def synthetic_loader(n, seed, batch_size):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = rng.random((n, 28, 28)).astype(np.float32) * 0.3
    for i, label in enumerate(labels):
        images[i, 2 + 2 * label:6 + 2 * label, 4:24] += 0.7
    images = ((images - 0.1307) / 0.3081).reshape(n, -1)  # Lambda(lambda x: torch.flatten(x))
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)


def overlay_y_on_x(x, y):
    """Replace the first 10 pixels of data [x] with one-hot-encoded label [y]
    """
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):

        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # The following loss pushes pos (neg) samples to
            # values larger (smaller) than the self.threshold.
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            # this backward just compute the derivative and hence
            # is not considered backpropagation.
            loss.backward()
            self.opt.step()
            if i % args.log_interval == 0:
                print("Loss: {:.6f}".format(loss.item()))
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000, metavar="N",
                        help="number of epochs to train (default: 1000)")
    parser.add_argument("--lr", type=float, default=0.03, metavar="LR", help="learning rate (default: 0.03)")
    parser.add_argument("--no_cuda", action="store_true", default=False, help="disables CUDA training")
    parser.add_argument("--no_mps", action="store_true", default=False, help="disables MPS training")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default: 1)")
    parser.add_argument("--save_model", action="store_true", default=False,
                        help="For saving the current Model")
    parser.add_argument("--train_size", type=int, default=50000, help="size of training set")
    parser.add_argument("--threshold", type=float, default=2, help="threshold for training")
    parser.add_argument("--test_size", type=int, default=10000, help="size of test set")
    parser.add_argument("--log-interval", type=int, default=10, metavar="N",
                        help="how many batches to wait before logging training status")
    parser.add_argument("--hidden", type=int, default=500)
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    use_mps = not args.no_mps and torch.backends.mps.is_available()
    if use_cuda:
        device = torch.device("cuda")
    elif use_mps:
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    torch.manual_seed(args.seed)
    train_loader = synthetic_loader(args.train_size, 0, args.train_size)
    test_loader = synthetic_loader(args.test_size, 1, args.test_size)

    net = Net([784, args.hidden, args.hidden])
    x, y = next(iter(train_loader))
    x, y = x.to(device), y.to(device)
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd])

    for data, name in zip([x, x_pos, x_neg], ["orig", "pos", "neg"]):
        assert data.shape == x.shape  # (the original plots the images)

    net.train(x_pos, x_neg)

    print("train error:", 1.0 - net.predict(x).eq(y).float().mean().item())

    x_te, y_te = next(iter(test_loader))
    x_te, y_te = x_te.to(device), y_te.to(device)

    if args.save_model:
        torch.save(net.state_dict(), "mnist_ff.pt")

    print("test error:", 1.0 - net.predict(x_te).eq(y_te).float().mean().item())
