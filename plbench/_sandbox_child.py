"""Child-side runner for `plbench.sandbox`: executes one reference solution on its cases.

Run as `python -s -P -B _sandbox_child.py <path to plbench/values.py>` with a JSON payload
{code, entry_point, cases, limits} on stdin. It writes one JSON line per message on the
protocol fd (a dup of the original stdout) and points fds 0/1 at /dev/null so the
solution's own prints cannot corrupt the protocol. Messages:

    {"kind": "case", "index", "status", "value", "detail", "mutated"}
    {"kind": "compile_error", "detail"}
    {"kind": "fatal", "detail"}
    {"kind": "done"}

The guards installed here (patched os/subprocess/socket/open functions) are best effort
against accidents in benchmark reference code; they are not a security boundary.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import ctypes
import importlib.util
import io
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from typing import Any

_DETAIL_LIMIT = 500
_CLONE_NEWNET = 0x40000000
_FILE_SIZE_LIMIT = 16 << 20
# After the first alarm, keep firing so a solution that swallows the exception (bare
# `except:`) and carries on is interrupted again. One that swallows every alarm in a loop
# is only stopped by the CPU or wall-clock limit of the whole child.
_ALARM_REPEAT_SECONDS = 0.1
# os functions that change the file system, with how many leading arguments are paths.
_PATH_FUNCTIONS = {
    "remove": 1,
    "unlink": 1,
    "rmdir": 1,
    "mkdir": 1,
    "truncate": 1,
    "chmod": 1,
    "chown": 1,
    "utime": 1,
    "rename": 2,
    "replace": 2,
    "symlink": 2,
    "link": 2,
}


class _CaseTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so `except Exception` in solutions lets it through."""


class SandboxDenied(PermissionError):
    pass


def _load_values(path: str):
    spec = importlib.util.spec_from_file_location("_plbench_values", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _truncate(text: str) -> str:
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 3] + "..."


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a solution's exception may have a broken __str__
        message = "<unprintable>"
    name = type(exc).__name__
    return _truncate(f"{name}: {message}" if message else name)


def _line(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False, allow_nan=False).encode() + b"\n"


class Protocol:
    def __init__(self, fd: int):
        self._out = os.fdopen(fd, "wb", buffering=1 << 16)

    def send(self, line: bytes) -> None:
        # Flushed per line so the parent can stream even when a later case hangs.
        self._out.write(line)
        self._out.flush()


def _isolate_stdio() -> int:
    """Return a private fd for the protocol; stdin and stdout now go to /dev/null.

    fd 2 stays the parent's stderr pipe (drained and tail-kept there) for crash diagnostics.
    """
    proto_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    return proto_fd


