"""torch._dynamo.config's common settings, with PyTorch's defaults. Lucid's
compiler traces Python once per signature and has no graph breaks or
guards: these values are kept and change nothing."""
from .._config_module import install_config_module

log_file_name = None
verbose = False
verify_correctness = False
suppress_errors = False
recompile_limit = 8
cache_size_limit = 8
accumulated_recompile_limit = 256
accumulated_cache_size_limit = 256
error_on_recompile = False
report_guard_failures = True
dynamic_shapes = True
assume_static_by_default = True
automatic_dynamic_shapes = True
force_parameter_static_shapes = True
specialize_int = False
allow_unspec_int_on_nn_module = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
inline_inbuilt_nn_modules = True
guard_nn_modules = True
skip_nnmodule_hook_guards = True
optimize_ddp = True
raise_on_ctx_manager_usage = True

install_config_module(__name__)
