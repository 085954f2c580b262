"""Packed sequences (torch.nn.utils.rnn): a batch of variable-length
sequences stored time step by time step, longest first, so a recurrent layer
runs each step on the sequences still going.

The layout is PyTorch's: ``data`` holds, for t = 0, 1, ..., the rows of the
``batch_sizes[t]`` sequences longer than t (in decreasing-length order);
``sorted_indices`` maps that order to the caller's batch order and
``unsorted_indices`` back. Packing and unpacking are one gather each (the row
positions come from the lengths, on the host), so gradients flow through
them. The lengths are read on the host: a compiled step that packs bakes them
into its trace.
"""
from collections import namedtuple

import numpy as np

from ... import _C
from ..._creation import tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


def _int64(arr):
    return tensor(np.ascontiguousarray(arr, dtype=np.int64), device="cpu")  # on the host, as PyTorch's batch_sizes


def _host_ints(x, what):
    if isinstance(x, _C.Tensor):
        if x.is_symbolic:
            raise RuntimeError(f"{what} must be concrete (known on the host); inside a compiled step the lengths of "
                               "packed sequences cannot be read")
        if x.dtype.is_floating_point:
            raise TypeError(f"{what} must be an integer tensor, got {x.dtype}")
        return x.detach().cpu().numpy().astype(np.int64).reshape(-1)
    return np.asarray(list(x), dtype=np.int64).reshape(-1)


def invert_permutation(permutation):
    if permutation is None:
        return None
    p = _host_ints(permutation, "permutation")
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size)
    out = _int64(inv)  # on the permutation's device, as PyTorch's
    return out.to(permutation.device) if isinstance(permutation, _C.Tensor) else out


_PackedSequenceBase = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices); build it with
    pack_padded_sequence or pack_sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence needs batch_sizes (build it with pack_padded_sequence or pack_sequence)")
        if batch_sizes.device.type != "cpu" or batch_sizes.ndim != 1 or batch_sizes.dtype != _C.dtype.int64:
            raise ValueError("batch_sizes should always be a 1-D int64 tensor on the CPU")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = [None if i is None else i.to(data.device) for i in (self.sorted_indices, self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, idx[0], idx[1])

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self._with_data(self.data.double())

    def float(self):
        return self._with_data(self.data.float())

    def half(self):
        return self._with_data(self.data.half())

    def detach(self):
        return self._with_data(self.data.detach())

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _check_lengths(lengths, batch):
    if lengths.size != batch:
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} (batch_size="
                         f"{batch})")
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")


def _batch_sizes(sorted_lengths):
    """batch_sizes[t] = how many sequences are longer than t."""
    t = np.arange(int(sorted_lengths[0]) if sorted_lengths.size else 0)
    return (sorted_lengths[None, :] > t[:, None]).sum(axis=1).astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Packs a padded batch [T, B, *] ([B, T, *] with batch_first) of
    sequences with the given lengths."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"pack_padded_sequence(): input must be a Tensor, not {type(input).__name__}")
    lengths = _host_ints(lengths, "lengths")
    if input.ndim < 2:
        raise RuntimeError(f"pack_padded_sequence: expected an input of at least 2 dims [T, B, *], got "
                           f"{list(input.shape)}")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    if enforce_sorted:
        if np.any(lengths[:-1] < lengths[1:]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        order = None
    else:
        order = np.argsort(-lengths, kind="stable")
    _check_lengths(lengths, batch)
    sorted_lengths = lengths if order is None else lengths[order]
    if sorted_lengths.size and sorted_lengths[0] > steps:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to the longest length "
                           f"{sorted_lengths[0]}, got {steps}")
    sizes = _batch_sizes(sorted_lengths)
    # Row k of the packed data is (time t, sorted position s): the padded
    # input's row t*B + b (b*T + t with batch_first), b its batch index.
    src = np.arange(batch) if order is None else order
    t_idx = np.repeat(np.arange(sizes.size), sizes)
    s_idx = np.concatenate([np.arange(n) for n in sizes]) if sizes.size else np.zeros(0, np.int64)
    b_idx = src[s_idx]
    rows = b_idx * steps + t_idx if batch_first else t_idx * batch + b_idx
    flat = _C.reshape(input, [steps * batch] + list(input.shape[2:]))
    data = _C.index_select(flat, 0, _int64(rows).to(input.device))
    sorted_indices = None if order is None else _int64(order).to(input.device)
    return PackedSequence(data, _int64(sizes), sorted_indices, invert_permutation(sorted_indices))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded [T, B, *] or [B, T, *],
    lengths as an int64 tensor), in the original batch order."""
    data, batch_sizes = sequence.data, _host_ints(sequence.batch_sizes, "batch_sizes")
    if batch_sizes.size == 0:
        raise RuntimeError("pad_packed_sequence: the packed sequence is empty")
    batch = int(batch_sizes[0])
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {steps}")
        steps = int(total_length)
    # Sorted position s has length = number of steps with batch_sizes > s.
    sorted_lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(np.int64)
    unsorted = np.arange(batch) if sequence.unsorted_indices is None else \
        _host_ints(sequence.unsorted_indices, "unsorted_indices")
    n = data.shape[0]
    t = np.arange(steps)[:, None]
    s = unsorted[None, :]  # output column j reads sorted position unsorted[j]
    valid = t < sorted_lengths[s]
    rows = np.where(valid, offsets[np.minimum(t, batch_sizes.size - 1)] + s, n)  # row n: the padding row
    if batch_first:
        rows = rows.T
    feat = list(data.shape[1:])
    pad_row = _C.full([1] + feat, padding_value, data.dtype, data.device)
    out = _C.index_select(_C.cat([data, pad_row], 0), 0, _int64(rows.reshape(-1)).to(data.device))
    out = _C.reshape(out, list(rows.shape) + feat)
    return out, _int64(sorted_lengths[unsorted])


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences [L_i, *] into [max L, B, *] ([B, max L, *] with
    batch_first), padding with `padding_value` on `padding_side`."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = list(_C.split(sequences, 1, 0)) if sequences.ndim else [sequences]
        sequences = [_C.squeeze(s, [0]) for s in sequences]
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    feat = list(sequences[0].shape[1:])
    for s in sequences:
        if s.ndim == 0 or list(s.shape[1:]) != feat:
            raise RuntimeError(f"The size of tensor a ({list(s.shape)}) must match the size of tensor b "
                               f"({[sequences[0].shape[0]] + feat}) except at the first dimension")
    lengths = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    steps, batch = int(lengths.max()), len(sequences)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    total = int(lengths.sum())
    t = np.arange(steps)[:, None]
    shift = (steps - lengths)[None, :] if padding_side == "left" else np.zeros((1, batch), np.int64)
    pos = t - shift  # position inside sequence b at output step t
    valid = (pos >= 0) & (pos < lengths[None, :])
    rows = np.where(valid, starts[None, :] + pos, total)
    if batch_first:
        rows = rows.T
    dt = sequences[0].dtype
    data = _C.cat(list(sequences) + [_C.full([1] + feat, padding_value, dt, sequences[0].device)], 0)
    out = _C.index_select(data, 0, _int64(rows.reshape(-1)).to(sequences[0].device))
    return _C.reshape(out, list(rows.shape) + feat)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, each cut to its length."""
    lengths = _host_ints(lengths, "lengths")
    x = padded_sequences if batch_first else _C.transpose(padded_sequences, 0, 1)
    return [_C.narrow(_C.squeeze(_C.narrow(x, 0, i, 1), [0]), 0, 0, int(n)) for i, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences [L_i, *] (longest first unless
    enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
