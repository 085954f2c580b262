"""torch.compiler.config: settings of PyTorch's compile caches, kept without effect in Lucid."""
from .._config_module import install_config_module

job_id = None
force_disable_caches = False

install_config_module(__name__)
