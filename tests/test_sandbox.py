"""Tests for plbench.sandbox: real child processes with small limits."""

from __future__ import annotations

import json
import math
import os
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plbench._sandbox_child import json_text
from plbench._sandbox_contain import (
    FILE_SIZE_LIMIT,
    SANDBOX_ID_BASE,
    STANDARD_LIBRARY_MOUNT,
    seccomp_program,
    unescape_mount_point,
)
from plbench.mbpp.cases import cases_from_sandbox, plan_mbpp_plus
from plbench.mbpp.extract import ExtractionError
from plbench.records import RawProblem
from plbench.sandbox import (
    CaseOutcome,
    SandboxEnvironmentError,
    SandboxLimits,
    SandboxResult,
    run_many,
    run_reference,
)
from tests.helpers import sandbox_children

FAST = SandboxLimits(cpu_seconds=5, memory_bytes=1 << 30, wall_seconds=10.0, case_seconds=0.5)
CHECKOUT = Path(__file__).resolve().parents[1]


def run(code: str, cases: list[tuple], entry_point: str = "f", limits: SandboxLimits = FAST) -> SandboxResult:
    return run_reference(code, entry_point, cases, limits)


def test_values_round_trip_with_types_preserved():
    code = (
        "import math\n"
        "def f(a, b):\n"
        "    return (a + b, {a, b}, {a: [b], (a, b): None}, a / 4, math.inf, -math.inf, 'é')\n"
    )
    result = run(code, [(1, 2), (3, 5)])
    assert result.status == "ok"
    assert result.mutated_inputs == []
    assert [c.status for c in result.cases] == ["ok", "ok"]
    assert result.cases[0].value == (3, {1, 2}, {1: [2], (1, 2): None}, 0.25, math.inf, -math.inf, "é")
    assert result.cases[1].value == (8, {3, 5}, {3: [5], (3, 5): None}, 0.75, math.inf, -math.inf, "é")
    nan = run("def f(x):\n    return [x, float('nan')]\n", [(1.5,)]).cases[0].value
    assert nan[0] == 1.5 and math.isnan(nan[1])


def test_common_imports_and_helpers_work_and_main_block_is_skipped():
    code = (
        "import heapq, itertools, re\n"
        "from collections import Counter\n"
        "def helper(xs):\n"
        "    return heapq.nsmallest(2, xs)\n"
        "def f(xs, text):\n"
        "    pairs = list(itertools.combinations(helper(xs), 2))\n"
        "    return pairs, re.findall(r'[a-z]+', text), Counter(text)\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit('main block must not run')\n"
    )
    result = run(code, [([5, 1, 3], "ab ab")])
    assert result.status == "ok"
    assert result.cases == [CaseOutcome("ok", ([(1, 3)], ["ab", "ab"], {"a": 2, "b": 2, " ": 1}), "")]


def test_exceptions_are_per_case():
    result = run("def f(x):\n    return 10 // x\n", [(2,), (0,), (5,)])
    assert result.status == "ok"
    assert result.cases == [
        CaseOutcome("ok", 5, ""),
        CaseOutcome("error", None, "ZeroDivisionError: integer division or modulo by zero"),
        CaseOutcome("ok", 2, ""),
    ]
    long_message = run("def f():\n    raise ValueError('z' * 2000)\n", [()]).cases[0]
    assert long_message.status == "error"
    assert len(long_message.detail) == 500
    assert long_message.detail.startswith("ValueError: zzz")


def test_per_case_infinite_loop_times_out_and_later_cases_run():
    code = "def f(x):\n    while x:\n        pass\n    return 'done'\n"
    result = run(code, [(0,), (1,), (0,)])
    assert result.status == "ok"
    assert [c.status for c in result.cases] == ["ok", "timeout", "ok"]
    assert result.cases[1].detail == "case exceeded 0.5s of CPU time"
    assert result.cases[2].value == "done"


