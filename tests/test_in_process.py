"""An in-process build lets go of each stage's value once the IO manager has stored it, and gives the memory
earlier stages freed (malloc's heap, Arrow's pool) back to the system before a stage reads its inputs."""

import gc
import pickle
import weakref

import dagster as dg
import psutil
import pytest

from pipelines.executors import run_in_process
from pipelines.storage import StageStorage


class Stage:
    """A stage value that can be watched being freed."""


def test_an_in_process_run_frees_each_output_once_it_is_stored(tmp_path):
    watched = []

    @dg.asset
    def stage() -> Stage:
        value = Stage()
        watched.append(weakref.ref(value))
        return value

    @dg.asset(deps=[stage])
    def after() -> bool:
        gc.collect()
        return watched[-1]() is None  # this run's value

    job = dg.define_asset_job("both", selection=[stage, after])
    io_manager = dg.FilesystemIOManager(base_dir=str(tmp_path / "storage"))
    defs = dg.Definitions(assets=[stage, after], jobs=[job], resources={"io_manager": io_manager})
    with dg.instance_for_test() as instance:
        options = dict(instance=instance, asset_selection=[stage.key, after.key], raise_on_error=True)
        result = run_in_process(defs.resolve_job_def("both"), dict(options, tags={"t": "1"}, run_config={}))
        assert result.success and result.dagster_run.tags["t"] == "1"
        assert _stored(tmp_path / "storage" / "after") is True
        # Dagster's own in-process API keeps the value to the end of the run: the reason for run_in_process
        defs.resolve_job_def("both").execute_in_process(**options)
        assert _stored(tmp_path / "storage" / "after") is False


def _stored(path):
    return pickle.loads(path.read_bytes())


def _stage_reading_its_input(tmp_path):
    """A function that does what a step does first: read its input through the stage storage."""

    @dg.asset
    def stage() -> list:
        return [1, 2]

    storage = StageStorage(base_dir=str(tmp_path / "storage"))
    assert dg.materialize([stage], resources={"io_manager": storage}).success
    io_manager = storage.create_io_manager(dg.build_init_resource_context())
    upstream = dg.build_output_context(asset_key=stage.key)
    return lambda: io_manager.load_input(dg.build_input_context(asset_key=stage.key, upstream_output=upstream))


def test_a_stage_reading_its_inputs_first_gives_back_the_memory_earlier_stages_freed(tmp_path):
    read_input, process = _stage_reading_its_input(tmp_path), psutil.Process()
    blocks = [bytes(1024) + bytes([i % 256]) for i in range(200_000)]  # 200 MB in malloc's heap
    held = blocks[::100]  # still held between the freed ones, so free() alone cannot shrink the heap
    before = process.memory_info().rss
    del blocks
    gc.collect()
    assert before - process.memory_info().rss < 50 << 20  # freed, but still resident
    assert read_input() == [1, 2]
    assert before - process.memory_info().rss > 150 << 20
    assert len(held) == 2000


def test_a_stage_reading_its_inputs_first_gives_back_what_arrow_kept_of_freed_tables(tmp_path):
    import pyarrow as pa

    read_input, process = _stage_reading_its_input(tmp_path), psutil.Process()
    table = pa.table({"text": pa.array(["a" * 100] * 2_000_000)})  # 200 MB from Arrow's pool
    before = process.memory_info().rss
    del table
    assert before - process.memory_info().rss < 50 << 20  # freed, but the pool keeps it
    assert read_input() == [1, 2]
    assert before - process.memory_info().rss > 150 << 20


class Loaded:
    """Records, as it is unpickled, whether the cyclic collector was on."""

    collector_on_while_loading: list[bool] = []

    def __init__(self):
        self.state = "stored"

    def __setstate__(self, state):
        Loaded.collector_on_while_loading.append(gc.isenabled())


def test_a_stored_value_loads_with_the_collector_paused_and_resumed_after(tmp_path):
    @dg.asset
    def stage() -> list:
        return [Loaded(), Loaded()]

    storage = StageStorage(base_dir=str(tmp_path / "storage"))
    assert dg.materialize([stage], resources={"io_manager": storage}).success
    io_manager = storage.create_io_manager(dg.build_init_resource_context())
    upstream = dg.build_output_context(asset_key=stage.key)
    Loaded.collector_on_while_loading.clear()
    loaded = io_manager.load_input(dg.build_input_context(asset_key=stage.key, upstream_output=upstream))
    assert [type(v) for v in loaded] == [Loaded, Loaded]
    assert Loaded.collector_on_while_loading == [False, False] and gc.isenabled()


def test_an_in_process_build_run_collects_less_often_and_restores_the_thresholds_after(monkeypatch, tmp_path):
    from pipelines import cli, executors
    from plbench.collector import BUILD_THRESHOLDS
    from plbench.config import BuildConfig

    seen = []
    monkeypatch.setattr(
        executors, "run_in_process", lambda job, options, steps: seen.append((gc.get_threshold(), steps))
    )
    before = gc.get_threshold()
    with dg.instance_for_test() as instance:
        cli._run(BuildConfig(cache_dir=tmp_path, steps_at_once=3), [["mbpp_raw"]], instance, cli.REBUILD_JOB, {})
    assert seen == [(BUILD_THRESHOLDS, 3)] and gc.get_threshold() == before != BUILD_THRESHOLDS


def test_the_thresholds_come_back_when_the_run_raises():
    from plbench.collector import collector_thresholds

    before = gc.get_threshold()
    with pytest.raises(KeyError), collector_thresholds((1000, 5, 5)):
        assert gc.get_threshold() == (1000, 5, 5)
        raise KeyError("stage failed")
    assert gc.get_threshold() == before
