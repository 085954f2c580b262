"""The autograd profiler, as torch.autograd.profiler: ``profile`` records the
CPU time of every eager op, backward node and ``record_function`` region run
inside it, on every thread; ``key_averages().table()`` prints PyTorch's table.

Lucid's events are its own primitives (``lucid::matmul``, ``lucid::add``...)
where PyTorch's are ATen ops; backward nodes carry PyTorch's names
(``autograd::engine::evaluate_function: MmBackward0``). A compiled step is
one region, ``lucid::compiled_step``. Neither memory, FLOPs, stacks nor
device-side kernel times are recorded: asking for them warns, and their
columns stay zero."""
import contextlib
import warnings

from .. import _C
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg, build_tree

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "EventList", "FunctionEvent",
           "FunctionEventAvg"]


def _warn_unrecorded(**asked):
    names = [name for name, on in asked.items() if on]
    if names:
        warnings.warn(f"Lucid's profiler records CPU time only: {', '.join(names)} not recorded", stacklevel=3)


def _collect(raw_events):
    """The core's (name, start_ns, end_ns, thread, shapes) tuples as a tree of FunctionEvents."""
    events = [FunctionEvent(name, start / 1000.0, end / 1000.0, thread, shapes,
                            is_user_annotation=not (name.startswith("lucid::") or name.startswith("autograd::")))
              for name, start, end, thread, shapes in raw_events]
    return build_tree(events)


class profile:
    """Records eager work while active (``with profile() as prof:``), then
    answers ``prof.key_averages()``, ``prof.function_events``, ``prof.table()``
    and ``prof.export_chrome_trace(path)``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.use_cpu = use_cpu
        if enabled:
            _warn_unrecorded(use_cuda=use_cuda, use_device=use_device is not None and use_device != "cpu",
                             with_flops=with_flops, profile_memory=profile_memory, with_stack=with_stack,
                             with_modules=with_modules)
        self.function_events = None
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop()
        return False

    def _start(self):
        if _C._profiler_enabled():
            raise RuntimeError("Profiler is already enabled on this thread")
        _C._profiler_enable(self.record_shapes)

    def _stop(self):
        self.function_events = _collect(_C._profiler_disable())

    def _check_finished(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None else repr(self.function_events)

    def __str__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None else str(self.table())

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finished()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)

    table.__doc__ = EventList.table.__doc__

    def events(self):
        self._check_finished()
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finished()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self):
        self._check_finished()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finished()
        return self.function_events.self_cpu_time_total

    def export_chrome_trace(self, path):
        self._check_finished()
        return self.function_events.export_chrome_trace(path)


class record_function(contextlib.ContextDecorator):
    """Names a region: while a profiler records, the region is one event
    (with the ops it runs as its children); otherwise it costs nothing.
    A context manager and a decorator, as PyTorch's."""

    def __init__(self, name, args=None):
        self.name = name if args is None else f"{name}, {args}"
        self._starts = []

    def __enter__(self):
        self._starts.append(_C._profiler_now_ns() if _C._profiler_enabled() else None)
        return self

    def __exit__(self, *exc):
        start = self._starts.pop()
        if start is not None and _C._profiler_enabled():
            _C._profiler_record(self.name, start, _C._profiler_now_ns())
        return False


class emit_nvtx:
    """NVTX ranges for nvprof/Nsight. Lucid emits none: without CUDA this
    fails as PyTorch's CPU build does; with CUDA it is a context that does
    nothing."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        from .. import cuda
        if self.enabled and not cuda.is_available():
            raise AssertionError("Torch not compiled with CUDA enabled")
        return self

    def __exit__(self, *exc):
        return False


class emit_itt:
    """Intel ITT ranges for VTune: Lucid emits none (a context that does nothing)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