def _apply_limits(limits: dict) -> None:
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (_FILE_SIZE_LIMIT, _FILE_SIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Not enforced for root; the os/subprocess patches below are the real fork guard there.
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    # Oversized writes then fail with OSError (a per-case error) instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _drop_network() -> None:
    """Enter an empty network namespace if allowed (root); the socket patches cover the rest."""
    # Optional hardening: failure (no privilege, no libc symbol) is fine.
    with contextlib.suppress(Exception):
        if hasattr(os, "unshare"):
            os.unshare(_CLONE_NEWNET)
        else:
            ctypes.CDLL(None, use_errno=True).unshare(_CLONE_NEWNET)


def _refuse(what: str):
    def blocked(*_args, **_kwargs):
        raise SandboxDenied(f"{what} is not allowed in the sandbox")

    return blocked


def _block_processes() -> None:
    names = ["fork", "forkpty", "system", "popen", "kill", "killpg", "posix_spawn", "posix_spawnp"]
    names += [n for n in dir(os) if n.startswith(("exec", "spawn"))]
    for name in names:
        if hasattr(os, name):
            setattr(os, name, _refuse(f"os.{name}"))
    subprocess.Popen = _refuse("subprocess.Popen")
    try:
        import _posixsubprocess

        _posixsubprocess.fork_exec = _refuse("fork_exec")
    except ImportError:
        pass


def _block_network() -> None:
    # socket.socket stays a class (ssl and others subclass it at import); its
    # connecting and binding methods are what get refused.
    for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
        setattr(socket.socket, name, _refuse(f"socket.{name}"))
    for name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname"):
        setattr(socket, name, _refuse(f"socket.{name}"))


def _inside(root: str, path) -> bool:
    if isinstance(path, int):  # an already-open fd: the open itself was checked
        return True
    real = os.path.realpath(os.fsdecode(os.fspath(path)))
    return real == root or real.startswith(root + os.sep)


def _guard_writes(root: str) -> None:
    """Refuse file writes outside `root` (the temporary cwd). Best effort only."""
    real_open, real_os_open = builtins.open, os.open
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+") and not _inside(root, file):
            raise SandboxDenied(f"writing {os.fsdecode(file)!r} outside the sandbox directory")
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & write_flags and (kwargs.get("dir_fd") is not None or not _inside(root, path)):
            raise SandboxDenied(f"writing {os.fsdecode(path)!r} outside the sandbox directory")
        return real_os_open(path, flags, *args, **kwargs)

    def guard_paths(name, fn, path_count):
        def guarded(*args, **kwargs):
            paths = args[:path_count]
            if kwargs.get("dir_fd") is not None or not all(_inside(root, p) for p in paths):
                raise SandboxDenied(f"os.{name} outside the sandbox directory")
            return fn(*args, **kwargs)

        return guarded

    builtins.open = io.open = guarded_open
    os.open = guarded_os_open
    for name, path_count in _PATH_FUNCTIONS.items():
        setattr(os, name, guard_paths(name, getattr(os, name), path_count))


class _Alarm:
    """Per-case wall-clock budget through ITIMER_REAL."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = False
        self.fired = False
        signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_alarm(self, _signum, _frame):
        if self.armed:  # a late signal after stop() must not hit the runner's own code
            self.fired = True
            raise _CaseTimeout()

    def start(self) -> None:
        self.armed, self.fired = True, False
        signal.setitimer(signal.ITIMER_REAL, self.seconds, _ALARM_REPEAT_SECONDS)

    def stop(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)


def _canonical(values, obj) -> str | None:
    try:
        return json.dumps(values.encode(obj), sort_keys=True)
    except Exception:  # noqa: BLE001 - the solution may have stored anything in its arguments
        return None


def _mutated(values, before, after) -> bool:
    # Plain equality first: fast for big argument lists, and NaN compares equal through the
    # identity shortcut since deepcopy keeps float objects. Only a difference (or a failing
    # __eq__) is confirmed through the codec, which also tells 1 from 1.0 from True.
    try:
        equal = before == after
    except Exception:  # noqa: BLE001 - a solution-defined __eq__ may raise
        equal = False
    if equal:
        return False
    return _canonical(values, before) != _canonical(values, after)


def _call(fn, args, alarm: _Alarm) -> tuple[str, Any, str]:
    """(status, return value, detail) of one guarded call."""
    try:
        try:
            alarm.start()
            result = fn(*args)
        finally:
            alarm.stop()  # a repeated alarm may still land here: the outer handler catches it
    except BaseException as exc:  # noqa: BLE001 - SystemExit etc. are solution errors too
        status, result, detail = "error", None, _describe(exc)
    else:
        status, detail = "ok", ""
    # Also covers a solution that swallowed the alarm and then returned or raised.
    if alarm.fired:
        return "timeout", None, f"case exceeded {alarm.seconds}s"
    return status, result, detail


def _case_line(values, fn, alarm: _Alarm, index: int, encoded_args, max_bytes: int) -> bytes:
    args = values.decode(encoded_args)  # a fresh copy for every case
    before = copy.deepcopy(args)
    status, result, detail = _call(fn, args, alarm)
    message = {
        "kind": "case",
        "index": index,
        "status": status,
        "value": None,
        "detail": detail,
        "mutated": _mutated(values, before, args),
    }
    if status == "ok":
        try:
            # Serialized here, once, because json.dumps can still refuse an encoded value
            # (ints beyond the str-conversion digit limit).
            line = _line({**message, "value": values.encode(result)})
        except Exception as exc:  # noqa: BLE001
            message.update(status="unsupported_output", detail=_truncate(f"{type(result).__name__}: {exc}"))
        else:
            if len(line) <= max_bytes:
                return line
            message.update(status="unsupported_output", detail=f"result of {len(line)} bytes exceeds {max_bytes}")
    return _line(message)


def _load_solution(code: str, entry_point: str):
    """Return the entry point function, or a string explaining why it cannot be loaded."""
    try:
        compiled = compile(code, "<solution>", "exec")
    except (SyntaxError, ValueError) as exc:
        return _describe(exc)
    namespace = {"__name__": "__plbench_solution__", "__builtins__": builtins}
    try:
        exec(compiled, namespace)  # noqa: S102 - running the solution is the point
    except BaseException as exc:  # noqa: BLE001
        return "module raised " + _describe(exc)
    fn = namespace.get(entry_point)
    if not callable(fn):
        return f"entry point {entry_point!r} is not defined as a callable"
    return fn


def main() -> None:
    values = _load_values(sys.argv[1])
    payload = json.loads(sys.stdin.buffer.read())
    protocol = Protocol(_isolate_stdio())
    try:
        _apply_limits(payload["limits"])
        _drop_network()
        _block_processes()
        _block_network()
        _guard_writes(os.path.realpath(os.getcwd()))
        alarm = _Alarm(payload["limits"]["case_seconds"])
        fn = _load_solution(payload["code"], payload["entry_point"])
        if isinstance(fn, str):
            protocol.send(_line({"kind": "compile_error", "detail": fn}))
        else:
            limits, started = payload["limits"], time.monotonic()
            for index, encoded_args in enumerate(payload["cases"]):
                if limits["task_seconds"] is not None and time.monotonic() - started > limits["task_seconds"]:
                    protocol.send(
                        _line(
                            {
                                "kind": "case",
                                "index": index,
                                "status": "timeout",
                                "value": None,
                                "mutated": False,
                                "detail": f"not run: the task's {limits['task_seconds']}s budget was spent",
                            }
                        )
                    )
                    continue
                protocol.send(_case_line(values, fn, alarm, index, encoded_args, limits["max_output_bytes"]))
        protocol.send(_line({"kind": "done"}))
    except BaseException as exc:  # noqa: BLE001 - report runner failures instead of a bare exit code
        protocol.send(_line({"kind": "fatal", "detail": _describe(exc)}))
    # Skip interpreter teardown: threads or atexit hooks left by the solution must not hang us.
    os._exit(0)


if __name__ == "__main__":
    main()
