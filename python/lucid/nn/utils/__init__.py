"""lucid.nn.utils: gradient clipping, parameter/vector conversion, packed
sequences (lucid.nn.utils.rnn), weight/spectral normalization,
parametrizations, pruning (lucid.nn.utils.prune), conv/linear-batch-norm
fusion and skip_init."""
from . import fusion, init, parametrizations, parametrize, prune, rnn, stateless  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: F401
