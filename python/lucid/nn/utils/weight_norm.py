"""Weight and spectral normalization as forward pre-hooks
(torch.nn.utils.weight_norm / spectral_norm): the parameter is replaced by
others it is computed from before each forward, with PyTorch's names
(`weight_g`, `weight_v`; `weight_orig`, `weight_u`, `weight_v`)."""
from ... import _C
from ...autograd import no_grad
from ..parameter import Parameter


def norm_except_dim(v, pow=2, dim=0):  # noqa: A002
    """The norm over every dim but `dim` (all of them for dim=-1), kept
    broadcastable against v."""
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.ndim
    keep = [1] * v.ndim
    keep[dim] = v.shape[dim]
    return v.movedim(dim, 0).reshape(v.shape[dim], -1).norm(pow, dim=1).reshape(keep)


def weight_as_matrix(weight, dim):
    """`dim` moved to the front, the rest flattened: the matrix whose largest
    singular value spectral normalization divides by."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.ndim) if d != dim])
    return weight.reshape(weight.shape[0], -1)


def default_spectral_dim(module):
    """PyTorch's: the output-channel dim, 1 for transposed convolutions."""
    from ..modules.conv import _ConvTransposeNd

    return 1 if isinstance(module, _ConvTransposeNd) else 0


def _weight_norm(v, g, dim=0):
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook, _ in getattr(module, "_forward_pre_hooks", {}).values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        object.__setattr__(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """w = g v / ||v||: `name` becomes `name_g` (the norm) and `name_v` (the
    direction), recombined before each forward."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    return _remove(module, name, WeightNorm, "weight_norm")


def _remove(module, name, kind, what):
    hooks = getattr(module, "_forward_pre_hooks", {})
    for k, (hook, _) in list(hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del hooks[k]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")


class SpectralNorm:
    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        return weight_as_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        from .. import functional as F

        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():  # the buffers are updated in place, as PyTorch's out= calls do
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(_C.matmul(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_C.matmul(weight_mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = _C.matmul(u, _C.matmul(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        for suffix in ("_u", "_v"):
            del module._buffers[self.name + suffix]
        del module._parameters[self.name + "_orig"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        from .. import functional as F

        for hook, _ in getattr(module, "_forward_pre_hooks", {}).values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """W / sigma(W), sigma estimated by power iteration (one step per
    training forward): `name` becomes `name_orig` with buffers `name_u`,
    `name_v`."""
    if dim is None:
        dim = default_spectral_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    return _remove(module, name, SpectralNorm, "spectral_norm")