def test_solution_swallowing_the_alarm_still_times_out():
    code = (
        "def f(then):\n"
        "    try:\n"
        "        while True:\n"
        "            pass\n"
        "    except BaseException:\n"
        "        pass\n"
        "    if then == 'return':\n"
        "        return 'swallowed'\n"
        "    while True:\n"
        "        pass\n"
    )
    result = run(code, [("return",), ("loop again",)])
    assert result.status == "ok"
    assert result.cases == [CaseOutcome("timeout", None, "case exceeded 0.5s of CPU time")] * 2


def test_module_level_hang_hits_the_wall_clock():
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=1.0, case_seconds=0.5)
    start = time.monotonic()
    result = run("while True:\n    pass\ndef f():\n    return 1\n", [()], limits=limits)
    assert time.monotonic() - start < 5
    assert result == SandboxResult("timeout", [], "wall clock limit of 1.0s exceeded")
    assert sandbox_children() == []


def test_cpu_limit_reports_timeout():
    limits = SandboxLimits(cpu_seconds=1, wall_seconds=10.0, case_seconds=10.0)
    result = run("def f():\n    while True:\n        pass\n", [()], limits=limits)
    assert result == SandboxResult("timeout", [], "CPU limit of 1s exceeded")


def test_memory_bomb_is_a_case_error():
    code = "def f(n):\n    x = 'a' * (1 << n)\n    return len(x)\n"
    result = run(code, [(34,), (3,)])
    assert result.status == "ok"
    assert result.cases == [CaseOutcome("error", None, "MemoryError"), CaseOutcome("ok", 8, "")]


def test_fork_and_subprocess_are_refused_and_leave_no_processes():
    code = (
        "import os, subprocess\n"
        "def f(how):\n"
        "    if how == 'fork':\n"
        "        while True:\n"
        "            os.fork()\n"
        "    if how == 'system':\n"
        "        return os.system('true')\n"
        "    return subprocess.run(['true']).returncode\n"
    )
    result = run(code, [("fork",), ("system",), ("subprocess",)])
    assert result.status == "ok"
    assert result.cases == [
        CaseOutcome("error", None, "SandboxDenied: os.fork is not allowed in the sandbox"),
        CaseOutcome("error", None, "SandboxDenied: os.system is not allowed in the sandbox"),
        CaseOutcome("error", None, "SandboxDenied: subprocess.Popen is not allowed in the sandbox"),
    ]
    assert sandbox_children() == []


def test_network_connections_are_refused():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    code = (
        "import socket\n"
        "def f(how, port):\n"
        "    if how == 'create_connection':\n"
        "        socket.create_connection(('127.0.0.1', port))\n"
        "    else:\n"
        "        socket.socket().connect(('127.0.0.1', port))\n"
        "    return 'connected'\n"
    )
    try:
        result = run(code, [("create_connection", port), ("connect", port)])
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
    assert result.status == "ok"
    assert result.cases == [
        CaseOutcome("error", None, "SandboxDenied: socket.getaddrinfo is not allowed in the sandbox"),
        CaseOutcome("error", None, "SandboxDenied: socket.__new__ is not allowed in the sandbox"),
    ]


