"""Sandbox throughput: MBPP+-shaped jobs (one child per task, ~100 cases each) per second.

    python bench/sandbox_throughput.py [CHECKOUT ...]

Each checkout's `plbench.sandbox` (default: this one) runs the same jobs in a fresh
interpreter, alternating, so a change is measured against its baseline in the same run
(`python bench/sandbox_throughput.py /work/main .` for before and after). A bare interpreter
start per task (no sandbox) is printed as the floor.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

TASKS, CASES, ROUNDS, WORKERS = 60, 100, 3, 2
CODE = "def f(xs, k):\n    return sorted(x * k for x in xs)[:5]\n"

_RUN = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from plbench.sandbox import SandboxLimits, run_many
jobs = [(sys.argv[2], "f", [(list(range(i, i + 20)), j) for j in range(int(sys.argv[4]))])
        for i in range(int(sys.argv[3]))]
start = time.perf_counter()
results = run_many(jobs, SandboxLimits(), workers=int(sys.argv[5]))
seconds = time.perf_counter() - start
assert all(r.status == "ok" and len(r.cases) == int(sys.argv[4]) for r in results), results[0]
print(json.dumps(seconds))
"""

_BARE = """
import json, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
def one(_):
    subprocess.run([sys.executable, "-S", "-P", "-B", "-c", "pass"], check=True)
start = time.perf_counter()
with ThreadPoolExecutor(int(sys.argv[2])) as pool:
    list(pool.map(one, range(int(sys.argv[1]))))
print(json.dumps(time.perf_counter() - start))
"""


def _timed(args: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    checkouts = [str(Path(p).resolve()) for p in (sys.argv[1:] or ["."])]
    seconds: dict[str, list[float]] = {c: [] for c in checkouts}
    bare = []
    for _ in range(ROUNDS):
        bare.append(_timed([_BARE, str(TASKS), str(WORKERS)]))
        for checkout in checkouts:
            seconds[checkout].append(_timed([_RUN, checkout, CODE, str(TASKS), str(CASES), str(WORKERS)]))
    print(f"{TASKS} tasks x {CASES} cases, {WORKERS} workers, median of {ROUNDS} rounds")
    floor = statistics.median(bare)
    print(f"  bare interpreter starts      {floor:6.2f} s  {TASKS / floor:7.1f} tasks/s")
    for checkout, runs in seconds.items():
        median = statistics.median(runs)
        rate = TASKS / median
        print(f"  {checkout:28s} {median:6.2f} s  {rate:7.1f} tasks/s  {TASKS * CASES / median:8.0f} cases/s")


if __name__ == "__main__":
    main()
