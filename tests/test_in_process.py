"""An in-process build lets go of each stage's value once the IO manager has stored it."""

import gc
import pickle
import weakref

import dagster as dg

from pipelines.executors import run_in_process


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
