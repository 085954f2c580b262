"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While it is on with check_nan, the backward pass checks every gradient a
node returns and raises PyTorch's error at the first one holding a NaN
("Function 'SqrtBackward0' returned nan values in its 0th output."), so
the node that produced it is named. Lucid records no traceback of the
forward call that made the node, which PyTorch prints as a warning; the
check reads each gradient on the host, so it is for debugging, as PyTorch's.
"""
import functools
import warnings

from .. import _C

__all__ = ["detect_anomaly", "set_detect_anomaly"]


def _warn_enabled():
    warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                  "enabled for debugging.", stacklevel=3)


class detect_anomaly:
    """A context manager (or decorator) turning anomaly detection on inside."""

    def __init__(self, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        _warn_enabled()

    def __enter__(self):
        _C.set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _C.set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off when called; as a context manager it
    restores the previous setting on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        _C.set_anomaly_enabled(bool(mode), bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C.set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False
