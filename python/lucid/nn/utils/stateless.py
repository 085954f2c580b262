"""nn.utils.stateless (torch's older name for torch.func.functional_call)."""
from ...func import functional_call  # noqa: F401
