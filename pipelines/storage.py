"""Where Dagster keeps the stage values between runs, so one stage reruns from what an earlier run stored.

Dagster's filesystem IO manager stores one pickle per asset (per partition for a partitioned asset),
but refuses an output that covers several partitions, which is what a single-run build of every
database produces. `StageStorage` accepts that too: a partitioned asset returns its values keyed by
partition key (`{"spider1.shop": report, ...}`), each stored as that partition's value. Reading is
Dagster's: one partition gives its value, several a dict keyed by partition key.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager


class _PartitionedPickles(PickledObjectFilesystemIOManager):
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
