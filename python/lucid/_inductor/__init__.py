"""torch._inductor's settings module, for code that tunes it (see config)."""
from . import config  # noqa: F401
