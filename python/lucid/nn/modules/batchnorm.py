"""BatchNorm1d/2d/3d and InstanceNorm1d/2d/3d: running statistics are buffers, updated in
place during training (an in-place write in a compiled step)."""
from ... import _C
from ...autograd import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._factory import empty
from .module import Module


class _NormBase(Module):
    _version = 2
    # num_batches_tracked came with version 2: a checkpoint of an older (or
    # unversioned) module may lack it, and loading keeps the current count
    _buffers_since_version = {"num_batches_tracked": 2}

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty((num_features,), device, dtype))
            if bias:
                self.bias = Parameter(empty((num_features,), device, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", empty((num_features,), device, dtype))
            self.register_buffer("running_var", empty((num_features,), device, dtype))
            self.register_buffer("num_batches_tracked", _C.full([], 0, _C.dtype.int64, device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):  # noqa: A002
        raise NotImplementedError

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={use_bias}, "
                "track_running_stats={track_running_stats}").format(**self.__dict__, use_bias=self.bias is not None)


class _BatchNorm(_NormBase):
    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        keep_running = not self.training or self.track_running_stats
        running_mean = self.running_mean if keep_running else None
        running_var = self.running_var if keep_running else None
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        # Validate before the in-place counter update below: a bad input changes nothing.
        F._check_batch_norm(input, running_mean, running_var, self.weight, self.bias, use_batch_stats)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                _C.assign_(self.num_batches_tracked, _C.add(self.num_batches_tracked, 1))
            if self.momentum is None:  # cumulative moving average: 1 / batches seen, kept a tensor op
                factor = _C.div(1.0, _C.cast(self.num_batches_tracked, self.running_mean.dtype))
        return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, use_batch_stats, factor,
                            self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over [N, C] or [N, C, L]."""

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over [N, C, H, W]."""

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over [N, C, D, H, W]."""

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


class _InstanceNorm(_NormBase):
    """Normalises each (sample, channel) over its spatial dims; PyTorch's
    defaults: no affine part, no running statistics."""

    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):  # noqa: A002
        batched = self._spatial + 2
        if input.ndim not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.ndim}D input)")
        x = input if input.ndim == batched else _C.unsqueeze(input, 0)
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                             f"{x.shape[1]}.")
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              # momentum=None leaves the running statistics as they are (PyTorch
                              # passes 0.0; no cumulative average for instance norms)
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out if input.ndim == batched else _C.squeeze(out, [0])


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics would be reduced across the
    processes of a group. Lucid runs one process, so it is BatchNorm over any
    [N, C, *] input, as PyTorch's SyncBatchNorm is without a process group."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*d in it replaced by a SyncBatchNorm
        holding the same parameters and statistics."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
