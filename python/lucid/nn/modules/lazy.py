"""Lazy modules (LazyLinear, LazyConv*, LazyBatchNorm*, LazyInstanceNorm*):
the input size is read from the first input. Until then the parameters are
UninitializedParameter objects; the first forward gives each its shape in
place (the same Python object, so an optimizer built before it holds the
real parameter), runs reset_parameters once, and the module becomes its
concrete class (LazyLinear -> Linear), as in PyTorch."""
import warnings

from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter, UninitializedTensorMixin
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear

__all__ = ["LazyModuleMixin", "UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class LazyModuleMixin:
    cls_to_become = None

    def _make_lazy(self, names, buffer_names=()):
        for name in names:
            current = self._parameters.get(name)
            if current is not None:
                self._parameters[name] = UninitializedParameter(current.requires_grad, current.device, current.dtype)
        for name in buffer_names:
            current = self._buffers.get(name)
            if current is not None:
                self._buffers[name] = UninitializedBuffer(device=current.device, dtype=current.dtype)
        self._lazy_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_and_materialize)

    def has_uninitialized_params(self):
        return any(isinstance(t, UninitializedTensorMixin) for t in list(self._parameters.values()) +
                   list(self._buffers.values()))

    def initialize_parameters(self, input):  # noqa: A002
        features = self._features_of(input)
        for name, shape in self._shapes(features).items():
            if isinstance(self._parameters.get(name), UninitializedParameter):
                self._parameters[name].materialize(shape)
            elif isinstance(self._buffers.get(name), UninitializedBuffer):
                self._buffers[name] = self._buffers[name].materialize(shape)
        self.reset_parameters()

    @staticmethod
    def _infer_and_materialize(module, args):
        if module.has_uninitialized_params():
            module.initialize_parameters(*args[:1])
        module._lazy_hook.remove()
        del module._lazy_hook
        module.__class__ = module.cls_to_become


class _LazyLinear(LazyModuleMixin):
    def _features_of(self, input):  # noqa: A002
        self.in_features = input.shape[-1]
        return self.in_features

    def _shapes(self, in_features):
        return {"weight": (self.out_features, in_features), "bias": (self.out_features,)}


class LazyLinear(_LazyLinear, Linear):
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the zero-size placeholder's init
            Linear.__init__(self, 0, out_features, bias, device, dtype)
        self._make_lazy(["weight", "bias"])


class _LazyConv(LazyModuleMixin):
    def _features_of(self, input):  # noqa: A002
        batched = input.ndim == self._nd + 2
        self.in_channels = input.shape[1 if batched else 0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        return self.in_channels

    def _shapes(self, in_channels):
        if self.transposed:
            weight = (in_channels, self.out_channels // self.groups) + tuple(self.kernel_size)
        else:
            weight = (self.out_channels, in_channels // self.groups) + tuple(self.kernel_size)
        return {"weight": weight, "bias": (self.out_channels,)}


def _lazy_conv(concrete, transposed):
    class LazyConv(_LazyConv, concrete):
        cls_to_become = concrete

        if transposed:
            def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                         dilation=1, padding_mode="zeros", device=None, dtype=None):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    concrete.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups,
                                      bias, dilation, padding_mode, device, dtype)
                self._make_lazy(["weight", "bias"])
        else:
            def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                         padding_mode="zeros", device=None, dtype=None):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    # groups is checked against the real in_channels on the first input
                    concrete.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, 1, bias,
                                      padding_mode, device, dtype)
                self.groups = groups
                if out_channels % groups != 0:
                    raise ValueError("out_channels must be divisible by groups")
                self._make_lazy(["weight", "bias"])

    LazyConv.__name__ = LazyConv.__qualname__ = "Lazy" + concrete.__name__
    return LazyConv


LazyConv1d = _lazy_conv(Conv1d, False)
LazyConv2d = _lazy_conv(Conv2d, False)
LazyConv3d = _lazy_conv(Conv3d, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, True)


class _LazyNorm(LazyModuleMixin):
    def _features_of(self, input):  # noqa: A002
        self.num_features = input.shape[1] if input.ndim > self._unbatched_ndim else input.shape[0]
        return self.num_features

    def _shapes(self, num_features):
        return {name: (num_features,) for name in ("weight", "bias", "running_mean", "running_var")}


def _lazy_norm(concrete, unbatched_ndim, affine_default, track_default):
    class LazyNorm(_LazyNorm, concrete):
        cls_to_become = concrete
        _unbatched_ndim = unbatched_ndim

        def __init__(self, eps=1e-5, momentum=0.1, affine=affine_default, track_running_stats=track_default,
                     device=None, dtype=None, *, bias=True):
            # bias=False only where the concrete class takes it (the batch norms)
            concrete.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype,
                              **({} if bias else {"bias": False}))
            self._make_lazy(["weight", "bias"], ["running_mean", "running_var"])

    LazyNorm.__name__ = LazyNorm.__qualname__ = "Lazy" + concrete.__name__
    return LazyNorm


# Batch norms take batched input only (channels at dim 1); instance norms also (C, *) unbatched.
LazyBatchNorm1d = _lazy_norm(BatchNorm1d, 0, True, True)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, 0, True, True)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, 0, True, True)
# PyTorch's lazy instance norms default to affine and tracked statistics (unlike InstanceNorm*d).
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, 2, True, True)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, 3, True, True)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, 4, True, True)
