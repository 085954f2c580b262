"""AdaptiveLogSoftmaxWithLoss: the clustered output layer of Grave et al.
(frequent classes in a head, the rest in smaller tail clusters)."""
import itertools
from collections import namedtuple

from ... import _C
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """PyTorch's layer, parameters and state_dict keys. Each tail cluster is
    evaluated on the whole batch and its rows picked by mask (PyTorch selects
    the rows first), so the layer has static shapes and traces into a
    compiled step; values and gradients are the same."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > (n_classes - 1)
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                                        Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        x = input_ if batched else _C.unsqueeze(input_, 0)
        target = _C.cast(target_ if batched else _C.unsqueeze(target_, 0), _C.dtype.int64)
        if not target.is_symbolic and target.numel():
            lo, hi = int(_C.amin(target, None, False).item()), int(_C.amax(target, None, False).item())
            if lo < 0 or hi >= self.n_classes:
                raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                                   f"[{lo}, {hi}] were found. ")
        head_index = target
        output = None
        for i, (low, high) in enumerate(itertools.pairwise(self.cutoffs)):
            in_cluster = _C.logical_and(_C.ge(target, low), _C.lt(target, high))
            head_index = _C.where(in_cluster, self.shortlist_size + i, head_index)
            cluster_logprob = F.log_softmax(self.tail[i](x), dim=1)
            local = _C.clamp(_C.sub(target, low), 0, high - low - 1)
            picked = _C.squeeze(_C.gather(cluster_logprob, 1, _C.unsqueeze(local, 1)), [1])
            term = _C.where(in_cluster, picked, 0.0)
            output = term if output is None else _C.add(output, term)
        head_logprob = F.log_softmax(self.head(x), dim=1)
        head_part = _C.squeeze(_C.gather(head_logprob, 1, _C.unsqueeze(head_index, 1)), [1])
        output = head_part if output is None else _C.add(output, head_part)
        loss = _C.mean(_C.neg(output), None, False)
        if not batched:
            output = _C.squeeze(output, [0])
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, x, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [_C.narrow(head_logprob, 1, 0, self.shortlist_size)]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(_C.add(cluster_logprob, _C.narrow(head_logprob, 1, self.shortlist_size + i, 1)))
        return _C.cat(parts, 1)

    def log_prob(self, input):  # noqa: A002
        """Log-probabilities of all n_classes classes, [N, n_classes]."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):  # noqa: A002
        """The most probable class of each row (log_prob(input).argmax(1))."""
        return _C.argmax(self.log_prob(input), 1, False)
