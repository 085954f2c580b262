"""lucid.profiler and lucid.autograd.profiler: every eager primitive, backward
node, compiled step and record_function region run inside a profile is one
timed event; events nest by time on their thread; key_averages() and table()
summarise them in PyTorch's layout; schedules and trace handlers follow
torch.profiler's. Times are real, so tests check structure and consistency
(totals, nesting, counts), never durations."""
import json
import os
import threading
import warnings

import pytest
import torch

import lucid
import lucid.nn as nn
from lucid.autograd import profiler as autograd_profiler
from lucid.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _names(events):
    return [e.name for e in events]


def test_ops_backward_nodes_and_regions_are_events_with_nesting():
    model = nn.Linear(4, 5)
    x = lucid.randn(3, 4)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(x).sum().backward()
    events = prof.events()
    region = next(e for e in events if e.name == "model_inference")
    assert region.is_user_annotation and region.cpu_parent is None
    # everything else ran inside the region, on this thread
    assert all(e.cpu_parent is not None for e in events if e is not region)
    matmuls = [e for e in events if e.name == "lucid::matmul"]
    assert [e.input_shapes for e in matmuls][0] == [[3, 4], [5, 4]]
    backward = [e for e in events if e.name.startswith("autograd::engine::evaluate_function: ")]
    assert "autograd::engine::evaluate_function: MatmulBackward0" in _names(backward)
    # the backward matmuls are children of the backward node that ran them
    node = next(e for e in backward if e.name.endswith("MatmulBackward0"))
    assert any(c.name == "lucid::matmul" for c in node.cpu_children)
    for e in events:
        assert e.cpu_time_total >= 0 and 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-6
        for c in e.cpu_children:
            assert e.time_range[0] <= c.time_range[0] and c.time_range[1] <= e.time_range[1]
    # self times add up to the region's total
    assert prof.self_cpu_time_total == pytest.approx(region.cpu_time_total, rel=1e-6)


def test_key_averages_count_and_sum_per_name():
    x = lucid.randn(8, 8)
    with profile() as prof:
        for _ in range(3):
            x = (x @ x).tanh()
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["lucid::matmul"].count == 3
    calls = [e for e in prof.events() if e.name == "lucid::matmul"]
    assert averages["lucid::matmul"].cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in calls))
    assert averages["lucid::matmul"].cpu_time == pytest.approx(averages["lucid::matmul"].cpu_time_total / 3)
    total = prof.key_averages().total_average()
    assert total.count == len(prof.events())


def test_group_by_input_shape_splits_rows():
    a, b = lucid.randn(4, 4), lucid.randn(2, 4)
    with profile(record_shapes=True) as prof:
        a @ a
        b @ a
        b @ a
    rows = [r for r in prof.key_averages(group_by_input_shape=True) if r.key == "lucid::matmul"]
    assert sorted((r.input_shapes, r.count) for r in rows) == [([[2, 4], [4, 4]], 2), ([[4, 4], [4, 4]], 1)]
    assert all(r.input_shapes == "" for r in prof.key_averages())


def test_table_has_torchs_columns_and_sorts():
    x = lucid.randn(16, 16)
    with profile(record_shapes=True) as prof:
        with record_function("outer"):
            (x @ x).relu().sum()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total", "CPU",
                                "time", "avg", "#", "of", "Calls"]
    assert len([ln for ln in lines if ln and not ln.startswith("-")]) == 1 + 3 + 1  # header, rows, footer
    assert "outer" in lines[3] and "100.00%" in lines[3]  # the region holds everything: first by total time
    assert lines[-1].startswith("Self CPU time total: ")
    shaped = prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total")
    assert "Input Shapes" in shaped.splitlines()[1] and "[[16, 16], [16, 16]]" in shaped
    assert "Input Shapes" not in prof.key_averages().table()
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")


def test_time_formatting_matches_torch():
    from torch.autograd.profiler_util import _format_time as torch_format

    from lucid.autograd.profiler_util import _format_time

    for us in [0.5, 12.3456, 999.9, 1500.0, 2.5e6]:
        assert _format_time(us) == torch_format(us)


def test_record_function_costs_nothing_and_records_nothing_outside_a_profile():
    with record_function("nobody listens"):
        lucid.ones(2) + 1

    @record_function("decorated")
    def work():
        return lucid.ones(3).sum()

    with profile() as prof:
        work()
        work()
    assert _names(prof.events()).count("decorated") == 2
    assert all(e.cpu_parent.name == "decorated" for e in prof.events() if e.name == "lucid::sum")


