"""Dagster's in-process executor with up to `steps_at_once` steps running at a time, each on a thread of its own.

Why: a build is a chain of stages, each of which keeps the cores busy only part of the time: a stage that is
Python in this process (the Spider tasks, the release's quality suites) leaves the second core idle, and one
whose work is in other processes (the database pools, the sandbox, PostgreSQL, the grammar's Node) waits
on them. Two steps at once fill part of that: four-subset mirror builds from nothing, alternating in one run
(bench/rebuild_time.py --compare-steps-at-once 2,1,2,1), took 242.6 and 226.7 s with two against 254.5 and
251.6 s with one, at a peak of 1.77-1.78 GB with the PostgreSQL server (1.70-1.78 GB).

Steps share the process, its resources and the stored values, as in Dagster's executor; only the loop
that runs them differs. Dagster's (`inner_plan_execution_iterator`; dagster is pinned) runs one step at a time
in the run's thread; this one starts each step that is ready on a thread while fewer than `steps_at_once` run,
and follows that loop for the rest: a step's events go to the plan as they come, then `verify_complete`,
the plan's own events and the step's hooks. Each step logs its events from its own thread, as it would in
process; they come back to the run's thread through a queue, so the plan's bookkeeping stays on one thread.
With `steps_at_once` 1 it is Dagster's loop itself.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Iterator
from contextlib import ExitStack

from dagster._core.errors import raise_execution_interrupts
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.execution.api import ExecuteRunWithPlanIterable
from dagster._core.execution.compute_logs import create_compute_log_file_key
from dagster._core.execution.context.system import PlanExecutionContext, PlanOrchestrationContext
from dagster._core.execution.context_creation_job import PlanExecutionContextManager
from dagster._core.execution.plan.execute_plan import _trigger_hook, dagster_event_sequence_for_step
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.retries import RetryMode
from dagster._core.executor.in_process import InProcessExecutor, inprocess_execution_iterator

_STEP_ENDED = object()  # a step's thread has given all its events
# The op tag of a step whose work is Python in the run's process. Two of them at once only take turns at the
# interpreter's lock, and slower than one after the other: in one bench run, spider2_tasks beside spider_plsql_tasks
# spanned 26 s where, in that run's other build, the two took 18.5 s in turn. One of them runs at a time, beside
# any step whose work is elsewhere (Dagster's tag concurrency limits). spider2_tasks now does its work in a child
# process (plbench.child_process), so it is not tagged and overlaps spider_plsql_tasks.
PYTHON_STEP_TAG = {"plbench/works_in": "this_process"}
PYTHON_STEPS = [{"key": key, "value": value, "limit": 1} for key, value in PYTHON_STEP_TAG.items()]


def _run_step(step_context, events: queue.Queue) -> None:
    key = step_context.step.key
    try:
        for event in dagster_event_sequence_for_step(step_context):
            events.put((key, event))
    except BaseException as exc:  # with raise_on_error a step's error comes out here: the run's thread raises it
        events.put((key, exc))
    else:
        events.put((key, _STEP_ENDED))


def step_threads_iterator(
    job_context: PlanExecutionContext, execution_plan: ExecutionPlan, steps_at_once: int
) -> Iterator[DagsterEvent]:
    """The run's events, its steps run on threads, up to `steps_at_once` at a time."""
    compute_logs = job_context.instance.compute_log_manager
    step_keys = [step.key for step in execution_plan.get_steps_to_execute_in_topo_order()]
    events: queue.Queue = queue.Queue()
    running: dict[str, tuple] = {}  # step key -> (its context, the events it gave)
    with (
        InstanceConcurrencyContext(job_context.instance, job_context.dagster_run) as concurrency,
        execution_plan.start(
            retry_mode=job_context.retry_mode,
            tag_concurrency_limits=PYTHON_STEPS,
            instance_concurrency_context=concurrency,
            step_dependency_config=job_context.step_dependency_config,
        ) as active,
        ExitStack() as capture,
    ):
        log_key = compute_logs.build_log_key_for_run(job_context.run_id, create_compute_log_file_key())
        log_context = capture.enter_context(compute_logs.capture_logs(log_key))  # the whole process's output
        yield DagsterEvent.capture_logs(job_context, step_keys, log_key, log_context)
        # A step's last events can leave the plan looking complete before its dynamic outputs are mapped to the
        # steps they feed (that happens as it ends): a run goes on while any step is running.
        while running or not active.is_complete:
            for step in active.get_steps_to_execute(limit=steps_at_once - len(running)):
                context = job_context.for_step(step, active.get_known_state())
                running[step.key] = (context, [])
                threading.Thread(target=_run_step, args=(context, events), name=f"step {step.key}", daemon=True).start()
            yield from active.concurrency_event_iterator(job_context)
            if not running:
                active.sleep_til_ready()
                continue
            with raise_execution_interrupts():  # Ctrl-C ends the wait (steps on threads cannot be interrupted)
                key, event = events.get()
            context, given = running[key]
            if isinstance(event, BaseException):
                raise event
            if event is not _STEP_ENDED:
                given.append(event)
                yield event
                active.handle_event(event)
                continue
            del running[key]
            active.verify_complete(job_context, key)
            for plan_event in active.plan_events_iterator(job_context):
                given.append(plan_event)
                yield plan_event
            yield from _trigger_hook(context, given)


class StepThreadsExecutor(InProcessExecutor):
    """Dagster's InProcessExecutor, its steps run by `step_threads_iterator`."""

    def __init__(self, steps_at_once: int, retries: RetryMode = RetryMode.ENABLED):
        if steps_at_once < 1:
            raise ValueError(f"steps_at_once must be 1 or more, not {steps_at_once}")
        super().__init__(retries=retries)
        self.steps_at_once = steps_at_once

    def execute(self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan) -> Iterator[DagsterEvent]:
        steps = execution_plan.step_keys_to_execute
        yield DagsterEvent.engine_event(
            plan_context,
            f"Executing steps in process (pid: {os.getpid()}), {self.steps_at_once} at a time",
            event_specific_data=EngineEventData.in_process(os.getpid(), steps),
        )
        iterator = (
            inprocess_execution_iterator
            if self.steps_at_once == 1
            else functools.partial(step_threads_iterator, steps_at_once=self.steps_at_once)
        )
        yield from ExecuteRunWithPlanIterable(
            execution_plan=plan_context.execution_plan,
            iterator=iterator,
            execution_context_manager=PlanExecutionContextManager(
                job=plan_context.job,
                retry_mode=plan_context.retry_mode,
                execution_plan=plan_context.execution_plan,
                run_config=plan_context.run_config,
                dagster_run=plan_context.dagster_run,
                instance=plan_context.instance,
                raise_on_error=plan_context.raise_on_error,
                output_capture=plan_context.output_capture,
                step_dependency_config=self.step_dependency_config,
            ),
        )
        yield DagsterEvent.engine_event(
            plan_context,
            f"Finished steps in process (pid: {os.getpid()})",
            event_specific_data=EngineEventData.in_process(os.getpid(), steps),
        )
