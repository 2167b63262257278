"""Small builders shared by the tests: typed tasks from literal cases; live sandbox children; stopping a
server the test started."""

import os
import signal
import subprocess
from pathlib import Path

from plbench import sandbox
from plbench.mbpp.artifacts import TypedTask, ints_fit_bigint
from plbench.mbpp.extract import Comparison, TestCase
from plbench.mbpp.pytypes import infer_signature


def typed_task(params, raw_cases, entry="f", comparison=Comparison(), source_id="1", subset="mbpp"):
    """A TypedTask whose signature is inferred from [(args tuple, expected), ...]."""
    cases = tuple(TestCase(args, expected, f"test_list[{i}]") for i, (args, expected) in enumerate(raw_cases))
    signature = infer_signature(list(params), [(c.args, c.expected) for c in cases])
    if comparison.unordered:
        from plbench.types import PyType

        signature = type(signature)(signature.params, PyType("set", signature.returns.args))
    return TypedTask(
        subset, source_id, "Write the function.", entry, signature, cases, comparison, ints_fit_bigint(cases)
    )


def sandbox_children() -> list[int]:
    """Pids of this checkout's sandbox children still alive (other checkouts run their own), but for those
    of the mirror tier's background build, which runs beside the suite from this checkout."""
    from tests.background_build import BUILD_PIDS

    script = str(Path(sandbox.__file__).with_name("_sandbox_child.py")).encode()
    parents, children = {}, []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            if script in cmdline:
                children.append(int(entry.name))
    return [pid for pid in children if not _descends_from(pid, BUILD_PIDS, parents)]


def _descends_from(pid: int, ancestors: set[int], parents: dict[int, int]) -> bool:
    while pid in parents and pid not in ancestors:
        pid = parents[pid]
    return pid in ancestors


def release_row(task, dialect: str = "postgres", **fields) -> dict:
    """The release row fields grading reads, from the task's emitted artifacts (as the release writes them)."""
    import json

    from plbench.mbpp.stages import emit_artifacts

    art = emit_artifacts(task, dialect)
    comparison = {"atol": task.comparison.atol, "rtol": task.comparison.rtol, "unordered": task.comparison.unordered}
    return {
        "task_id": task.task_id,
        "subset": task.subset,
        "dialect": dialect,
        "source_id": task.source_id,
        "database": None,
        "prompt": art.prompt,
        "entry_point": task.entry_point,
        "signature": art.signature,
        "setup_sql": art.setup_sql,
        "test_block": art.test_block,
        "test_cases": art.test_cases,
        "comparison": json.dumps(comparison, sort_keys=True),
        "reference_code": None,
        "replay_status": "passed",
        **fields,
    }


def stop(process: subprocess.Popen, group: bool = False, grace_s: float = 30) -> None:
    """SIGTERM (to its process group when it leads one), SIGKILL after `grace_s` seconds."""
    send = (lambda sig: os.killpg(process.pid, sig)) if group else process.send_signal
    send(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        process.wait()
