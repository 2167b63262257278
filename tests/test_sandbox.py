"""Tests for plbench.sandbox: real child processes with small limits."""

from __future__ import annotations

import math
import os
import socket
import time
from pathlib import Path

import pytest

from plbench.sandbox import CaseOutcome, SandboxLimits, SandboxResult, run_many, run_reference

FAST = SandboxLimits(cpu_seconds=5, memory_bytes=1 << 30, wall_seconds=10.0, case_seconds=0.5)
ESCAPE_PATH = Path("/tmp/plbench_sandbox_escape_test")


def run(code: str, cases: list[tuple], entry_point: str = "f", limits: SandboxLimits = FAST) -> SandboxResult:
    return run_reference(code, entry_point, cases, limits)


def child_processes() -> list[int]:
    """Pids of any sandbox child still alive on this machine."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"_sandbox_child.py" in cmdline:
                pids.append(int(entry.name))
    return pids


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
    assert result.cases[1].detail == "case exceeded 0.5s"
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
    assert result.cases == [CaseOutcome("timeout", None, "case exceeded 0.5s")] * 2


def test_module_level_hang_hits_the_wall_clock():
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=1.0, case_seconds=0.5)
    start = time.monotonic()
    result = run("while True:\n    pass\ndef f():\n    return 1\n", [()], limits=limits)
    assert time.monotonic() - start < 5
    assert result == SandboxResult("timeout", [], "wall clock limit of 1.0s exceeded")
    assert child_processes() == []


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
    assert child_processes() == []


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
        CaseOutcome("error", None, "SandboxDenied: socket.create_connection is not allowed in the sandbox"),
        CaseOutcome("error", None, "SandboxDenied: socket.connect is not allowed in the sandbox"),
    ]


def test_writes_outside_the_work_dir_are_refused_inside_allowed():
    ESCAPE_PATH.unlink(missing_ok=True)
    code = (
        "import os, pathlib\n"
        "def f(how, path):\n"
        "    if how == 'open':\n"
        "        open(path, 'w').write('x')\n"
        "    elif how == 'pathlib':\n"
        "        pathlib.Path(path).write_text('x')\n"
        "    elif how == 'os.open':\n"
        "        os.open(path, os.O_CREAT | os.O_WRONLY)\n"
        "    else:\n"
        "        open('local.txt', 'w').write('kept')\n"
        "        return open('local.txt').read()\n"
        "    return 'written'\n"
    )
    path = str(ESCAPE_PATH)
    result = run(code, [("open", path), ("pathlib", path), ("os.open", path), ("local", path)])
    assert not ESCAPE_PATH.exists()
    assert result.status == "ok"
    denied = f"SandboxDenied: writing {path!r} outside the sandbox directory"
    assert result.cases == [
        CaseOutcome("error", None, denied),
        CaseOutcome("error", None, denied),
        CaseOutcome("error", None, denied),
        CaseOutcome("ok", "kept", ""),
    ]


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
    assert child_processes() == []
    assert os.getpid() not in child_processes()


def test_cases_past_the_task_budget_are_reported_as_timeouts_without_running():
    code = "import time\ndef f(x):\n    time.sleep(0.3)\n    return x"
    result = run_reference(code, "f", [(i,) for i in range(10)], SandboxLimits(task_seconds=0.5))
    assert result.status == "ok"
    statuses = [c.status for c in result.cases]
    assert statuses[:2] == ["ok", "ok"] and statuses[-1] == "timeout"
    assert "budget" in result.cases[-1].detail
