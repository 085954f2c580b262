"""torch._inductor.config's common settings, with PyTorch's defaults. Lucid
has no Inductor: these values are kept and change nothing."""
import types as _types

from .._config_module import install_config_module

max_autotune = False
coordinate_descent_tuning = False
epilogue_fusion = True
shape_padding = True
freezing = False
fx_graph_cache = True
force_fuse_int_mm_with_mul = False
use_mixed_mm = True
triton = _types.SimpleNamespace(unique_kernel_names=True, cudagraphs=False)

install_config_module(__name__)
