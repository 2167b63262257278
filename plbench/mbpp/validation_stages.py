"""MBPP's validation stages on a real engine: the replay with mutants (`replay_stage`) and the value round trip
(`roundtrip_stage`) of every task emitted in the engine's dialect. Apart from plbench.mbpp.stages (extraction,
typing, emission, and the reports these return), so the code version of a stage that runs no replay holds none
of the replay's code (assets/versions.py): a fix to the replay reruns the replay, not the extraction.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from plbench.config import NotConfigured
from plbench.dialects import DIALECTS
from plbench.engines.base import Engine
from plbench.mbpp.stages import ReplayReport, RoundTripReport, StageOutput
from plbench.taskrow import by_dialect
from plbench.validation.replay import validate_task
from plbench.validation.roundtrip import roundtrip_task


def run_on_engine(engine: Engine, tasks: StageOutput, check, workers: int) -> tuple[str, list]:
    """`check(engine, task)` for every task emitted in the engine's dialect, `workers` at a time.

    Returns (engine version, results in task order). An engine failure propagates: the stage fails
    rather than half-reporting.
    """
    todo = [a.task for a in by_dialect(tasks.items)[engine.dialect]]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return engine.version(), list(pool.map(lambda task: check(engine, task), todo))


def replay_stage(tasks: StageOutput, engine: Engine | NotConfigured, workers: int) -> ReplayReport:
    """Replay every task that has artifacts in the engine's dialect, on that engine."""
    start = time.perf_counter()
    count = len(by_dialect(tasks.items)[engine.dialect])
    if isinstance(engine, NotConfigured):
        return ReplayReport(engine.dialect, ran=False, reason=engine.reason, tasks=count)
    version, results = run_on_engine(engine, tasks, validate_task, workers)
    seconds = time.perf_counter() - start
    return ReplayReport(engine.dialect, True, engine=version, results=results, seconds=seconds, tasks=count)


def roundtrip_stage(tasks: StageOutput, engine: Engine | NotConfigured, workers: int) -> RoundTripReport:
    """Round-trip every test value of every task through the engine."""
    start = time.perf_counter()
    if isinstance(engine, NotConfigured):
        return RoundTripReport(engine.dialect, False, engine.reason)
    if not DIALECTS[engine.dialect].value_round_trip:
        return RoundTripReport(engine.dialect, False, "the value round trip is implemented for PostgreSQL only")
    results = run_on_engine(engine, tasks, roundtrip_task, workers)[1]
    return RoundTripReport(engine.dialect, True, results=results, seconds=time.perf_counter() - start)
