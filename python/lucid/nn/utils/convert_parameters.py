"""parameters_to_vector / vector_to_parameters."""
from ... import _C
from ...autograd import no_grad


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor."""
    params = list(parameters)
    _check_devices(params)
    return _C.cat([_C.reshape(p, [-1]) for p in params], 0)


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of `vec` into the parameters (in place)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _check_devices(params)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise _C.InvalidArgument(f"vector_to_parameters: expected a 1-D vector of {total} elements (the parameters' "
                                 f"total), got shape {list(vec.shape)}")
    with no_grad():
        offset = 0
        for p in params:
            n = p.numel()
            _C.assign_(p, _C.reshape(_C.narrow(vec, 0, offset, n), list(p.shape)))
            offset += n


def _check_devices(params):
    devices = {str(p.device) for p in params}
    if len(devices) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
