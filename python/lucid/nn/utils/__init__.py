"""lucid.nn.utils: gradient clipping, parameter/vector conversion, packed
sequences (lucid.nn.utils.rnn), weight/spectral normalization and
parametrizations."""
from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: F401
