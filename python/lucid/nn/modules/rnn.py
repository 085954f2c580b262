"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with
PyTorch's arguments, parameter names, shapes and initialisation (so torch
checkpoints load).

A layer runs its time loop in Python over lucid ops, so it traces into a
compiled step with the loop unrolled (one trace per sequence length). Each
step is three ops: the hidden projection (one GEMM), the cell (one fused
primitive for the gate math: lucid._C.*_cell_step) and, for packed input, a
row selection. The input projection of all steps is one GEMM up front, cut
into steps by one split_with_sizes node.
"""
import math
import numbers
import warnings

import numpy as np

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from ._factory import empty
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _zeros(shape, like):
    return _C.full(list(shape), 0.0, like.dtype, like.device)


def _step(mode, gi, gh, bias, state):
    """One cell step -> (h', c' or None)."""
    if mode == "LSTM":
        return _C.lstm_cell_step(gi, gh, bias, state)
    if mode == "GRU":
        return _C.gru_cell_step(gi, gh, bias, state), None
    return _C.rnn_cell_step(gi, gh, bias, mode == "RNN_RELU"), None


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        for name, v in (("hidden_size", hidden_size), ("num_layers", num_layers), ("input_size", input_size)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise TypeError(f"{name} should be of type int, got: {type(v).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device, dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """Kept for compatibility: the weights are always used as they are."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------ forward
    def _directions(self):
        return 2 if self.bidirectional else 1

    def _hidden_shape(self, batch):
        real = self.proj_size if self.proj_size > 0 else self.hidden_size
        return [self.num_layers * self._directions(), batch, real]

    def _check_input(self, x, batch_sizes):
        expected = 2 if batch_sizes is not None else 3
        if x.ndim != expected:
            raise _C.InvalidArgument(f"input must have {expected} dimensions, got {x.ndim}")
        if x.shape[-1] != self.input_size:
            raise _C.InvalidArgument(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                                     f"{x.shape[-1]}")
        if not x.dtype.is_floating_point:
            raise TypeError(f"input must be a floating-point tensor, got {x.dtype}")

    def _check_hidden(self, hx, expected, msg="Expected hidden size {}, got {}"):
        if list(hx.shape) != list(expected):
            raise _C.InvalidArgument(msg.format(list(expected), list(hx.shape)))

    def forward(self, input, hx=None):  # noqa: A002
        packed = isinstance(input, PackedSequence)
        is_lstm = self.mode == "LSTM"
        if packed:
            x, batch_sizes = input.data, input.batch_sizes
            sizes = batch_sizes.detach().cpu().numpy().astype(np.int64)
            batch = int(sizes[0])
            self._check_input(x, sizes)
            unbatched = False
        else:
            if not isinstance(input, _C.Tensor):
                raise TypeError(f"{type(self).__name__}: input must be a Tensor or a PackedSequence, got "
                                f"{type(input).__name__}")
            if input.ndim not in (2, 3):
                raise _C.InvalidArgument(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D "
                                         "instead")
            unbatched = input.ndim == 2
            x = _C.unsqueeze(input, 0 if self.batch_first else 1) if unbatched else input
            self._check_input(x, None)
            if self.batch_first:
                x = _C.transpose(x, 0, 1)
            steps, batch = x.shape[0], x.shape[1]
            sizes = np.full(steps, batch, dtype=np.int64)
            x = _C.reshape(x, [steps * batch, self.input_size])
        hidden_shape = self._hidden_shape(batch)
        cell_shape = [hidden_shape[0], batch, self.hidden_size]
        if hx is None:
            h0 = _zeros(hidden_shape, x)
            c0 = _zeros(cell_shape, x) if is_lstm else None
        else:
            if is_lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if unbatched:
                for name, t in (("hx", h0), ("cx", c0)):
                    if t is not None and t.ndim != 2:
                        raise RuntimeError(f"For unbatched 2-D input, {name} should also be 2-D but got {t.ndim}-D "
                                           "tensor")
                h0 = _C.unsqueeze(h0, 1)
                c0 = _C.unsqueeze(c0, 1) if c0 is not None else None
            elif h0.ndim != 3 or (c0 is not None and c0.ndim != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.ndim}-D, {c0.ndim if c0 is not None else h0.ndim}-D) tensors")
            if packed and input.sorted_indices is not None:
                h0 = _C.index_select(h0, 1, input.sorted_indices)
                c0 = _C.index_select(c0, 1, input.sorted_indices) if c0 is not None else None
            self._check_hidden(h0, hidden_shape)
            if c0 is not None:
                self._check_hidden(c0, cell_shape, "Expected hidden[1] size {}, got {}")
        out, h_n, c_n = self._run(x, sizes, h0, c0)
        if packed:
            output = PackedSequence(out, batch_sizes, input.sorted_indices, input.unsorted_indices)
            if input.unsorted_indices is not None:
                h_n = _C.index_select(h_n, 1, input.unsorted_indices)
                c_n = _C.index_select(c_n, 1, input.unsorted_indices) if c_n is not None else None
        else:
            output = _C.reshape(out, [len(sizes), batch, out.shape[-1]])
            if self.batch_first:
                output = _C.transpose(output, 0, 1)
            if unbatched:
                output = _C.squeeze(output, [0 if self.batch_first else 1])
                h_n = _C.squeeze(h_n, [1])
                c_n = _C.squeeze(c_n, [1]) if c_n is not None else None
        return output, ((h_n, c_n) if is_lstm else h_n)

    def _run(self, x, sizes, h0, c0):
        """x: [rows, features] in packed layout (step t's rows are the first
        sizes[t] sequences, after the earlier steps' rows). Returns (output
        rows, h_n, c_n)."""
        directions = self._directions()
        hs, cs = [], []
        layer_input = x
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_input = F.dropout(layer_input, self.dropout, True)
            outs = []
            for d in range(directions):
                names = self._all_weights[layer * directions + d]
                params = {n.split("_l")[0]: getattr(self, n) for n in names}
                k = layer * directions + d
                h = _C.reshape(_C.narrow(h0, 0, k, 1), list(h0.shape[1:]))
                c = _C.reshape(_C.narrow(c0, 0, k, 1), list(c0.shape[1:])) if c0 is not None else None
                out, h, c = self._direction(layer_input, sizes, params, h, c, reverse=d == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            layer_input = outs[0] if directions == 1 else _C.cat(outs, 1)
        h_n = _C.stack(hs, 0)
        c_n = _C.stack(cs, 0) if c0 is not None else None
        return layer_input, h_n, c_n

    def _direction(self, x, sizes, p, h0, c0, reverse):
        gi_all = _C.linear(x, p["weight_ih"], p.get("bias_ih"))
        w_hh, w_hr = p["weight_hh"], p.get("weight_hr")
        b_hh = p["bias_hh"] if "bias_hh" in p else _zeros([w_hh.shape[0]], gi_all)
        steps = len(sizes)
        # One node for all steps' rows, so backward concatenates their
        # gradients once instead of scattering each into a zero-filled copy.
        gi_steps = _C.split_with_sizes(gi_all, [int(n) for n in sizes], 0) if steps > 1 else [gi_all]
        outs = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        batch = h0.shape[0]
        h, c = h0, c0
        finished_h, finished_c = [], []
        if reverse:  # starts with the sequences that reach the last step
            n0 = int(sizes[-1])
            if n0 < batch:
                h = _C.narrow(h0, 0, 0, n0)
                c = _C.narrow(c0, 0, 0, n0) if c0 is not None else None
        for t in order:
            n = int(sizes[t])
            cur = h.shape[0]
            if n < cur:  # forward: sequences ending at t-1 keep their last state
                finished_h.append(_C.narrow(h, 0, n, cur - n))
                h = _C.narrow(h, 0, 0, n)
                if c is not None:
                    finished_c.append(_C.narrow(c, 0, n, cur - n))
                    c = _C.narrow(c, 0, 0, n)
            elif n > cur:  # reverse: sequences starting at t join with their initial state
                h = _C.cat([h, _C.narrow(h0, 0, cur, n - cur)], 0)
                if c is not None:
                    c = _C.cat([c, _C.narrow(c0, 0, cur, n - cur)], 0)
            gi = gi_steps[t]
            h, c = _step(self.mode, gi, _C.linear(h, w_hh), b_hh, h if self.mode == "GRU" else c)
            if w_hr is not None:
                h = _C.linear(h, w_hr)
            outs[t] = h
        if finished_h:  # rows in batch order: the still-running ones first, then those that ended latest
            h = _C.cat([h] + finished_h[::-1], 0)
            c = _C.cat([c] + finished_c[::-1], 0) if c is not None else None
        out = outs[0] if steps == 1 else _C.cat(outs, 0)
        return out, h, c


def _no_projections(name, kwargs):
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"{name}.__init__() got unexpected keyword arguments {sorted(kwargs)}")


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act
    tanh or relu."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        _no_projections(type(self).__name__, kwargs)
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """LSTM with PyTorch's gates (i, f, g, o) and optional projections
    (proj_size); returns (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """GRU with PyTorch's gates (r, z, n): n = tanh(W_in x + b_in + r (W_hn h
    + b_hn)), h' = (1 - z) n + z h."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, **kwargs):
        _no_projections(type(self).__name__, kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


# --------------------------------------------------------------------- cells
class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device, dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device, dtype))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), device, dtype))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), device, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prepare(self, input, states):  # noqa: A002
        """Validates; returns (input [B, in], states [B, H] each, unbatched)."""
        name = type(self).__name__
        if not isinstance(input, _C.Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise _C.InvalidArgument(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise _C.InvalidArgument(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                                     f"{self.input_size}")
        unbatched = input.ndim == 1
        x = _C.unsqueeze(input, 0) if unbatched else input
        out = []
        for s in states:
            if s is None:
                out.append(_zeros([x.shape[0], self.hidden_size], x))
                continue
            if s.ndim != input.ndim:
                raise _C.InvalidArgument(f"{name}: Expected hidden to be {input.ndim}D for {input.ndim}D input, got "
                                         f"{s.ndim}D instead")
            s = _C.unsqueeze(s, 0) if unbatched else s
            if list(s.shape) != [x.shape[0], self.hidden_size]:
                raise _C.InvalidArgument(f"Expected hidden size {[x.shape[0], self.hidden_size]}, got "
                                         f"{list(s.shape)}")
            out.append(s)
        return x, out, unbatched

    def _cell(self, mode, x, h, c):
        gi = _C.linear(x, self.weight_ih, self.bias_ih)
        b_hh = self.bias_hh if self.bias_hh is not None else _zeros([self.weight_hh.shape[0]], gi)
        return _step(mode, gi, _C.linear(h, self.weight_hh), b_hh, h if mode == "GRU" else c)


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h,), unbatched = self._prepare(input, [hx])
        out, _ = self._cell("RNN_RELU" if self.nonlinearity == "relu" else "RNN_TANH", x, h, None)
        return _C.squeeze(out, [0]) if unbatched else out


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        states = [None, None] if hx is None else list(hx)
        if len(states) != 2:
            raise TypeError("LSTMCell: hx must be a tuple (h_0, c_0)")
        x, (h, c), unbatched = self._prepare(input, states)
        h, c = self._cell("LSTM", x, h, c)
        if unbatched:
            return _C.squeeze(h, [0]), _C.squeeze(c, [0])
        return h, c


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h,), unbatched = self._prepare(input, [hx])
        out, _ = self._cell("GRU", x, h, None)
        return _C.squeeze(out, [0]) if unbatched else out
