"""torch.multiprocessing: Python's multiprocessing (every name of it), plus
``spawn``/``start_processes`` and the sharing-strategy switches.

Tensors cross process boundaries by pickling (queues, pipes, ``Pool``
arguments): the receiver gets an equal tensor with its own memory. PyTorch
instead moves CPU tensors into shared memory, so an in-place change in one
process is seen by the others; Lucid's storages are not shared that way, and
``set_sharing_strategy`` only records the choice."""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
import warnings
from multiprocessing import *  # noqa: F401,F403

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
           *multiprocessing.__all__]

_all_sharing_strategies = {"file_descriptor", "file_system"} if sys.platform != "darwin" else {"file_system"}
_sharing_strategy = "file_descriptor" if sys.platform != "darwin" else "file_system"


def set_sharing_strategy(new_strategy):
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"sharing strategy must be one of {sorted(_all_sharing_strategies)}, "
                             f"got {new_strategy!r}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return set(_all_sharing_strategies)


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - the parent re-raises it with this traceback
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started; ``join()`` waits for them."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Waits up to ``timeout`` seconds; True once every process ended
        successfully. The first failure terminates the others and raises
        ProcessRaisedException (with the child's traceback) or
        ProcessExitedException."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        process = self.processes[failed]
        if self.error_queues[failed].empty():
            exitcode = process.exitcode
            if exitcode < 0:
                name = signal.Signals(-exitcode).name
                raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, process.pid,
                                             exitcode, name)
            raise ProcessExitedException(f"process {failed} terminated with exit code {exitcode}", failed,
                                         process.pid, exitcode)
        original = self.error_queues[failed].get()
        msg = f"\n\n-- Process {failed} terminated with the following error:\n{original}"
        raise ProcessRaisedException(msg, failed, process.pid)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs ``fn(i, *args)`` for i in range(nprocs), each in a new process."""
    context = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        error_queue = context.SimpleQueue()
        process = context.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        process.start()
        error_queues.append(error_queue)
        processes.append(process)
    process_context = ProcessContext(processes, error_queues)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the ``spawn`` start method (another one warns
    and is ignored, as in PyTorch: use ``start_processes`` for it)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t torch.multiprocessing.start_processes(...)",
                      FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