# Places a dropped user could write to on an ordinary system, and the checkout itself.
# Named per test process: other checkouts run these tests at the same time.
TARGETS = [f"{folder}/plbench-escape-{os.getpid()}" for folder in ("/tmp", "/dev/shm", "/var/tmp", str(CHECKOUT))]
SENTINEL = Path(f"/tmp/plbench-sentinel-{os.getpid()}")
WRITE_DENIED = "SandboxDenied: writing {path!r} outside the sandbox directory"
# The ways around the os/builtins patches the sandbox used to rely on (issue 9, item 8).
ESCAPES = {
    "posix.system": (
        "import posix\ndef f(path):\n    return posix.system(f'echo x > {path}')\n",
        "SandboxDenied: os.system is not allowed in the sandbox",
    ),
    "posix.fork": (
        "import posix\ndef f(path):\n    if posix.fork() == 0:\n        open(path, 'w')\n",
        "SandboxDenied: os.fork is not allowed in the sandbox",
    ),
    "posix.open": (
        "import posix\ndef f(path):\n    return posix.open(path, posix.O_CREAT | posix.O_WRONLY)\n",
        WRITE_DENIED,
    ),
    "posix.rename": (
        f"import posix\ndef f(path):\n    posix.rename({str(SENTINEL)!r}, path)\n",
        "SandboxDenied: os.rename outside the sandbox directory",
    ),
    "_io.open": ("import _io\ndef f(path):\n    _io.open(path, 'w').write('x')\n", WRITE_DENIED),
    "io.FileIO": ("import io\ndef f(path):\n    io.FileIO(path, 'w').write(b'x')\n", WRITE_DENIED),
    "ctypes.CDLL(None).system": (
        "import ctypes\ndef f(path):\n    return ctypes.CDLL(None).system(f'echo x > {path}'.encode())\n",
        "SandboxDenied: ctypes.dlopen is not allowed in the sandbox",
    ),
    "open": ("def f(path):\n    open(path, 'w').write('x')\n", WRITE_DENIED),
    "pathlib": ("import pathlib\ndef f(path):\n    pathlib.Path(path).write_text('x')\n", WRITE_DENIED),
    "os.remove": (
        f"import os\ndef f(path):\n    os.remove({str(SENTINEL)!r})\n",
        "SandboxDenied: os.remove outside the sandbox directory",
    ),
    "subprocess": (
        "import subprocess\ndef f(path):\n    subprocess.run(['touch', path])\n",
        "SandboxDenied: subprocess.Popen is not allowed in the sandbox",
    ),
}


@pytest.fixture
def sentinel():
    for target in TARGETS:
        Path(target).unlink(missing_ok=True)
    SENTINEL.write_text("mine")
    yield SENTINEL
    SENTINEL.unlink(missing_ok=True)


@pytest.mark.parametrize("name", ESCAPES)
def test_each_escape_is_rejected_with_a_reason_and_changes_nothing_outside(name, sentinel):
    code, denied = ESCAPES[name]
    result = run(code, [(target,) for target in TARGETS])
    assert result.status == "ok"
    assert result.cases == [CaseOutcome("error", None, denied.format(path=target)) for target in TARGETS]
    assert [target for target in TARGETS if Path(target).exists()] == []
    assert sentinel.read_text() == "mine"
    assert sandbox_children() == []
    # Every case failed, so the task itself is rejected, with the refusal as its reason.
    plan = plan_mbpp_plus(_plus_problem(code, [[target] for target in TARGETS]))
    with pytest.raises(ExtractionError) as rejected:
        cases_from_sandbox(plan, result)
    assert rejected.value.reason_code == "reference_raised"
    assert denied.format(path=TARGETS[0]) in rejected.value.detail


def _plus_problem(code: str, inputs: list[list]) -> RawProblem:
    prompt = '"""\nTask.\nassert f(1) == 1\n"""\n'
    return RawProblem(
        "mbpp_plus", "Mbpp/1", "t.jsonl", 1, "Task.", "f", code, [], base_input=inputs, extra={"prompt": prompt}
    )


needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="the operating-system containment (mount namespace, own uid) needs root"
)


@needs_root
def test_the_operating_system_refuses_what_the_audit_guards_cannot_see(sentinel):
    """A dir_fd makes a relative path look local to the guards; a thread needs no audited call."""
    code = (
        "import os, threading\n"
        "def f(how, path):\n"
        "    folder = os.open(os.path.dirname(path), os.O_RDONLY)\n"
        "    name = os.path.basename(path)\n"
        "    if how == 'open':\n"
        "        os.open(name, os.O_CREAT | os.O_WRONLY, dir_fd=folder)\n"
        "    elif how == 'rename':\n"
        "        os.rename(name, 'moved', src_dir_fd=folder, dst_dir_fd=folder)\n"
        "    else:\n"
        "        threading.Thread(target=print).start()\n"
        "    return 'escaped'\n"
    )
    cases = [("open", target) for target in TARGETS] + [("rename", str(sentinel)), ("thread", "/tmp/x")]
    result = run(code, cases)
    read_only = [
        CaseOutcome("error", None, f"OSError: [Errno 30] Read-only file system: {Path(t).name!r}") for t in TARGETS
    ]
    assert result.cases == [
        *read_only,
        CaseOutcome("error", None, f"OSError: [Errno 30] Read-only file system: {SENTINEL.name!r} -> 'moved'"),
        CaseOutcome("error", None, "RuntimeError: can't start new thread"),
    ]
    assert [target for target in TARGETS if Path(target).exists()] == []
    assert sentinel.read_text() == "mine" and not Path("/tmp/moved").exists()


