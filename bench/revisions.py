"""Timing the same work under two revisions of the code in one run: a baseline revision exported from git
beside this checkout, each run in its own Python process importing one revision's `plbench`.

A bench script calls itself as the child (`child_argv`), with PYTHONPATH set to one revision's root; the
child writes its outputs to a pickle, which the bench compares between revisions. CPU counts the child
and the PostgreSQL server (its backends included) whose data folder is named, since the stage's work is
split between them.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def export_revision(ref: str, into: Path) -> Path:
    """The tree of `ref` (e.g. `main`) written under `into`, read with `git archive` (no branch, no worktree)."""
    target = into / f"rev-{ref.replace('/', '_')}"
    target.mkdir(parents=True)
    archive = into / "rev.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), ref], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    archive.unlink()
    return target


def server_cpu(server_dir: Path) -> float:
    """CPU seconds the PostgreSQL server of `server_dir` has used: its postmaster, the backends alive and
    those it has reaped (a session's backend ends with its connection)."""
    total = 0.0
    for proc in psutil.process_iter(["cmdline"]):
        if str(server_dir) in (proc.info["cmdline"] or []):
            for member in (proc, *proc.children(recursive=True)):
                with contextlib.suppress(psutil.Error):
                    t = member.cpu_times()
                    total += t.user + t.system + t.children_user + t.children_system
    return total


def run_child(root: Path, script: Path, argv: list[str], server_dir: Path) -> float:
    """Run `script argv` importing the code under `root`; the server's CPU seconds meanwhile."""
    before = server_cpu(server_dir)
    subprocess.run([sys.executable, str(script), *argv], env=dict(os.environ, PYTHONPATH=str(root)), check=True)
    return server_cpu(server_dir) - before


OUT = "{out}"  # in a child's argv: the pickle it writes its outputs to


def revision_runs(baseline: str, rounds: int, script: Path, argv: list[str], server_dir: Path):
    """The baseline revision's child (`script argv`, importing its exported tree) and this checkout's,
    once a round each, rounds alternating which goes first: yields (round, label, the child's outputs,
    the server's CPU seconds meanwhile)."""
    with scratch() as tmp:
        roots = {baseline: export_revision(baseline, Path(tmp)), "this checkout": ROOT}
        out = Path(tmp) / "out.pkl"
        argv = [str(out) if a == OUT else a for a in argv]
        for r in range(rounds):
            for label in list(roots)[:: 1 if r % 2 == 0 else -1]:
                server = run_child(roots[label], script, argv, server_dir)
                yield r + 1, label, pickle.loads(out.read_bytes()), server


def scratch() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="plbench-bench-")


def server_uri(data_dir: Path) -> str:
    """The URI of the embedded server in `data_dir` (started if it is not running), for the children."""
    import pgserver

    data_dir.parent.mkdir(parents=True, exist_ok=True)  # a fresh checkout has no .cache yet
    return pgserver.get_server(str(data_dir), cleanup_mode=None).get_uri()
