"""The in-process executor runs up to `steps_at_once` ready steps at a time, each on a thread, and keeps Dagster's
order, outputs, failures and dynamic fan-out (pipelines/step_threads.py)."""

import pickle
import threading

import dagster as dg
import pytest

from pipelines.executors import EXECUTORS, run_in_process
from pipelines.step_threads import PYTHON_STEP_TAG, StepThreadsExecutor
from plbench.config import BuildConfig

ENDS = ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED")


def _run(assets: list, steps_at_once: int, raise_on_error: bool = False, tmp_path=None):
    job = dg.define_asset_job("all", selection=assets)
    io_manager = dg.FilesystemIOManager(base_dir=str(tmp_path / "storage"))
    defs = dg.Definitions(assets=assets, jobs=[job], resources={"io_manager": io_manager})
    keys = [key for a in assets for key in a.keys]
    with dg.instance_for_test() as instance:
        options = dict(instance=instance, asset_selection=keys, raise_on_error=raise_on_error, tags={}, run_config={})
        result = run_in_process(defs.resolve_job_def("all"), options, steps_at_once)
        events = [e.dagster_event for e in instance.all_logs(result.run_id) if e.is_dagster_event]
        steps = {e.step_key: e.event_type_value for e in events if e.event_type_value in ENDS}
        return result, steps, tmp_path / "storage"


def _meeting(timeout: float, left_tags: dict | None = None, right_tags: dict | None = None) -> list:
    """Two independent assets that each wait for the other to be running, and one reading both."""
    barrier = threading.Barrier(2, timeout=timeout)

    @dg.asset(op_tags=left_tags)
    def left() -> str:
        barrier.wait()
        return threading.current_thread().name

    @dg.asset(op_tags=right_tags)
    def right() -> str:
        barrier.wait()
        return threading.current_thread().name

    @dg.asset
    def both(left: str, right: str) -> list[str]:
        return [left, right]

    return [left, right, both]


def test_two_ready_steps_run_at_the_same_time_each_on_its_own_thread(tmp_path):
    result, _, storage = _run(_meeting(timeout=30), steps_at_once=2, tmp_path=tmp_path)
    assert result.success
    names = pickle.loads((storage / "both").read_bytes())
    assert sorted(names) == ["step left", "step right"]


def test_one_step_at_a_time_runs_them_one_after_the_other(tmp_path):
    result, steps, _ = _run(_meeting(timeout=0.5), steps_at_once=1, tmp_path=tmp_path)
    # the first waits alone for the second, which cannot start before it ends: neither meets the other
    assert not result.success
    assert steps == {"left": "STEP_FAILURE", "right": "STEP_FAILURE"}


def test_two_steps_working_in_this_process_python_run_one_after_the_other_but_beside_other_steps(tmp_path):
    both = _meeting(timeout=0.5, left_tags=PYTHON_STEP_TAG, right_tags=PYTHON_STEP_TAG)
    result, steps, _ = _run(both, steps_at_once=2, tmp_path=tmp_path)
    assert not result.success and steps == {"left": "STEP_FAILURE", "right": "STEP_FAILURE"}  # never met
    one = _meeting(timeout=30, left_tags=PYTHON_STEP_TAG)
    assert _run(one, steps_at_once=2, tmp_path=tmp_path)[0].success


def test_a_failing_step_stops_what_depends_on_it_and_the_other_step_still_ends(tmp_path):
    @dg.asset
    def broken() -> int:
        raise ValueError("no such record")

    @dg.asset
    def fine() -> int:
        return 1

    @dg.asset
    def after(broken: int, fine: int) -> int:
        return broken + fine

    result, steps, storage = _run([broken, fine, after], steps_at_once=2, tmp_path=tmp_path)
    assert not result.success
    assert steps == {"broken": "STEP_FAILURE", "fine": "STEP_SUCCESS"}  # `after` never starts
    assert (storage / "fine").exists() and not (storage / "after").exists()
    assert _run([broken, fine, after], steps_at_once=1, tmp_path=tmp_path)[1] == steps  # as in Dagster's loop
    with pytest.raises(ValueError, match="no such record"):  # raise_on_error: the run's thread raises it
        _run([broken, fine, after], steps_at_once=2, raise_on_error=True, tmp_path=tmp_path)


def test_a_fan_out_runs_every_mapped_step_before_the_run_ends(tmp_path):
    """A step's dynamic outputs become steps only as it ends; the run must not end before they ran (the
    task-sharded stages, assets/sharded.py, are built this way)."""

    @dg.op(out=dg.DynamicOut(int))
    def split():
        for n in range(3):
            yield dg.DynamicOutput(n, mapping_key=f"part_{n}")

    @dg.op
    def square(n: int) -> int:
        return n * n

    @dg.op
    def total(parts: list[int]) -> int:
        return sum(parts)

    @dg.graph_asset
    def squares() -> int:
        return total(split().map(square).collect())

    result, steps, storage = _run([squares], steps_at_once=2, tmp_path=tmp_path)
    assert result.success
    assert {k for k, v in steps.items() if v == "STEP_SUCCESS"} == {
        "squares.split",
        "squares.square[part_0]",
        "squares.square[part_1]",
        "squares.square[part_2]",
        "squares.total",
    }
    assert pickle.loads((storage / "squares").read_bytes()) == 5


def test_the_in_process_executor_takes_steps_at_once_from_the_settings(monkeypatch):
    monkeypatch.setenv("PLBENCH_STEPS_AT_ONCE", "3")
    config = BuildConfig.from_env()
    assert config.steps_at_once == 3
    executor = EXECUTORS["in_process"](config)  # what the jobs run on, UI runs too
    assert executor.name == "in_process_steps"
    assert executor.apply_config_mapping({}).value == {"config": {"steps_at_once": 3}}
    with pytest.raises(ValueError, match="steps_at_once must be 1 or more, not 0"):
        StepThreadsExecutor(0)
