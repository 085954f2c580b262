"""lucid.jit: torch.jit's decorators, so code that scripts or traces a
function still runs. Lucid has no TorchScript: `script` and `trace` return
what they are given, which runs eagerly and computes the same values (to
compile a training step, use lucid.compile.fused_step); saving and loading
TorchScript archives raise."""

__all__ = ["script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing", "save", "load"]


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    return func


def ignore(drop=False, **kwargs):
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def is_scripting():
    return False


def is_tracing():
    return False


def save(m, f, _extra_files=None):
    raise NotImplementedError("lucid.jit.save: TorchScript archives are not supported by lucid; save the "
                              "state_dict with lucid.save")


def load(f, map_location=None, _extra_files=None):
    raise NotImplementedError("lucid.jit.load: TorchScript archives are not supported by lucid")
