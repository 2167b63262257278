"""Run untrusted Python reference solutions on argument tuples in a limited child process.

`run_reference` starts `plbench/_sandbox_child.py` in a fresh interpreter with a scrubbed
environment, a temporary working directory and its own process group, sends it the code
and the cases (tagged JSON from `plbench.values`) on stdin, and streams one result line per
case back over a private pipe. Nothing the solution does raises into the caller: problems
come back as statuses.

The child contains itself at the operating-system level before it compiles the solution
(`plbench/_sandbox_contain.py`: its own uid, a read-only file system but for a private
working folder, no network, no new process, CPU/memory/file-size limits), and an audit hook
names each refused attempt (`SandboxDenied: os.system is not allowed in the sandbox`).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import marshal
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plbench import values
from plbench.progress import counted

_CHILD_SCRIPT = Path(__file__).with_name("_sandbox_child.py")
# Like -I (no site packages, no script dir on sys.path, no .pyc writes; -S also skips the
# site-packages .pth processing that costs ~50 ms per start) except that
# PYTHON* variables are honoured: the environment is built from scratch below, and
# PYTHONHASHSEED=0 keeps set/dict-of-str iteration order, hence expected outputs, reproducible.
_CHILD_FLAGS = ("-S", "-P", "-B")
# Without address randomization, what hashes by address (None, NaN, plain objects) hashes the
# same in every run, so a reference's set of tuples holding None iterates in the same order
# and a repr with an address reads the same: reproducible outputs and details. Skipped when
# util-linux's setarch is missing (then those few outputs may vary between runs).
_SETARCH = shutil.which("setarch")
_FIXED_LAYOUT = (_SETARCH, platform.machine(), "--addr-no-randomize") if _SETARCH else ()
_STDERR_TAIL = 2000
_JOIN_SECONDS = 5.0
# A child that cannot import a standard-library module this interpreter has is a broken sandbox, not a broken
# solution: once, 43 MBPP+ references of a mirror build failed on `re`, `collections`, `heapq`, ... and their
# tasks were lost as rejections (the interpreter lay under a 0700 home; `_sandbox_contain` now binds the library
# where the child can read it). Such a job runs again, and fails the stage if the sandbox stays broken.
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_ENVIRONMENT_ATTEMPTS = 2
_log = logging.getLogger(__name__)


class SandboxEnvironmentError(RuntimeError):
    """The sandbox child could not use the standard library: no outcome it gave can be trusted."""


@dataclass(frozen=True)
class SandboxLimits:
    """What decides a case's fate counts CPU time or events, never wall time (a busy machine
    must not change a release); the wall clock only stops a child that sleeps or blocks."""

    cpu_seconds: int = 10  # RLIMIT_CPU for the whole child: past it the task times out
    memory_bytes: int = 1 << 30  # RLIMIT_AS
    wall_seconds: float = 30.0  # whole child, killed (process group) after this
    case_seconds: float = 5.0  # CPU seconds per case (ITIMER_PROF in the child)
    max_output_bytes: int = 1 << 20  # a larger encoded result is reported as unsupported_output
    max_case_timeouts: int | None = None  # after this many timed-out cases, the rest time out unrun


@dataclass(frozen=True)
class CaseOutcome:
    status: str  # "ok" | "error" | "timeout" | "unsupported_output"
    value: Any = None  # the decoded Python return value when status == "ok"
    detail: str = ""  # exception type and message, or why
    # What the case cost, for measurement only: no outcome depends on them.
    cpu_seconds: float = field(default=0.0, compare=False)
    wall_seconds: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class SandboxResult:
    # "ok" (the child ran to the end; see per-case outcomes) | "timeout" | "crashed" | "compile_error"
    status: str
    cases: list[CaseOutcome]  # one per input case when status == "ok", else empty
    detail: str = ""
    mutated_inputs: list[int] = ()  # indexes of cases whose arguments the solution mutated


class _Transcript:
    """What the parent read back from one child."""

    def __init__(self) -> None:
        self.cases: list[CaseOutcome] = []
        self.mutated: list[int] = []
        self.compile_error: str | None = None
        self.fatal: str | None = None
        self.done = False
        self.stderr_tail = b""

    def add(self, line: bytes) -> None:
        message = json.loads(line)
        kind = message["kind"]
        if kind == "case":
            value = values.decode(message["value"])
            costs = message["cpu_seconds"], message["wall_seconds"]
            self.cases.append(CaseOutcome(message["status"], value, message["detail"], *costs))
            if message["mutated"]:
                self.mutated.append(message["index"])
        elif kind == "compile_error":
            self.compile_error = message["detail"]
        elif kind == "fatal":
            self.fatal = message["detail"]
        elif kind == "done":
            self.done = True


def _child_env(workdir: str) -> dict[str, str]:
    # Built from nothing so no inherited secrets or PYTHON* settings reach the solution.
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONHASHSEED": "0",
    }


def _payload(code: str, entry_point: str, cases: list[tuple], limits: SandboxLimits) -> bytes:
    body = {
        "code": code,
        "entry_point": entry_point,
        "cases": [values.encode(list(case)) for case in cases],
        "limits": {
            "cpu_seconds": limits.cpu_seconds,
            "memory_bytes": limits.memory_bytes,
            "case_seconds": limits.case_seconds,
            "max_output_bytes": limits.max_output_bytes,
            "max_case_timeouts": limits.max_case_timeouts,
        },
    }
    # marshal, not JSON: the child then needs no json import (7 ms of every child's start). Only this trusted
    # side's bytes are unmarshalled; what comes back from the child is read as JSON.
    return marshal.dumps(body)


def _feed(stream, data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except (BrokenPipeError, OSError):  # the child died before reading everything
        pass


def _read_results(stream, transcript: _Transcript, errors: list[str]) -> None:
    try:
        for line in stream:
            transcript.add(line)
    except Exception as exc:  # noqa: BLE001 - a corrupted protocol is reported as a crash
        errors.append(f"protocol error: {type(exc).__name__}: {exc}"[:500])
        stream.read()  # keep draining so the child never blocks on a full pipe


def _read_stderr(stream, transcript: _Transcript) -> None:
    for chunk in iter(lambda: stream.read(1 << 16), b""):
        transcript.stderr_tail = (transcript.stderr_tail + chunk)[-_STDERR_TAIL:]


def _start(worker, *args) -> threading.Thread:
    thread = threading.Thread(target=worker, args=args, daemon=True)
    thread.start()
    return thread


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_child(payload: bytes, limits: SandboxLimits, workdir: str) -> tuple[_Transcript, int | None, list[str]]:
    """Run the child to completion or to the wall deadline; returncode None means it was killed."""
    proc = subprocess.Popen(
        [*_FIXED_LAYOUT, sys.executable, *_CHILD_FLAGS, str(_CHILD_SCRIPT)],
        cwd=workdir,
        env=_child_env(workdir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # own process group, so the whole tree can be killed
        close_fds=True,
    )
    transcript, errors = _Transcript(), []
    threads = [
        _start(_feed, proc.stdin, payload),
        _start(_read_stderr, proc.stderr, transcript),
    ]
    reader = _start(_read_results, proc.stdout, transcript, errors)
    # EOF on the result pipe means the child has exited (or closed it); until it is reaped
    # its pid still names the group, so killing the group here cannot hit a reused pid.
    reader.join(limits.wall_seconds)
    timed_out = reader.is_alive()
    _kill_group(proc.pid)
    returncode = proc.wait()
    for thread in [reader, *threads]:
        thread.join(_JOIN_SECONDS)
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    return transcript, None if timed_out else returncode, errors


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _interpret(
    transcript: _Transcript, returncode: int | None, errors: list[str], limits: SandboxLimits, case_count: int
) -> SandboxResult:
    if returncode is None:
        return SandboxResult("timeout", [], f"wall clock limit of {limits.wall_seconds}s exceeded")
    if transcript.compile_error is not None:
        return SandboxResult("compile_error", [], transcript.compile_error)
    if returncode == -signal.SIGXCPU:
        return SandboxResult("timeout", [], f"CPU limit of {limits.cpu_seconds}s exceeded")
    if returncode == 0 and transcript.done and not errors and len(transcript.cases) == case_count:
        return SandboxResult("ok", transcript.cases, "", transcript.mutated)
    reasons = [f"child {_describe_exit(returncode)}", f"after {len(transcript.cases)}/{case_count} cases"]
    reasons += errors + ([f"runner failure: {transcript.fatal}"] if transcript.fatal else [])
    stderr = transcript.stderr_tail.decode(errors="replace").strip()
    if stderr:
        reasons.append(f"stderr: {stderr}")
    return SandboxResult("crashed", [], "; ".join(reasons))


def missing_standard_module(result: SandboxResult) -> str | None:
    """A standard-library module the child reported missing although this interpreter can import it."""
    for detail in (result.detail, *(case.detail for case in result.cases)):
        for name in _MISSING_MODULE.findall(detail):
            top = name.partition(".")[0]
            if top in sys.stdlib_module_names and importlib.util.find_spec(top) is not None:
                return name
    return None


def run_reference(
    code: str, entry_point: str, cases: list[tuple], limits: SandboxLimits = SandboxLimits()
) -> SandboxResult:
    """Call `entry_point(*case)` from `code` for every case in a sandboxed child process.

    Raises for caller errors (cases that `plbench.values` cannot encode), if the child cannot be
    started at all, and SandboxEnvironmentError if, twice, it could not import the standard library.
    """
    payload = _payload(code, entry_point, cases, limits)
    for attempt in range(1, _ENVIRONMENT_ATTEMPTS + 1):
        with tempfile.TemporaryDirectory(prefix="plbench-sandbox-", ignore_cleanup_errors=True) as workdir:
            transcript, returncode, errors = _run_child(payload, limits, workdir)
        result = _interpret(transcript, returncode, errors, limits, len(cases))
        missing = missing_standard_module(result)
        if missing is None:
            return result
        _log.warning("sandbox child could not import the standard library's %r (attempt %d)", missing, attempt)
    raise SandboxEnvironmentError(
        f"the sandbox child could not import the standard library's {missing!r}, which this interpreter has, "
        f"in {_ENVIRONMENT_ATTEMPTS} attempts: the sandbox is broken, not the solution ({result.detail or 'per case'})"
    )


def run_many(
    jobs: list[tuple[str, str, list[tuple]]], limits: SandboxLimits = SandboxLimits(), workers: int = 2
) -> list[SandboxResult]:
    """Run several (code, entry_point, cases) jobs in parallel child processes, results in input order, each
    reported done (plbench.progress)."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(counted(pool.map(lambda job: run_reference(*job, limits=limits), jobs), len(jobs), "tasks"))