@needs_root
def test_the_solution_runs_as_its_own_user_in_a_private_folder_with_a_file_size_limit():
    code = (
        "import os\n"
        "def f(size):\n"
        "    with open('local.txt', 'w') as out:\n"
        "        out.write('x' * size)\n"
        "    folder = os.stat('.')\n"
        "    return os.getuid(), os.getgid(), os.getgroups(), folder.st_uid, os.path.getsize('local.txt')\n"
    )
    result = run(code, [(3,), (FILE_SIZE_LIMIT + 1,)])
    assert result.status == "ok"
    uid, gid, groups, owner, size = result.cases[0].value
    assert uid == gid == owner and uid > SANDBOX_ID_BASE and groups == [] and size == 3
    assert result.cases[1] == CaseOutcome("error", None, "OSError: [Errno 27] File too large")


@needs_root
def test_the_solution_imports_the_standard_library_where_only_root_can_reach_it():
    """A fresh machine's pyenv Python lives under /root, 0700: the solution's user could not reach `heapq`."""
    code = (
        "import heapq, os\n"
        "def f(x):\n"
        "    import bisect\n"
        "    return heapq.nlargest(1, [x]), 'é'.encode('cp1252').decode('cp1252'), os.listdir('.')\n"
    )
    above_library = Path(os.__file__).parent.parent  # pyenv: /root/.pyenv/versions/<version>/lib
    if Path.home() not in above_library.parents:  # never a system folder such as /usr/lib, even for a moment
        pytest.skip(f"the standard library is not in a home folder ({above_library}): none is made private")
    mode = above_library.stat().st_mode
    above_library.chmod(0o700)
    try:
        result = run(code, [(3,)])
    finally:
        above_library.chmod(stat.S_IMODE(mode))
    assert result.cases == [CaseOutcome("ok", ([3], "é", [STANDARD_LIBRARY_MOUNT]))]


