"""Python source for a value the probe's generated cases write: NaN and the
infinities as the names every case defines (nan, inf)."""
import math


def literal(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return repr(x)
