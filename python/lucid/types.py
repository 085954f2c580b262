"""torch.types: the aliases signatures are annotated with."""
import os
from typing import IO, Any, Sequence, Union  # noqa: F401

from ._C import Tensor, device as _device, dtype as _dtype  # noqa: F401

_bool = bool
_int = int
_float = float
_complex = complex
_str = str
_bytes = bytes
_size = Sequence[int]
_symsize = Sequence[int]
_dispatchkey = str
_layout = str
_qscheme = str

Number = Union[int, float, bool]
_Number = (int, float, bool)
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
Device = Union[_device, str, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]
Storage = Any  # Lucid exposes no storage objects
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]
py_sym_types = ()
