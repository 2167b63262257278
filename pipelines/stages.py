"""The stages a researcher reruns by name (`plbench validate --stage S`), as asset selections.

Kept free of Dagster so the CLI starts fast; `pipelines/definitions.py` makes one job per stage
(`rerun_<stage>`) from the same table, so a rerun shows in the run list under what it did.
"""

from __future__ import annotations

from plbench.config import DIALECT_NAMES

# The subsets whose validation by execution is an asset of its own, `<subset>_validation`, which reads
# `<subset>_tasks`: each is a stage named by the subset, seconds to rerun on the mirror.
SUBSET_VALIDATIONS = ("mbpp_ile", "procedures", "procedures_ile", "multiturn", "interactive")
# stage -> its assets; "{dialect}" expands to each selected dialect
STAGES = {
    "test_cases": ["mbpp_test_cases"],
    "signatures": ["mbpp_signatures", "mbpp_augmented"],
    "tasks": ["mbpp_tasks"],
    "replay": ["replay_validation_{dialect}"],
    "roundtrip": ["roundtrip_{dialect}"],
    "normalize": ["normalized_databases_{dialect}", "normalization_report"],
    "spider_tasks": ["spider_plsql_tasks", "spider2_tasks"],
    # the procedures' seeds (with their call suites and mutant scores) and tasks: minutes on the mirror
    "procedure_tasks": ["procedure_seeds", "procedures_tasks"],
    **{subset: [f"{subset}_validation"] for subset in SUBSET_VALIDATIONS},
    "crosscheck": ["crosscheck_candidates", "crosscheck"],
}
# What a stage rerun reads from storage: a build must have stored it first.
STAGE_NEEDS = {
    "normalize": ["spider1_raw", "spider2_lite_raw"],
    "spider_tasks": ["spider1_raw", "spider2_lite_raw", "normalization_report"],
    "procedure_tasks": ["spider1_raw", "normalization_report"],
    **{subset: [f"{subset}_tasks"] for subset in SUBSET_VALIDATIONS},
    "crosscheck": ["release_tables"],
}
DEFAULT_NEEDS = ["mbpp_raw", "mbpp_tasks"]
# The assets that make and write the release.
RELEASE_ASSETS = ["release_tables", "crosscheck_candidates", "crosscheck", "validation_reports", "release"]
# Those that read the settings that name and place it (assets/versions.RELEASE_SETTINGS): only their code
# versions digest them, so a build under another --version writes the prepared release again, no more.
NAMES_THE_RELEASE = ["validation_reports", "release"]
PARTITIONED = [f"normalized_databases_{d}" for d in DIALECT_NAMES]
REBUILD_JOB = "rebuild_release"
# The UI's Materialize button launches the first job, by name, that holds every selected asset. Dagster 1.13
# sorts job names as plain strings, so a capitalized name comes before its implicit `__ASSET_JOB` (and the
# lowercase CLI jobs after it). One such job per stage, each asset in at most one, gives a run launched from
# an asset's page the name of the stage it ran. Partitioned assets are left out: from the UI they launch a
# backfill of their partitions.
UI_STAGES = {
    "raw_sources": ["mbpp_raw", "mbpp_plus_raw", "spider1_raw", "spider2_lite_raw"],
    **STAGES,
    "release": [name for name in RELEASE_ASSETS if name not in STAGES["crosscheck"]],
}


def rerun_job(stage: str) -> str:
    return f"rerun_{stage}"


def ui_job(stage: str) -> str:
    return f"Stage_{stage}"


def ui_stage_assets(stage: str) -> list[str]:
    """What the stage's UI job materializes: its assets for every dialect, the partitioned ones aside."""
    return [name for name in stage_assets(stage, table=UI_STAGES) if name not in PARTITIONED]


def stage_assets(stage: str, dialects=DIALECT_NAMES, table=STAGES) -> list[str]:
    """The stage's asset names for these dialects, each once, in order."""
    return list(dict.fromkeys(name.format(dialect=d) for name in table[stage] for d in dialects))


def step_stage(step_key: str) -> str:
    """The asset a step materializes or works for: the steps of a task-sharded asset (assets/sharded.py),
    `mbpp_test_cases.mbpp_test_cases_shard[shard_3]` and `mbpp_test_cases.mbpp_test_cases_merge`, are
    `mbpp_test_cases`'s; any other step is its asset's own."""
    return step_key.split(".", 1)[0]


def is_shard_step(step_key: str) -> bool:
    """One shard's step of a task-sharded asset (a mapped step: `...[shard_3]`)."""
    return step_key.endswith("]")


def stage_intervals(steps) -> dict[str, list[tuple[float, float]]]:
    """Each asset's finished steps (Dagster's step stats) as (start, end), a task-sharded asset's together."""
    intervals: dict[str, list[tuple[float, float]]] = {}
    for step in steps:
        if step.start_time is not None and step.end_time is not None:
            intervals.setdefault(step_stage(step.step_key), []).append((step.start_time, step.end_time))
    return intervals


def seconds_by_stage(steps) -> dict[str, float]:
    """Each asset's seconds: the sum of its finished steps'. Not the span from its first step to its last: in
    one process the steps of two sharded assets interleave, and the span of the one would count the other's."""
    return {stage: sum(end - start for start, end in spans) for stage, spans in stage_intervals(steps).items()}
