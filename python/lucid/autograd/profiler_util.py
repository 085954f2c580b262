"""The profiler's events and their tables, as torch.autograd.profiler_util.

An event is one timed interval recorded by the core (an eager primitive,
``lucid::<op>``; a backward node, ``autograd::engine::evaluate_function:
<Node>``) or by ``record_function``. Intervals of one thread nest: an event's
parent is the innermost interval enclosing it, and its self time is its time
less its children's. Times are CPU wall-clock microseconds, as PyTorch's."""
import itertools
import json
import os
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]

_US_IN_MS = 1000.0
_US_IN_SECOND = 1000.0 * 1000.0


def _format_time(time_us):
    if time_us >= _US_IN_SECOND:
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if time_us >= _US_IN_MS:
        return f"{time_us / _US_IN_MS:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_in(time_us, unit):
    if unit is None:
        return _format_time(time_us)
    scale = {"s": _US_IN_SECOND, "ms": _US_IN_MS, "us": 1.0}.get(unit)
    if scale is None:
        raise ValueError(f"time_unit must be one of 's', 'ms' or 'us', got {unit!r}")
    return f"{time_us / scale:.3f}{unit}"


def _format_percent(part, total):
    return f"{100.0 * part / total:.2f}%" if total else "0.00%"


class _FormattedTimes:
    """The formatted times of an event or of a key's sum (``cpu_time``,
    ``cpu_time_total`` and ``self_cpu_time_total`` defined by each), and the
    device time Lucid does not record."""

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time = property(lambda self: 0.0)
    cuda_time = device_time


class FunctionEvent(_FormattedTimes):
    """One recorded interval: ``name``, ``thread``, ``time_range`` (start and
    end in microseconds), ``input_shapes`` (with ``record_shapes``) and its
    place in the tree (``cpu_parent``, ``cpu_children``)."""

    _ids = itertools.count()

    def __init__(self, name, start_us, end_us, thread=0, input_shapes=None, is_user_annotation=False):
        self.id = next(self._ids)
        self.name = name
        self.key = name
        self.start_us = start_us
        self.end_us = end_us
        self.thread = thread
        self.input_shapes = [list(s) for s in input_shapes] if input_shapes else []
        self.is_user_annotation = is_user_annotation
        self.cpu_parent = None
        self.cpu_children = []
        self.count = 1
        self.device_type = "CPU"
        self.use_device = None
        self.stack = []
        self.scope = 0
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.node_id = -1
        self.flops = 0
        # Lucid records no memory or device activity: those columns are zero.
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.device_time_total = self.self_device_time_total = 0.0

    @property
    def time_range(self):
        return (self.start_us, self.end_us)

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={self.cpu_time_total_str} self_cpu_time={self.self_cpu_time_total_str} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_FormattedTimes):
    """The events of one key (a name, or a name and input shapes) summed:
    ``count``, ``cpu_time_total``, ``self_cpu_time_total``, ``cpu_time``
    (the mean)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.is_user_annotation = False
        self.cpu_parent = None
        self.cpu_children = None
        self.device_type = "CPU"
        self.use_device = None
        self.stack = None
        self.scope = None
        self.is_async = self.is_remote = self.is_legacy = False
        self.node_id = 0
        self.flops = 0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.device_time_total = self.self_device_time_total = 0.0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise AssertionError(f"cannot add the events of {other.key!r} to those of {self.key!r}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    __iadd__ = add

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (or of averages) that prints as PyTorch's table."""

    def __init__(self, *args, **kwargs):
        kwargs.pop("use_device", None)
        kwargs.pop("profile_memory", None)
        kwargs.pop("with_flops", None)
        super().__init__(*args, **kwargs)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        groups = defaultdict(FunctionEventAvg)
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shapes else e.key
            groups[key].add(e)
        averages = EventList(groups.values())
        if not group_by_input_shapes:
            for avg in averages:
                avg.input_shapes = ""  # one row stands for calls of any shapes
        return averages

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        return _build_table(self, sort_by, row_limit, max_name_column_width, max_shapes_column_width, header,
                            top_level_events_only, time_unit)

    def export_chrome_trace(self, path):
        """Writes the events in the Chrome trace format (chrome://tracing, Perfetto)."""
        pid = os.getpid()
        trace = []
        for e in self:
            entry = {"name": e.name, "ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                     "ts": e.start_us, "dur": e.cpu_time_total, "pid": pid, "tid": e.thread}
            if e.input_shapes:
                entry["args"] = {"Input Dims": e.input_shapes}
            trace.append(entry)
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)

    def supported_export_stacks_metrics(self):
        return []

    def export_stacks(self, path, metric="self_cpu_time_total"):
        raise NotImplementedError("export_stacks: Lucid's profiler records no stacks (with_stack)")


def build_tree(events):
    """Links each event to the innermost event of its thread that encloses it."""
    by_thread = defaultdict(list)
    for e in events:
        by_thread[e.thread].append(e)
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e.start_us, -e.end_us))
        open_events = []
        for e in thread_events:
            while open_events and open_events[-1].end_us <= e.start_us:
                open_events.pop()
            if open_events and e.end_us <= open_events[-1].end_us:
                e.cpu_parent = open_events[-1]
                open_events[-1].cpu_children.append(e)
            open_events.append(e)
    return EventList(sorted(events, key=lambda e: (e.start_us, -e.end_us)))


def _build_table(events, sort_by, row_limit, max_name_column_width, max_shapes_column_width, header,
                 top_level_events_only, time_unit):
    if not events:
        return ""
    rows = list(events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device")
        rows.sort(key=lambda e: getattr(e, attr), reverse=True)
    if top_level_events_only:
        rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
    shown = rows[:row_limit] if row_limit is not None and row_limit >= 0 else rows
    with_shapes = any(e.input_shapes for e in events)
    name_width = max(len(e.key) for e in rows) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in rows) + 4 if with_shapes else 0
    if with_shapes and max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    self_total = events.self_cpu_time_total if isinstance(events, EventList) else sum(
        e.self_cpu_time_total for e in events)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [name_width] + [12] * 6
    if with_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row_format = "".join("{:>" + str(w) + "}  " for w in widths)
    line = "".join("-" * w + "  " for w in widths)

    def clip(text, width):
        return text[:width - 3] + "..." if len(text) > width else text

    out = []
    if header is not None:
        out += ["=" * len(line), header]
    out += [line, row_format.format(*headers), line]
    for e in shown:
        cells = [clip(e.key, name_width), _format_percent(e.self_cpu_time_total, self_total),
                 _format_time_in(e.self_cpu_time_total, time_unit), _format_percent(e.cpu_time_total, self_total),
                 _format_time_in(e.cpu_time_total, time_unit), _format_time_in(e.cpu_time, time_unit), str(e.count)]
        if with_shapes:
            cells.append(clip(str(e.input_shapes), shapes_width))
        out.append(row_format.format(*cells))
    out.append(line)
    out.append(f"Self CPU time total: {_format_time_in(self_total, time_unit)}")
    return "\n".join(out) + "\n"