def test_seccomp_programs_are_exact():
    def listing(machine):
        program = seccomp_program(machine)
        return [struct.unpack("HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]

    assert listing("x86_64") == [
        (0x20, 0, 0, 4),
        (0x15, 0, 5, 0xC000003E),
        (0x20, 0, 0, 0),
        (0x35, 3, 0, 0x40000000),
        (0x15, 1, 0, 41),
        (0x06, 0, 0, 0x7FFF0000),
        (0x06, 0, 0, 0x0005000D),
        (0x06, 0, 0, 0x80000000),
    ]
    assert listing("aarch64")[1] == (0x15, 0, 5, 0xC00000B7) and listing("aarch64")[4] == (0x15, 1, 0, 198)


def test_environment_work_dir_and_stdin_are_scrubbed(monkeypatch):
    monkeypatch.setenv("PLBENCH_TEST_SECRET", "hunter2")
    code = "import os, sys\ndef f():\n    return sorted(os.environ), os.getcwd(), sys.stdin.read()\n"
    result = run(code, [()])
    assert result.status == "ok"
    env_names, workdir, stdin_text = result.cases[0].value
    assert env_names == ["HOME", "LANG", "PATH", "PYTHONHASHSEED", "TMPDIR"]
    assert Path(workdir).name.startswith("plbench-sandbox-")
    assert not Path(workdir).exists()
    assert stdin_text == ""


def test_string_hashing_is_deterministic_across_runs():
    code = "def f(words):\n    return list(set(words))\n"
    words = [f"word{i}" for i in range(30)]
    first, second = (run(code, [(words,)]).cases[0].value for _ in range(2))
    assert first == second
    assert sorted(first) == sorted(words)


def test_address_based_hashes_and_reprs_are_the_same_in_every_run():
    code = "class Box:\n    pass\ndef f():\n    return hash(None), list({(1, None), None, 'a'}), repr(Box())\n"
    first, second = (run(code, [()]).cases[0].value for _ in range(2))
    assert first == second
    # The size of a too-large result is reported without the run's varying cost figures.
    limits = SandboxLimits(max_output_bytes=1000)
    details = {run("def f():\n    return 'x' * 5000\n", [()], limits=limits).cases[0].detail for _ in range(3)}
    assert details == {"result of 5090 bytes exceeds 1000"}


def test_the_child_imports_only_what_it_needs_and_the_solution_sees_none_of_it():
    # Each import is paid by every child (thousands a build): none of these is needed to run a solution.
    code = (
        "import sys\n"
        "HEAVY = ('json', 're', 'enum', 'typing', 'pathlib', 'copy', 'importlib.util', 'signal')\n"
        "def f():\n"
        "    return [m for m in HEAVY if m in sys.modules]\n"
    )
    assert run(code, [()]).cases[0].value == []


@pytest.mark.parametrize(
    "value",
    [
        {"kind": "case", "index": 3, "status": "ok", "value": None, "mutated": False},
        ['quote " backslash \\ tab \t newline \n cr \r bell \x07 nul \x00 \x1f \x7f', "\b\f"],
        ["é", "日本", "\U0001f600", "\u2028", ""],
        [0, -1, 10**40, True, False, 0.1, -0.0, 1e300, 5e-324, 2.5],
        {"$tuple": [{"$set": [1, "a"]}, {"$dict": [[{"$float": "nan"}, []]]}, {}]},
    ],
)
def test_the_childs_json_text_is_what_json_dumps_gives(value):
    assert json_text(value) == json.dumps(value, ensure_ascii=False, allow_nan=False)
    assert json.loads(json_text(value)) == value


@pytest.mark.parametrize("value", [math.nan, [math.inf], object()])
def test_the_childs_json_text_refuses_what_json_dumps_refuses(value):
    with pytest.raises((ValueError, TypeError)) as expected:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    with pytest.raises(expected.type):
        json_text(value)


@pytest.mark.parametrize("value", [(1, 2), {1: "a"}])
def test_the_childs_json_text_refuses_what_the_protocol_never_sends(value):
    with pytest.raises(TypeError):  # json.dumps would write a list, or the key as a string
        json_text(value)


@pytest.mark.parametrize(
    "field, point",
    [("/", "/"), ("/mnt/a\\040b", "/mnt/a b"), ("/x\\134y\\011", "/x\\y\t"), ("/n\\012\\0401", "/n\n 1")],
)
def test_mount_points_are_read_as_mountinfo_escapes_them(field, point):
    assert unescape_mount_point(field) == point


def test_mutated_inputs_are_reported_and_each_case_gets_a_fresh_copy():
    code = "def f(xs):\n    xs.append(1)\n    return len(xs)\n"
    shared = [7, 8]
    result = run(code, [(shared,), (shared,), ([],)])
    assert shared == [7, 8]
    assert result.status == "ok"
    assert [c.value for c in result.cases] == [3, 3, 1]
    assert result.mutated_inputs == [0, 1, 2]
    untouched = run("def f(xs):\n    return sorted(xs)\n", [([3, 1, 2],)])
    assert untouched.cases == [CaseOutcome("ok", [1, 2, 3], "")]
    assert untouched.mutated_inputs == []


def test_solution_output_does_not_break_the_protocol():
    code = (
        "import os, sys\n"
        "print('module level noise')\n"
        "def f(x):\n"
        '    print(\'{"kind": "done"}\')\n'
        "    print('x' * 100000)\n"
        "    print('to stderr', file=sys.stderr)\n"
        "    os.write(1, b'raw fd write\\n')\n"
        "    return x * 2\n"
    )
    result = run(code, [(1,), (2,)])
    assert result.status == "ok"
    assert result.cases == [CaseOutcome("ok", 2, ""), CaseOutcome("ok", 4, "")]


def test_code_that_cannot_load_is_a_compile_error():
    syntax = run("def f(:\n    pass\n", [(1,)])
    assert syntax == SandboxResult("compile_error", [], "SyntaxError: invalid syntax (<solution>, line 1)")
    missing = run("def g():\n    return 1\n", [()])
    assert missing == SandboxResult("compile_error", [], "entry point 'f' is not defined as a callable")
    raising = run("import no_such_module_plbench\ndef f():\n    return 1\n", [()])
    assert raising.status == "compile_error"
    assert raising.detail == "module raised ModuleNotFoundError: No module named 'no_such_module_plbench'"
    # A standard-library module this platform has not got is the solution's problem too.
    windows_only = run("import winreg\ndef f():\n    return 1\n", [()])
    assert windows_only == SandboxResult(
        "compile_error", [], "module raised ModuleNotFoundError: No module named 'winreg'"
    )


# The sandbox as it once broke: the child's import system found no standard library.
NO_STANDARD_LIBRARY = "import sys\nsys.path[:] = []\n"


def test_a_child_that_cannot_import_the_standard_library_is_retried_then_fails_the_caller(caplog):
    at_load = NO_STANDARD_LIBRARY + "import heapq\ndef f(x):\n    return x\n"
    in_a_case = NO_STANDARD_LIBRARY + "def f(x):\n    import bisect\n    return x\n"
    for code, module in ((at_load, "heapq"), (in_a_case, "bisect")):
        with pytest.raises(SandboxEnvironmentError, match=f"standard library's '{module}'.* in 2 attempts"):
            run(code, [(1,)])
    retries = [r.getMessage() for r in caplog.records if r.name == "plbench.sandbox"]
    assert retries == [
        f"sandbox child could not import the standard library's {module!r} (attempt {k})"
        for module in ("heapq", "bisect")
        for k in (1, 2)
    ]
    assert sandbox_children() == []


def test_unsupported_outputs_are_flagged_per_case():
    code = (
        "class Box:\n"
        "    pass\n"
        "def f(kind):\n"
        "    if kind == 'gen':\n"
        "        return (i for i in range(3))\n"
        "    if kind == 'object':\n"
        "        return [Box()]\n"
        "    return 10 ** 5000\n"
    )
    result = run(code, [("gen",), ("object",), ("bigint",)])
    assert result.status == "ok"
    assert [c.status for c in result.cases] == ["unsupported_output"] * 3
    assert result.cases[0].detail == "generator: cannot encode a value of type generator"
    assert result.cases[1].detail == "list: cannot encode a value of type Box"
    assert result.cases[2].detail.startswith("int: Exceeds the limit (4300 digits)")


def test_a_result_of_more_items_than_its_bytes_allow_is_refused_before_it_is_encoded():
    limits = SandboxLimits(max_output_bytes=1000)
    code = "def f(n):\n    return [[i] for i in range(n)]\n"
    # 2 items a one-element list: 250 hold 500 items and might fit, so they are encoded and measured; 251 cannot.
    fits, measured, counted = run(code, [(20,), (250,), (251,)], limits=limits).cases
    assert (fits.status, fits.value) == ("ok", [[i] for i in range(20)])
    message = {"kind": "case", "index": 1, "status": "ok", "value": [[i] for i in range(250)]}
    size = len(json.dumps({**message, "detail": "", "mutated": False})) + 1  # and the line's newline
    assert (measured.status, measured.detail) == ("unsupported_output", f"result of {size} bytes exceeds 1000")
    assert size == 1728
    assert (counted.status, counted.detail) == (
        "unsupported_output",
        "result of more than 500 items exceeds 1000 bytes",
    )


def test_child_death_is_reported_as_crashed():
    exited = run("import os\ndef f():\n    os._exit(3)\n", [()])
    assert exited == SandboxResult("crashed", [], "child exited with code 3; after 0/1 cases")
    aborted = run("import os\ndef f(x):\n    if x:\n        os.abort()\n    return x\n", [(0,), (1,)])
    assert aborted == SandboxResult("crashed", [], "child killed by signal SIGABRT; after 1/2 cases")


def test_large_outputs_stream_without_deadlock():
    result = run("def f(n):\n    return list(range(n))\n", [(100_000,)] * 20)
    assert result.status == "ok"
    assert len(result.cases) == 20
    assert all(c.value == list(range(100_000)) for c in result.cases)


def test_run_many_keeps_input_order():
    jobs = [
        ("def f(x):\n    return x * 2\n", "f", [(1,), (2,)]),
        ("def f(:\n", "f", [(1,)]),
        ("def g(s):\n    return s.upper()\n", "g", [("ab",)]),
    ]
    results = run_many(jobs, FAST, workers=2)
    assert [r.status for r in results] == ["ok", "compile_error", "ok"]
    assert [c.value for c in results[0].cases] == [2, 4]
    assert results[2].cases == [CaseOutcome("ok", "AB", "")]


def test_no_sandbox_children_remain():
    run("def f():\n    return 1\n", [()])
    assert sandbox_children() == []
    assert os.getpid() not in sandbox_children()


def test_after_max_case_timeouts_the_remaining_cases_are_reported_unrun():
    code = "def f(x):\n    while x:\n        pass\n    return x\n"
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=20.0, case_seconds=0.2, max_case_timeouts=2)
    result = run_reference(code, "f", [(0,), (1,), (0,), (1,), (0,), (1,)], limits)
    assert result.status == "ok"
    budget = CaseOutcome("timeout", None, "case exceeded 0.2s of CPU time")
    unrun = CaseOutcome("timeout", None, "not run: 2 earlier cases exceeded their CPU budget")
    assert result.cases == [CaseOutcome("ok", 0, ""), budget, CaseOutcome("ok", 0, ""), budget, unrun, unrun]


def test_a_case_budget_counts_cpu_time_so_waiting_does_not_use_it_up():
    """The fate of a case must not depend on how busy the machine is: time spent not running
    (here: asleep, as on a loaded machine) does not count against the case."""
    code = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"
    result = run_reference(code, "f", [(0.6,), (0.0,)], SandboxLimits(case_seconds=0.3))
    assert result.cases == [CaseOutcome("ok", 0.6, ""), CaseOutcome("ok", 0.0, "")]
    assert result.cases[0].wall_seconds >= 0.6 > 0.3 > result.cases[0].cpu_seconds
    spinning = run_reference("def f():\n    while True:\n        pass\n", "f", [()], SandboxLimits(case_seconds=0.3))
    assert spinning.cases == [CaseOutcome("timeout", None, "case exceeded 0.3s of CPU time")]


@needs_root  # to become another user for the test
def test_without_root_the_limits_and_guards_still_hold(sentinel):
    """Not root: no namespace and no uid change, as documented; the guards and limits remain."""
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(CHECKOUT)!r})\n"
        "from plbench.sandbox import run_reference\n"
        'code = \'import posix, threading\\ndef f(how, path):\\n    if how == "thread":\\n'
        '        threading.Thread(target=print).start()\\n    return posix.system(f"echo x > {path}")\\n\'\n'
        f"result = run_reference(code, 'f', [('thread', ''), ('system', {TARGETS[0]!r})])\n"
        "print(json.dumps([result.status, [c.detail for c in result.cases]]))\n"
    )
    nobody = 65534
    out = subprocess.run([sys.executable, "-c", script], user=nobody, group=nobody, capture_output=True, text=True)
    assert json.loads(out.stdout) == [
        "ok",
        ["RuntimeError: can't start new thread", "SandboxDenied: os.system is not allowed in the sandbox"],
    ], out.stderr
    assert not Path(TARGETS[0]).exists() and sentinel.read_text() == "mine"
