"""Where a run's steps execute: `BuildConfig.executor` names one of `EXECUTORS`.

`in_process` (the default, as `plbench build` runs, and for runs launched from the UI) keeps every
step in one process, `BuildConfig.steps_at_once` of them running at a time (pipelines/step_threads.py);
`multiprocess`, `celery` (workers on a broker such as Redis) and `k8s` (a Kubernetes job per step) run
steps in other processes, which rebuild the job from their own environment: `definitions_from_env` with
the settings file PLBENCH_SETTINGS names.
"""

from __future__ import annotations

import dagster as dg

from pipelines.step_threads import StepThreadsExecutor
from plbench.config import BuildConfig
from plbench.paths import project_root


def _celery(config: BuildConfig) -> dg.ExecutorDefinition:
    from dagster_celery import celery_executor

    if not config.celery_broker:
        raise ValueError("executor celery needs a broker: set PLBENCH_CELERY_BROKER (e.g. redis://127.0.0.1:6379/0)")
    return celery_executor.configured({"broker": config.celery_broker, "backend": config.celery_broker})


def _k8s(config: BuildConfig) -> dg.ExecutorDefinition:
    from dagster_k8s import k8s_job_executor

    return k8s_job_executor  # the cluster's settings come in the run config (README, Kubernetes)


@dg.executor(
    name="in_process_steps",
    config_schema={
        "steps_at_once": dg.Field(int, default_value=BuildConfig.steps_at_once, description="steps running at a time")
    },
)
def in_process_steps(init_context) -> StepThreadsExecutor:
    """Every step in the run's process, up to `steps_at_once` at a time, each on a thread."""
    return StepThreadsExecutor(init_context.executor_config["steps_at_once"])


def in_process_steps_configured(steps_at_once: int) -> dg.ExecutorDefinition:
    return in_process_steps.configured({"steps_at_once": steps_at_once})


# BuildConfig.executor -> the executor every job of the location runs on
EXECUTORS = {
    "in_process": lambda config: in_process_steps_configured(config.steps_at_once),
    "multiprocess": lambda config: dg.multiprocess_executor,
    "celery": _celery,
    "k8s": _k8s,
}


def executor_for(config: BuildConfig) -> dg.ExecutorDefinition:
    if config.executor not in EXECUTORS:
        raise ValueError(f"unknown executor {config.executor!r}; known: {', '.join(EXECUTORS)}")
    return EXECUTORS[config.executor](config)


def run_on_workers(config: BuildConfig, job: str, options: dict):
    """A run on the configured executor (celery, Kubernetes): each worker rebuilds the job from its own
    environment, so the settings must be the ones PLBENCH_SETTINGS gives every process."""
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    if config != BuildConfig.from_env():
        raise SystemExit(
            f"plbench: executor {config.executor} runs steps in other processes, which read their settings "
            "from PLBENCH_SETTINGS: put every setting there, not on the command line"
        )
    repository = ReconstructableRepository.for_module(
        "pipelines.definitions", "definitions_from_env", working_directory=str(project_root())
    )
    with dg.execute_job(repository.get_reconstructable_job(job), **options) as result:
        return result


def run_in_process(job_def: dg.JobDefinition, options: dict, steps_at_once: int = 1):
    """`job_def.execute_in_process(**options)`, without holding every step's output until the run ends, its
    steps `steps_at_once` at a time (1: one after the other, as Dagster's in-process executor runs them).

    Dagster's in-process API keeps each output value in a dict (for `output_for_node`): a whole build
    held every stage's value at once, 1.5 GB as pickles on the mirror, on top of the step running.
    The build reads its values back through the IO manager, so this runs the same path with the
    capture off (`core_execute_in_process`, which `execute_in_process` calls; dagster is pinned)."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.execute_in_process import core_execute_in_process, merge_run_tags

    selection = options["asset_selection"]
    ephemeral = job_def.as_ephemeral_job(resource_defs={}, input_values={}, asset_selection=selection)
    ephemeral = ephemeral.with_executor_def(in_process_steps_configured(steps_at_once))
    run_config, instance = options["run_config"], options["instance"]
    tags = merge_run_tags(job_def, None, options["tags"], selection, instance, run_config)
    return core_execute_in_process(
        job=InMemoryJob(job_def=ephemeral),
        run_config=run_config,
        instance=instance,
        output_capturing_enabled=False,
        raise_on_error=options["raise_on_error"],
        run_tags=tags,
        asset_selection=frozenset(selection),
    )
