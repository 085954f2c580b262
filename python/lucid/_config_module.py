"""Settings modules for code that tunes PyTorch's compiler stack
(torch._dynamo.config, torch._inductor.config). Lucid's compiler has no such
knobs: the values are kept (so code that sets and reads them runs) and
change nothing. Reading a name never set raises AttributeError."""
import contextlib
import copy
import sys

_MISSING = object()


def install_config_module(module_name):
    """Gives the module ``patch`` (a context manager and decorator that sets
    values and restores them) and ``get_config_copy``."""
    module = sys.modules[module_name]
    names = [n for n, v in vars(module).items() if not n.startswith("_") and not callable(v)
             and not isinstance(v, type(sys))]

    def get_config_copy():
        return {n: copy.deepcopy(getattr(module, n)) for n in names if hasattr(module, n)}

    class _Patch(contextlib.ContextDecorator):
        def __init__(self, changes):
            self.changes = changes
            self.saved = []

        def __enter__(self):
            self.saved.append({k: getattr(module, k, _MISSING) for k in self.changes})
            for k, v in self.changes.items():
                setattr(module, k, v)
            return self

        def __exit__(self, *exc):
            for k, v in self.saved.pop().items():
                if v is _MISSING:
                    delattr(module, k)
                else:
                    setattr(module, k, v)
            return False

    def patch(arg1=None, arg2=None, **kwargs):
        changes = dict(kwargs)
        if isinstance(arg1, str):
            changes[arg1] = arg2
        elif isinstance(arg1, dict):
            changes.update(arg1)
        return _Patch(changes)

    module.patch = patch
    module.get_config_copy = get_config_copy
