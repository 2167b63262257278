"""Wall time and memory of a full rebuild from raw sources, per stage; then a rebuild in which nothing
changed, and single-stage reruns, against same-run baselines.

    PLBENCH_RAW_DIR=../shared/raw_sources python bench/rebuild_time.py [--subsets mbpp,mbpp_plus]
        [--compare-steps-at-once 1,2,1,2]

Runs the real job in-process against a throw-away Dagster instance and release folder (the
PostgreSQL server is started or reused as in a normal build), `steps_at_once` steps at a time (the
settings'; pipelines/step_threads.py):
1. baseline: a run of `mbpp_raw` alone, what any run costs before its stages do anything;
2. the full rebuild, every stage, with each stage's seconds (Dagster's step times), the CPU
   seconds and the peak resident memory while it ran (sampled every 0.2 s from /proc, the
   proportional size every 2 s) of this process and of its tree: its descendants and the
   PostgreSQL server it uses with that server's backends (with steps side by side, a stage's figures
   count the stage running beside it too), and when its first step began and its last ended (seconds
   after the run's first step began); then the largest stored stage values;
3. `plbench build` again with nothing changed (pipelines/freshness.py: nothing should run);
4. reruns of `replay_validation_postgres` and of `normalized_databases_oracle` (every database)
   from the stored upstream values;
5. `plbench build` after replay's value was recorded as made by other code, as after a fix that changes no
   output: it must run the replay alone (what follows it waits on its value: pipelines/freshness.py), so
   its baseline is step 4's replay rerun.
With `--compare-steps-at-once`, only full rebuilds from nothing, each in a fresh interpreter (`plbench build`)
with a cache, folders, PostgreSQL server and Dagster instance of its own, one per value given, in that order:
a baseline measured in the same run, as this machine's run-to-run spread (±15 s) is larger than what most
changes save, and two builds in one process would not start alike.
Goals (issue 12): full ≤ 240 s, no-op ≤ 30 s, one stage ≤ 20 s, Oracle emission ≤ 20 s, peak ≤ 2 GB.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import dagster as dg
from dagster._core.definitions.data_version import CODE_VERSION_TAG

from pipelines.cli import build, execute, report
from pipelines.stages import seconds_by_stage, stage_intervals
from plbench.config import BuildConfig
from plbench.paths import project_root

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as `python bench/...`

from bench.proc_stats import processes, proportional, resident  # noqa: E402


class MemorySampler(threading.Thread):
    """Every `interval` seconds: resident memory of this process and of its whole process tree (summed
    resident sizes), and the CPU seconds the tree has used so far (what a stage costs whatever else the
    machine runs); every `proportional_every` samples also the tree's summed proportional set sizes, which
    the kernel counts by walking every page table of the tree: 32 ms a sample in a build (44 CPU-s of a
    273 s cold build, taken from the build it measured, at five a second)."""

    def __init__(self, server_dir: Path, interval: float = 0.2, proportional_every: int = 10):
        super().__init__(daemon=True)
        self.server_dir, self.interval, self.samples, self.stopped = str(server_dir), interval, [], threading.Event()
        self.proportional_every = proportional_every

    def run(self) -> None:
        n = 0
        while not self.stopped.wait(self.interval):
            with_proportional, n = n % self.proportional_every == 0, n + 1
            self.samples.append((time.time(), *tree_sample(self.server_dir, with_proportional)))

    def peak_between(self, start: float, end: float) -> tuple[int, int, int]:
        """The largest (own, tree, tree proportional) bytes sampled between two times (0: none sampled)."""
        inside = [sizes for t, *sizes, _ in self.samples if start <= t <= end]
        return tuple(max((s[i] for s in inside if s[i] is not None), default=0) for i in range(3))

    def cpu_between(self, start: float, end: float) -> float:
        inside = [cpu for t, *_, cpu in self.samples if start <= t <= end]
        return inside[-1] - inside[0] if inside else 0.0


def pss_text(gib: float) -> str:
    """A peak proportional size as printed: `–` where no proportional sample fell in the span."""
    return f"{gib:5.2f} GB" if gib else "    – GB"


def _server_pid(server_dir: str) -> int | None:
    """The PostgreSQL server's postmaster, from its data folder's postmaster.pid (None: not running). Not
    pgserver's PostmasterInfo, which refuses the file while a starting server has written only part of it."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path(server_dir, "postmaster.pid").read_text().split()[0])
    return None


