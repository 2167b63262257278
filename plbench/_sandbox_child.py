"""Child-side runner for `plbench.sandbox`: executes one reference solution on its cases.

Run as `python -S -P -B _sandbox_child.py` with a JSON payload
{code, entry_point, cases, limits} on stdin. It writes one JSON line per message on the
protocol fd (a dup of the original stdout) and points fds 0/1 at /dev/null so the
solution's own prints cannot corrupt the protocol. Messages:

    {"kind": "case", "index", "status", "value", "detail", "mutated", "cpu_seconds", "wall_seconds"}
    {"kind": "compile_error", "detail"}
    {"kind": "fatal", "detail"}
    {"kind": "done"}

Before the solution's code is even compiled, `_sandbox_contain.contain` confines the
process at the operating-system level (own uid, read-only file system but a private
working folder, no network, no new processes; see there), and an audit hook turns the
attempts the OS would refuse into a SandboxDenied naming what was refused.
"""

from __future__ import annotations

import _signal as signal  # the signal module but for its enums, which cost each child 3.8 ms of imports
import builtins
import marshal
import math
import os
import sys
import time

_DETAIL_LIMIT = 500
# After the first alarm, keep firing so a solution that swallows the exception (bare
# `except:`) and carries on is interrupted again. One that swallows every alarm in a loop
# is only stopped by the CPU or wall-clock limit of the whole child.
_ALARM_REPEAT_SECONDS = 0.1
# Audit events refused outright: new processes, signals, sockets and foreign calls.
_DENIED_EVENTS = frozenset(
    {"os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.kill", "os.killpg"}
    | {"subprocess.Popen", "pty.spawn", "socket.__new__", "socket.getaddrinfo", "socket.gethostbyname"}
    | {"socket.gethostbyaddr", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"}
    | {"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function"}
)
# Audit events that change the file system, with the positions of their path arguments.
_PATH_EVENTS = {
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
    "os.rename": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class _CaseTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so `except Exception` in solutions lets it through."""


class SandboxDenied(PermissionError):
    pass


def _truncate(text: str) -> str:
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 3] + "..."


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a solution's exception may have a broken __str__
        message = "<unprintable>"
    name = type(exc).__name__
    return _truncate(f"{name}: {message}" if message else name)


# What json.dumps(ensure_ascii=False) escapes in a string: the quote, the backslash and the control characters.
_ESCAPES = {c: f"\\u{c:04x}" for c in range(0x20)} | {ord(c): "\\" + e for c, e in zip('"\\\b\f\n\r\t', '"\\bfnrt')}


def json_text(value) -> str:
    """The text json.dumps(value, ensure_ascii=False, allow_nan=False) gives, for what the protocol sends (str
    keys; tagged values, whose floats are finite). Not with the json module: its import, with re's, was a
    quarter of every child's start."""
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"out of range float value: {value!r}")
        return float.__repr__(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(json_text, value)) + "]"
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return "{" + ", ".join(f"{json_text(k)}: {json_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _line(message: dict) -> bytes:
    return json_text(message).encode() + b"\n"


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


def _load_sibling(name: str):
    """A module beside this file, by path. Not through importlib.util or pathlib: every import here is paid
    again by each of the thousands of children a build starts."""
    path = os.path.join(os.path.dirname(__file__), f"{name}.py")
    module = type(sys)(f"_plbench_{name}")
    module.__file__ = path
    with open(path, "rb") as source:
        exec(compile(source.read(), path, "exec"), module.__dict__)  # noqa: S102 - the project's own file
    return module


def _inside(root: str, path) -> bool:
    if isinstance(path, int):  # an already-open fd: the open itself was checked
        return True
    real = os.path.realpath(os.fsdecode(os.fspath(path)))
    return real == root or real.startswith(root + os.sep)


def _is_write(mode, flags) -> bool:
    if isinstance(mode, str):
        return any(flag in mode for flag in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _install_guards(root: str) -> None:
    """Turn what the OS would refuse anyway into a named SandboxDenied (a reason per case).

    An audit hook sees every alias of a call (posix.system, _io.open, io.FileIO ...) and
    cannot be removed; it is the explanation, the containment is `_sandbox_contain`.
    """

    def hook(event: str, args: tuple) -> None:
        if event in _DENIED_EVENTS:
            raise SandboxDenied(f"{event} is not allowed in the sandbox")
        if event == "open" and _is_write(*args[1:3]) and not _inside(root, args[0]):
            raise SandboxDenied(f"writing {os.fsdecode(args[0])!r} outside the sandbox directory")
        if event in _PATH_EVENTS and not all(_inside(root, args[i]) for i in _PATH_EVENTS[event]):
            raise SandboxDenied(f"{event} outside the sandbox directory")

    sys.addaudithook(hook)


class _Alarm:
    """Per-case budget of CPU time (ITIMER_PROF), not wall time: a busy machine slows a case
    down in wall time but hardly changes the CPU it needs, so a case's fate does not depend
    on the load (issue 9, item 9). The kernel samples that CPU time per tick, so the budget
    holds to some milliseconds: what matters is that no case costs anywhere near it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = False
        self.fired = False
        signal.signal(signal.SIGPROF, self._on_alarm)

    def _on_alarm(self, _signum, _frame):
        if self.armed:  # a late signal after stop() must not hit the runner's own code
            self.fired = True
            raise _CaseTimeout()

    def start(self) -> None:
        self.armed, self.fired = True, False
        signal.setitimer(signal.ITIMER_PROF, self.seconds, _ALARM_REPEAT_SECONDS)

    def stop(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)


def _canonical(values, obj) -> str | None:
    try:
        return json_text(values.encode(obj))
    except Exception:  # noqa: BLE001 - the solution may have stored anything in its arguments
        return None


def _mutated(values, before, after) -> bool:
    # Plain equality first: fast for big argument lists, and NaN compares equal through the
    # identity shortcut since decoding gives the one math.nan. Only a difference (or a failing
    # __eq__) is confirmed through the codec, which also tells 1 from 1.0 from True.
    try:
        equal = before == after
    except Exception:  # noqa: BLE001 - a solution-defined __eq__ may raise
        equal = False
    if equal:
        return False
    return _canonical(values, before) != _canonical(values, after)


def _call(fn, args, alarm: _Alarm) -> tuple[str, object, str]:
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
        return "timeout", None, f"case exceeded {alarm.seconds}s of CPU time"
    return status, result, detail


def _with_costs(line: bytes, cpu_seconds: float, wall_seconds: float) -> bytes:
    """Append the cost figures to a protocol line (a JSON object) after every decision on it:
    they differ run to run, so they must not reach a size check or a detail."""
    return line[:-2] + f', "cpu_seconds": {cpu_seconds:.6f}, "wall_seconds": {wall_seconds:.6f}}}\n'.encode()


def _holds_more_items(value, most: int) -> bool:
    """Whether `value` holds more than `most` items all told, as its encoding has them (elements, and a dict's
    pairs with their keys and values). Each item takes at least 2 bytes of the encoded text (its own and a
    separator or bracket), so such a result cannot fit in 2 * `most` bytes, and counting stops where encoding
    would go on: one MBPP+ reference returns 120 MB, which took 11 s to encode only to be refused."""
    pending, count = [value], 0
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple, set, frozenset, dict)):
            count += len(item)
            if count > most:
                return True
            pending.extend(item.items() if isinstance(item, dict) else item)
    return False


def _case_line(values, fn, alarm: _Alarm, index: int, encoded_args, max_bytes: int) -> tuple[str, bytes]:
    """(status, protocol line) of one case."""
    args = values.decode(encoded_args)  # a fresh copy for every case
    before = values.decode(encoded_args)  # and one the call cannot touch
    cpu, wall = time.process_time(), time.perf_counter()
    status, result, detail = _call(fn, args, alarm)
    costs = time.process_time() - cpu, time.perf_counter() - wall  # for measurement only
    message = {
        "kind": "case",
        "index": index,
        "status": status,
        "value": None,
        "detail": detail,
        "mutated": _mutated(values, before, args),
    }
    if status == "ok":
        most = max_bytes // 2
        try:
            # Serialized here, once, because the encoding can still refuse an encoded value
            # (ints beyond the str-conversion digit limit); not at all when it cannot fit.
            line = None if _holds_more_items(result, most) else _line({**message, "value": values.encode(result)})
        except Exception as exc:  # noqa: BLE001
            message.update(status="unsupported_output", detail=_truncate(f"{type(result).__name__}: {exc}"))
        else:
            if line is not None and len(line) <= max_bytes:
                return status, _with_costs(line, *costs)
            if line is None:
                detail = f"result of more than {most} items exceeds {max_bytes} bytes"
            else:
                detail = f"result of {len(line)} bytes exceeds {max_bytes}"
            message.update(status="unsupported_output", detail=detail)
    return message["status"], _with_costs(_line(message), *costs)


def _not_run(index: int, timeouts: int) -> bytes:
    detail = f"not run: {timeouts} earlier cases exceeded their CPU budget"
    message = {"kind": "case", "index": index, "status": "timeout", "value": None, "detail": detail}
    return _with_costs(_line({**message, "mutated": False}), 0.0, 0.0)


def _run_cases(protocol: Protocol, values, fn, cases: list, limits: dict) -> None:
    """Every case in order; after `max_case_timeouts` timeouts the rest are reported unrun.

    A count of timeouts, unlike a time budget for the whole task, is as stable as each
    case's own fate, and still bounds what a task of hopeless cases costs.
    """
    alarm, timeouts, most = _Alarm(limits["case_seconds"]), 0, limits["max_case_timeouts"]
    for index, encoded_args in enumerate(cases):
        if most is not None and timeouts >= most:
            protocol.send(_not_run(index, timeouts))
            continue
        status, line = _case_line(values, fn, alarm, index, encoded_args, limits["max_output_bytes"])
        timeouts += status == "timeout"
        protocol.send(line)


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
    values = _load_sibling("values")
    payload = marshal.loads(sys.stdin.buffer.read())  # from the parent (plbench.sandbox._payload)
    protocol = Protocol(_isolate_stdio())
    try:
        workdir = os.path.realpath(os.getcwd())
        limits = payload["limits"]
        _load_sibling("_sandbox_contain").contain(workdir, int(limits["cpu_seconds"]), limits["memory_bytes"])
        _install_guards(workdir)
        fn = _load_solution(payload["code"], payload["entry_point"])
        if isinstance(fn, str):
            protocol.send(_line({"kind": "compile_error", "detail": fn}))
        else:
            _run_cases(protocol, values, fn, payload["cases"], limits)
        protocol.send(_line({"kind": "done"}))
    except BaseException as exc:  # noqa: BLE001 - report runner failures instead of a bare exit code
        protocol.send(_line({"kind": "fatal", "detail": _describe(exc)}))
    # Skip interpreter teardown: threads or atexit hooks left by the solution must not hang us.
    os._exit(0)


if __name__ == "__main__":
    main()
