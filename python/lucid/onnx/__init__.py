"""lucid.onnx: importable, so scripts that import it at the top run. Exporting
a model to ONNX is not supported: `export` raises when called."""

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    raise NotImplementedError("lucid.onnx.export: exporting to ONNX is not supported by lucid (save the weights "
                              "with lucid.save, or trace the model with PyTorch after loading them there)")


def is_in_onnx_export():
    return False