def test_events_of_other_threads_nest_on_their_own_thread():
    def worker():
        with record_function("in_thread"):
            lucid.randn(4, 4).exp()

    with profile() as prof:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        lucid.ones(2).exp()
    threads = {e.name: e.thread for e in prof.events() if e.name == "in_thread"}
    exps = [e for e in prof.events() if e.name == "lucid::exp"]
    assert len({e.thread for e in exps}) == 2
    assert any(e.cpu_parent is not None and e.cpu_parent.name == "in_thread" for e in exps)
    assert all(e.thread == threads["in_thread"] for e in exps if e.cpu_parent is not None)


def test_a_compiled_step_is_one_event():
    model = nn.Linear(4, 2)
    opt = lucid.optim.SGD(model.parameters(), lr=0.1)
    step = lucid.compile.fused_step(model, nn.functional.mse_loss, opt)
    x, y = lucid.randn(3, 4), lucid.randn(3, 2)
    step(x, y)  # traced and compiled outside the profile
    with profile() as prof:
        step(x, y)
        step(x, y)
    names = _names(prof.events())
    assert names.count("lucid::compiled_step") == 2
    assert not any(n.startswith("lucid::") and n != "lucid::compiled_step" for n in names)


def test_profiles_do_not_nest_and_results_wait_for_the_end():
    with profile() as prof:
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
        with pytest.raises(RuntimeError, match="didn't finish running"):
            prof.key_averages()
    prof.key_averages()


def test_unrecorded_options_warn():
    with pytest.warns(UserWarning, match="profile_memory"):
        with profile(profile_memory=True):
            pass
    with pytest.warns(UserWarning, match="CUDA"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            pass


def test_schedule_matches_torchs():
    from torch.profiler import schedule as torch_schedule

    for kw in [dict(wait=1, warmup=1, active=2, repeat=1, skip_first=1), dict(wait=0, warmup=1, active=1),
               dict(wait=2, warmup=1, active=3, repeat=2, skip_first=3, skip_first_wait=1)]:
        ours, theirs = schedule(**kw), torch_schedule(**kw)
        assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)], kw
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)
    assert [a.name for a in ProfilerAction] == [a.name for a in torch.profiler.ProfilerAction]
    assert [a.name for a in ProfilerActivity] == list(torch.profiler.ProfilerActivity.__members__)


def test_a_schedule_records_active_steps_and_hands_over_each_cycle(tmp_path):
    ready = []

    def on_ready(p):
        ready.append(sorted(e.name for e in p.events() if e.name.startswith("ProfilerStep#")))
        autograd_profiler.profile.export_chrome_trace(p, str(tmp_path / f"cycle{len(ready)}.json"))

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=on_ready) as prof:
        for i in range(10):
            with record_function(f"work{i}"):
                lucid.ones(2).exp()
            prof.step()
    assert ready == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    assert sorted(e.name for e in prof.events() if e.name.startswith("work")) == ["work6", "work7"]
    trace = json.loads((tmp_path / "cycle1.json").read_text())
    names = [e["name"] for e in trace["traceEvents"]]
    assert "ProfilerStep#2" in names and "work2" in names and all(e["ph"] == "X" for e in trace["traceEvents"])


def test_tensorboard_trace_handler_writes_chrome_traces(tmp_path):
    handler = lucid.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="worker0")
    with profile(on_trace_ready=handler):
        lucid.ones(3).exp()
    (path,) = os.listdir(tmp_path)
    assert path.startswith("worker0.") and path.endswith(".pt.trace.json")
    events = json.loads((tmp_path / path).read_text())["traceEvents"]
    assert any(e["name"].startswith("lucid::") for e in events)
    gz = lucid.profiler.tensorboard_trace_handler(str(tmp_path / "gz"), worker_name="w", use_gzip=True)
    with profile(on_trace_ready=gz):
        lucid.ones(3).exp()
    assert os.listdir(tmp_path / "gz")[0].endswith(".pt.trace.json.gz")


def test_autograd_profiler_is_the_legacy_api():
    x = lucid.randn(4, 4, requires_grad=True)
    with autograd_profiler.profile(record_shapes=True) as prof:
        (x * 2).sum().backward()
    assert "lucid::mul" in _names(prof.function_events)
    assert prof.table().splitlines()[-1].startswith("Self CPU time total")
    assert prof.total_average().count == len(prof.function_events)
    with autograd_profiler.profile(enabled=False) as off:
        x * 2
    assert off.function_events is None


def test_emit_nvtx_and_itt_behave_as_torchs_cpu_build():
    if not lucid.cuda.is_available():
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            with autograd_profiler.emit_nvtx():
                pass
    with autograd_profiler.emit_nvtx(enabled=False):
        pass
    with autograd_profiler.emit_itt():
        pass
    assert lucid.profiler.supported_activities() == {ProfilerActivity.CPU}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profile(activities=[ProfilerActivity.CPU]):
            pass