def tree_sample(server_dir: str, with_proportional: bool = True) -> tuple[int, int, int | None, float]:
    """(this process's resident bytes, its tree's, its tree's proportional or None when not asked, the
    tree's CPU seconds). The tree is this process, its descendants (sandbox children, worker processes)
    and the PostgreSQL server whose data folder is `server_dir` with its backends (pg_ctl detaches it).
    The resident sum counts a page shared between processes (PostgreSQL's shared buffers, a library's
    code) once per process that maps it: an upper bound. The proportional sum (PSS) counts a shared page
    once, split between the processes sharing it: the memory the tree takes. CPU counts the processes
    alive and those their parents have reaped."""
    every = processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in every.items():
        children.setdefault(parent, []).append(pid)
    tree, todo = set(), [os.getpid(), *filter(None, [_server_pid(server_dir)])]
    while todo:
        pid = todo.pop()
        if pid in every and pid not in tree:
            tree.add(pid)
            todo += children.get(pid, [])
    sizes = {pid: resident(pid) for pid in tree}
    pss = sum(proportional(pid) for pid in tree) if with_proportional else None
    return sizes[os.getpid()], sum(sizes.values()), pss, sum(every[pid][1] for pid in tree)


def timed(label: str, run, instance: dg.DagsterInstance, sampler: MemorySampler) -> float:
    start = time.perf_counter()
    result = run()
    wall = time.perf_counter() - start
    if result is not None and report(result, "quiet") != 0:
        raise SystemExit(f"{label} failed")
    print(f"\n{label}: {wall:.1f} s wall")
    if result is not None:
        # a task-sharded stage's steps together; in one process they interleave with other stages' steps
        steps = instance.get_run_step_stats(result.run_id)
        stages, seconds = stage_intervals(steps), seconds_by_stage(steps)
        began = min((begin for spans in stages.values() for begin, _ in spans), default=0.0)
        for stage, spans in sorted(stages.items(), key=lambda kv: -seconds[kv[0]]):
            cpu = sum(sampler.cpu_between(begin, end) for begin, end in spans)
            own, tree, pss = (max(p) / 2**30 for p in zip(*(sampler.peak_between(b, e) for b, e in spans)))
            first, last = min(b for b, _ in spans) - began, max(e for _, e in spans) - began
            print(
                f"  {stage:44s} {seconds[stage]:6.1f} s {cpu:6.1f} s CPU  peak {own:5.2f} GB "
                f"(tree {tree:5.2f} GB, PSS {pss_text(pss)})"
                f"  +{first:.0f}–{last:.0f} s"
            )
    return wall


def _checked(code: int, label: str) -> None:
    if code != 0:
        raise SystemExit(f"{label} failed")


def _as_if_made_by_other_code(instance: dg.DagsterInstance, asset: str) -> None:
    """The asset's latest value recorded again under another code version, which a build must run again."""
    [latest] = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
    stored = latest.asset_materialization
    instance.report_runless_asset_event(stored._replace(tags={**stored.tags, CODE_VERSION_TAG: "other code"}))


def _stages_run_since(instance: dg.DagsterInstance, runs: int) -> tuple[int, list[str]]:
    """How many runs started after the first `runs`, and the stages their steps worked for."""
    new = instance.get_runs(limit=instance.get_runs_count() - runs)
    steps = [step for run in new for step in instance.get_run_step_stats(run.run_id)]
    return len(new), sorted(seconds_by_stage(steps))


def stored_sizes(storage: Path, top: int = 8) -> list[tuple[int, str]]:
    """The largest stored stage values (one pickle per asset, a folder per partitioned asset)."""
    sizes = [
        (sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size, p.name)
        for p in storage.iterdir()
    ]
    return sorted(sizes, reverse=True)[:top]


def cold_rebuild(root: Path, subsets: tuple[str, ...] | None, steps_at_once: int, n: int) -> tuple[float, int, int]:
    """(wall seconds, peak resident and peak proportional bytes of its tree) of `plbench build` from nothing in
    a fresh interpreter, with a cache, folders, PostgreSQL server and Dagster instance of its own, as on a fresh
    checkout."""
    home = root / f"cold-{n}"
    settings = {name: str(home / name) for name in ("cache_dir", "out_dir", "normalized_dir", "validation_dir")}
    settings |= {"steps_at_once": steps_at_once, **({"subsets": list(subsets)} if subsets else {})}
    home.mkdir()
    (home / "settings.json").write_text(json.dumps(settings))
    env = dict(os.environ, PLBENCH_SETTINGS=str(home / "settings.json"), DAGSTER_HOME=str(home / "dagster"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project_root()), env.get("PYTHONPATH")]))
    data_dir = BuildConfig(cache_dir=home / "cache_dir").pg_data_dir  # the server the build starts
    sampler = MemorySampler(data_dir)
    sampler.start()
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", BUILD], env=env, check=True, cwd=project_root())
    wall = time.perf_counter() - began
    sampler.stopped.set()
    _, peak, peak_pss = sampler.peak_between(0, time.time())
    _stop_server(data_dir)
    shutil.rmtree(home)
    return wall, peak, peak_pss


BUILD = "from pipelines.cli import run; run(['build', '--quiet'])"  # as the `plbench` command runs it


