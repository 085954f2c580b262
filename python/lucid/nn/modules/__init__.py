"""The layer classes of lucid.nn."""
from .activation import (CELU, ELU, GELU, GLU, LeakyReLU, LogSigmoid, LogSoftmax, Mish, MultiheadAttention,  # noqa: F401
                         PReLU, ReLU, ReLU6, SELU, Hardsigmoid, Hardswish, Hardtanh, SiLU, Sigmoid, Softmax, Softmin,
                         Softplus, Softsign, Tanh)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .batchnorm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, SyncBatchNorm,  # noqa: F401,E501
                        InstanceNorm3d)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Fold,  # noqa: F401
                   Unfold)
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Bilinear, Identity, Linear, NonDynamicallyQuantizableLinear  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CTCLoss, CrossEntropyLoss,  # noqa: F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                   TripletMarginLoss, TripletMarginWithDistanceLoss)
from .more import (AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AlphaDropout, ChannelShuffle,  # noqa: F401
                   CosineSimilarity, FeatureAlphaDropout, Hardshrink, LocalResponseNorm, LPPool1d, LPPool2d, LPPool3d,
                   PairwiseDistance, RReLU, Softmax2d, Softshrink, Tanhshrink, Threshold)
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: F401
                      ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
                      ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .module import Module  # noqa: F401
from .normalization import GroupNorm, LayerNorm, RMSNorm  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AvgPool1d, AvgPool2d,  # noqa: F401
                      AvgPool3d, FractionalMaxPool2d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d,
                      MaxUnpool3d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerEncoderLayer)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,  # noqa: F401
                   LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, UninitializedBuffer, UninitializedParameter)
from .container import Container  # noqa: F401
from .loss import NLLLoss2d  # noqa: F401

# PyTorch's modules hold some layers that Lucid defines elsewhere (the extra layers in more.py, the lazy ones in
# lazy.py, which build on these modules): the names are added to PyTorch's homes once everything is imported.
from . import (activation as _activation, batchnorm as _batchnorm, conv as _conv, dropout as _dropout,  # noqa: E402
               lazy as _lazy, linear as _linear, more as _more, normalization as _normalization, pooling as _pooling)
for _home, _source, _names in (
        (_activation, _more, ["Hardshrink", "RReLU", "Softmax2d", "Softshrink", "Tanhshrink", "Threshold"]),
        (_dropout, _more, ["AlphaDropout", "FeatureAlphaDropout"]),
        (_normalization, _more, ["LocalResponseNorm"]),
        (_pooling, _more, ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
                           "LPPool3d"]),
        (_conv, _lazy, ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
                        "LazyConvTranspose3d"]),
        (_linear, _lazy, ["LazyLinear"]),
        (_batchnorm, _lazy, ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"])):
    for _name in _names:
        setattr(_home, _name, getattr(_source, _name))
