"""Where Dagster keeps the stage values between runs, so one stage reruns from what an earlier run stored.

Dagster's filesystem IO manager stores one pickle per asset (per partition for a partitioned asset),
but refuses an output that covers several partitions, which is what a single-run build of every
database produces. `StageStorage` accepts that too: a partitioned asset returns its values keyed by
partition key (`{"spider1.shop": report, ...}`), each stored as that partition's value. Reading is
Dagster's: one partition gives its value, several a dict keyed by partition key.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager

from plbench.collector import collector_paused, give_back_freed_memory


class _PartitionedPickles(PickledObjectFilesystemIOManager):
    def load_input(self, context: dg.InputContext) -> Any:
        give_back_freed_memory()  # before a step reads its inputs: what the steps before it freed
        return super().load_input(context)

    def load_from_path(self, context: dg.InputContext, path) -> Any:
        """Unpickled with the cyclic collector off: a stored value is hundreds of thousands of new objects,
        each allocation counts toward a collection, and every collection walks all of them again (off, loading
        interactive_tasks takes 0.45 s instead of 1.6 s). Loading makes no garbage to collect."""
        with collector_paused():
            return super().load_from_path(context, path)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if not context.has_asset_partitions:
            return super().handle_output(context, obj)
        paths = self._get_paths_for_partitions(context)
        if not isinstance(obj, dict) or set(obj) != set(paths):
            given = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise TypeError(
                f"{context.asset_key.to_user_string()}: a partitioned asset returns its values keyed by "
                f"partition key; expected {sorted(paths)[:5]}, got {given}"
            )
        for key, path in paths.items():
            self.make_directory(path.parent)
            self.dump_to_path(context=context, obj=obj[key], path=path)


class StageStorage(dg.ConfigurableIOManagerFactory):
    """Pickled stage values under `base_dir`, one file per asset and per partition."""

    base_dir: str

    def create_io_manager(self, context: dg.InitResourceContext) -> _PartitionedPickles:
        return _PartitionedPickles(base_dir=self.base_dir)


def drop_step_outputs(base_dir: Path, run_id: str, asset: str) -> None:
    """Delete what a task-sharded asset's steps stored in this run (Dagster keeps an op's outputs under
    `<base_dir>/<run_id>/<step>/`), once its merge holds them all: tens of MB a build that nothing reads again,
    since a rerun reads the asset's own stored value. A failed run keeps them, for a re-execution from failure."""
    run_dir = base_dir / run_id
    for step_dir in run_dir.glob(f"{asset}.*"):
        shutil.rmtree(step_dir)
    if run_dir.is_dir() and not any(run_dir.iterdir()):
        run_dir.rmdir()
