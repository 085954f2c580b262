"""The profiler, as torch.profiler: ``profile`` (with ``schedule`` and
``on_trace_ready``), ``record_function``, ``ProfilerActivity``,
``tensorboard_trace_handler``. It records the CPU time of Lucid's eager ops,
backward nodes, compiled steps and named regions (see
lucid.autograd.profiler); traces are Chrome traces TensorBoard and Perfetto
read. Device activities are accepted and warn: Lucid times host work only."""
import enum
import gzip
import os
import socket
import time
import warnings

from ..autograd import profiler as _autograd_profiler
from ..autograd.profiler import record_function
from ..autograd.profiler_util import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function", "ExecutionTraceObserver"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


class DeviceType(enum.Enum):
    CPU = 0
    CUDA = 1


def kineto_available():
    """False: Lucid's profiler is its own recorder, not Kineto."""
    return False


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """PyTorch's step schedule: skip ``skip_first`` steps, then cycles of
    ``wait`` idle, ``warmup`` and ``active`` recorded steps (``repeat`` cycles,
    0 = until the end); the last active step of a cycle saves the trace."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule_fn(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An ``on_trace_ready`` writing ``<worker>.<time_ms>.pt.trace.json[.gz]``
    into ``dir_name`` (TensorBoard's profiler plugin reads that folder)."""

    def handler_fn(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, file_name)
        if use_gzip:
            plain = path + ".tmp"
            prof.export_chrome_trace(plain)
            with open(plain, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(plain)
        else:
            prof.export_chrome_trace(path)

    return handler_fn


class _ITraceObserver:
    pass


class ExecutionTraceObserver(_ITraceObserver):
    """PyTorch's execution-graph observer: Lucid records no execution graph."""

    def __init__(self):
        raise NotImplementedError("ExecutionTraceObserver: Lucid's profiler records no execution trace")


class profile(_autograd_profiler.profile):
    """``with profile(activities=[ProfilerActivity.CPU], record_shapes=True)
    as prof:`` then ``prof.key_averages().table(sort_by="cpu_time_total")``.
    With a ``schedule``, call ``prof.step()`` after each step: recording
    follows the schedule, each step is a ``ProfilerStep#N`` region, and
    ``on_trace_ready(prof)`` runs at the end of each active cycle."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        activities = set(activities) if activities else supported_activities()
        if use_cuda:
            activities.add(ProfilerActivity.CUDA)
        device_activities = sorted(a.name for a in activities if a is not ProfilerActivity.CPU)
        if device_activities:
            warnings.warn(f"Lucid's profiler records CPU time only: activities {device_activities} not recorded",
                          stacklevel=2)
        if execution_trace_observer is not None:
            raise NotImplementedError("execution_trace_observer: Lucid's profiler records no execution trace")
        super().__init__(enabled=True, record_shapes=record_shapes, with_flops=with_flops,
                         profile_memory=profile_memory, with_stack=with_stack, with_modules=with_modules)
        self.activities = activities
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._recording = False
        self._step_region = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step_region()

    def stop(self):
        self._exit_step_region()
        if self._recording:
            self._finish_cycle(save=True)

    def step(self):
        """Marks the end of a step: moves along the schedule."""
        self._exit_step_region()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._enter_step_region()

    def _transit(self, previous, current):
        if previous is ProfilerAction.RECORD_AND_SAVE:
            self._finish_cycle(save=True)
        if current in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE) and not self._recording:
            self._start()
            self._recording = True
        elif current in (ProfilerAction.NONE, ProfilerAction.WARMUP) and self._recording:
            self._finish_cycle(save=False)

    def _finish_cycle(self, save):
        self._stop()
        self._recording = False
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_step_region(self):
        if self.record_steps and self._recording:
            self._step_region = record_function(f"ProfilerStep#{self.step_num}")
            self._step_region.__enter__()

    def _exit_step_region(self):
        if self._step_region is not None:
            self._step_region.__exit__(None, None, None)
            self._step_region = None

    def events(self):
        self._check_finished()
        return self.function_events

    def export_memory_timeline(self, path, device=None):
        raise NotImplementedError("export_memory_timeline: Lucid's profiler records no memory")

    def add_metadata(self, key, value):
        pass

    def add_metadata_json(self, key, value):
        pass