def _stop_server(data_dir: Path) -> None:
    """Stop a build's PostgreSQL server (builds leave theirs running, for the next one), as pgserver's user."""
    import pgserver
    from pgserver._commands import pg_ctl

    server = pgserver.get_server(str(data_dir), cleanup_mode=None)
    pg_ctl(["-w", "stop", "-m", "fast"], pgdata=server.pgdata, user=server.system_user)


def host_speed() -> float:
    """Seconds a fixed pure-Python loop takes here now, the best of three: on this shared machine it drifted from
    0.51 to 0.92 s between runs, and build times with it, so each build is printed with the figure before it."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        sum(i * i for i in range(10**7))
        best = min(best, time.perf_counter() - began)
    return best


def compare(subsets: tuple[str, ...] | None, settings: list[int]) -> None:
    """Cold full rebuilds, one per entry of `settings` (steps at once), in that order: alternate them (1,2,1,2) so
    the machine's drift falls on both."""
    walls: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, steps_at_once in enumerate(settings):
            speed = host_speed()
            wall, peak, pss = cold_rebuild(Path(tmp), subsets, steps_at_once, n)
            walls.setdefault(steps_at_once, []).append(wall)
            print(
                f"full rebuild from nothing, {steps_at_once} step(s) at once: {wall:.1f} s, "
                f"peak {peak / 2**30:.2f} GB resident (PSS {pss / 2**30:.2f} GB); "
                f"host speed before it: a fixed loop took {speed:.2f} s"
            )
    for steps_at_once, seconds in walls.items():
        print(f"{steps_at_once} step(s) at once: " + ", ".join(f"{w:.1f}" for w in seconds) + " s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subsets", help="comma-separated subsets (default: all)")
    parser.add_argument(
        "--compare-steps-at-once",
        help="instead: cold full rebuilds, each in a fresh interpreter, with these steps at once, e.g. 1,2,1,2",
    )
    args = parser.parse_args()
    subsets = tuple(args.subsets.split(",")) if args.subsets else None
    if args.compare_steps_at_once:
        return compare(subsets, [int(n) for n in args.compare_steps_at_once.split(",")])
    print(f"host speed: a fixed loop took {host_speed():.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = BuildConfig.from_env(out_dir=root / "releases", subsets=subsets)
        sampler = MemorySampler(config.pg_data_dir)
        sampler.start()
        (root / "dagster").mkdir()
        instance = dg.DagsterInstance.local_temp(str(root / "dagster"), overrides={"telemetry": {"enabled": False}})
        baseline = timed(
            "baseline: mbpp_raw alone", lambda: execute(config, [["mbpp_raw"]], instance), instance, sampler
        )
        began = time.time()
        label = f"full rebuild, {config.steps_at_once} step(s) at once"
        full = timed(label, lambda: execute(config, instance=instance), instance, sampler)
        full_peak, full_cpu = sampler.peak_between(began, time.time()), sampler.cpu_between(began, time.time())
        largest = stored_sizes(config.storage_dir)
        print("  largest stored values:", ", ".join(f"{n} {b / 2**20:.0f} MB" for b, n in largest))
        runs = instance.get_runs_count()
        label = "rebuild, nothing changed"
        noop = timed(label, lambda: _checked(build(config, instance, output="quiet"), label), instance, sampler)
        print(f"  runs started by it: {instance.get_runs_count() - runs}")
        spider = {"spider_plsql", "spider2"} & set(config.subsets)  # the database stages need one
        alone = {
            asset: timed(f"{asset} alone", lambda a=asset: execute(config, [[a]], instance), instance, sampler)
            for asset in ("replay_validation_postgres", *(["normalized_databases_oracle"] if spider else []))
        }
        _as_if_made_by_other_code(instance, "replay_validation_postgres")
        runs, label = instance.get_runs_count(), "rebuild after a fix to the replay that changed no value"
        fixed = timed(label, lambda: _checked(build(config, instance, output="quiet"), label), instance, sampler)
        print("  runs started by it: {}; stages they ran: {}".format(*_stages_run_since(instance, runs)))
    sampler.stopped.set()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(
        f"\nfull rebuild {full:.1f} s ({full_cpu:.0f} s CPU; goal ≤ 240), nothing changed {noop:.1f} s (goal ≤ 30), "
        f"baseline run {baseline:.1f} s; after a fix to the replay {fixed:.1f} s "
        f"(its stage alone {alone['replay_validation_postgres']:.1f} s)"
    )
    own, tree, pss = (b / 2**30 for b in full_peak)
    print(
        f"peak memory of the full rebuild (resident sampled every 0.2 s, proportional every 2 s): "
        f"this process {own:.2f} GB resident, "
        f"its tree with the PostgreSQL server {tree:.2f} GB resident, {pss:.2f} GB proportional (goal ≤ 2)"
    )
    print(f"getrusage maxima over the script: this process {peak:.2f} GB, largest child process {children:.2f} GB")


if __name__ == "__main__":
    main()
