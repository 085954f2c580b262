"""lucid.distributed: Lucid has no multi-process backend. The module exists so
scripts that import its names at the top (``from torch.distributed import
init_process_group``) and decide at run time run single-process; starting a
process group raises."""

__all__ = ["DistributedUnavailableError", "all_reduce", "barrier", "destroy_process_group", "get_rank", "get_world_size", "init_process_group", "is_available",
           "is_initialized"]


def is_available():
    return False


def is_initialized():
    return False


class DistributedUnavailableError(RuntimeError, ValueError):
    """Raised by the calls that need a process group. Also a ValueError, the
    kind PyTorch raises when no process group was initialised."""


def _unsupported(what):
    return DistributedUnavailableError(f"lucid.distributed.{what}: lucid has no distributed backend (lucid.distributed."
                        "is_available() is False); run a single process")


def init_process_group(*args, **kwargs):
    raise _unsupported("init_process_group()")


def destroy_process_group(group=None):
    raise _unsupported("destroy_process_group()")


def get_rank(group=None):
    raise _unsupported("get_rank()")


def get_world_size(group=None):
    raise _unsupported("get_world_size()")


def barrier(*args, **kwargs):
    raise _unsupported("barrier()")


def all_reduce(*args, **kwargs):
    raise _unsupported("all_reduce()")
