"""Wall time of a full rebuild from raw sources, of each stage, and of rerunning replay alone.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/rebuild_time.py

Runs the real job in-process against a throw-away Dagster instance and release folder
(the PostgreSQL server is started or reused as in a normal build), then reruns only
`replay_validation_postgres` from the stored upstream values. Prints the figures.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import dagster as dg

from pipelines.cli import execute, report
from plbench.config import BuildConfig


def step_seconds(result) -> dict[str, float]:
    """Seconds per step, as Dagster measured them (step success events)."""
    return {
        e.step_key: e.event_specific_data.duration_ms / 1000
        for e in result.all_events
        if e.event_type_value == "STEP_SUCCESS"
    }


def timed(label: str, config: BuildConfig, selection, instance) -> None:
    start = time.perf_counter()
    result = execute(config, selection, instance=instance)
    wall = time.perf_counter() - start
    if report(result) != 0:
        raise SystemExit(f"{label} failed")
    print(f"\n{label}: {wall:.1f} s wall")
    for step, seconds in sorted(step_seconds(result).items(), key=lambda kv: -kv[1]):
        print(f"  {step:48s} {seconds:7.1f} s")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = BuildConfig.from_env(out_dir=root / "releases", version="bench")
        (root / "dagster").mkdir()
        instance = dg.DagsterInstance.local_temp(str(root / "dagster"), overrides={"telemetry": {"enabled": False}})
        timed("full rebuild", config, None, instance)
        timed("replay alone (postgres)", config, [["replay_validation_postgres"]], instance)


if __name__ == "__main__":
    main()
