"""One build at a time per checkout (plbench.buildlock), with a real second process holding the lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import cli
from plbench.buildlock import BuildRunning, build_lock
from plbench.config import BuildConfig

CHECKOUT = Path(__file__).resolve().parents[1]
HOLDER = f"""
import sys
sys.path.insert(0, {str(CHECKOUT)!r})
from pathlib import Path
from plbench.buildlock import build_lock
with build_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds the lock of `tmp_path / "cache"`; yields it."""
    script = tmp_path / "other_build.py"
    script.write_text(HOLDER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "cache")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "held\n"
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def builds(tmp_path, monkeypatch):
    """The CLI on a checkout under tmp_path; `build` and `execute` only record that a build ran."""
    runs = []
    monkeypatch.setattr(
        cli,
        "_config",
        lambda args: BuildConfig(cache_dir=tmp_path / "cache", out_dir=tmp_path / "releases", version=args.version),
    )
    monkeypatch.setattr(cli, "execute", lambda config, *args, **kwargs: runs.append(config.version))
    monkeypatch.setattr(cli, "build", lambda config, *args, **kwargs: runs.append(config.version) or 0)
    monkeypatch.setattr(cli, "report", lambda result, output="lines": 0)
    return runs


def test_a_second_build_is_refused_naming_the_running_one_and_runs_once_it_ends(holder, builds, tmp_path, capsys):
    assert cli.main(["build"]) == 2
    message = capsys.readouterr().err
    assert message.startswith(f"plbench: another build is running in this checkout: pid {holder.pid}, ")
    assert f"`{tmp_path / 'other_build.py'} {tmp_path / 'cache'}`, started 20" in message
    assert f"(lock {tmp_path / 'cache' / 'build.lock'})" in message
    assert builds == []
    holder.stdin.close()  # the other build ends
    holder.wait()
    assert cli.main(["build"]) == 0
    assert builds == [None]


def test_a_killed_build_leaves_no_stale_lock(holder, tmp_path):
    with pytest.raises(BuildRunning):
        with build_lock(tmp_path / "cache"):
            pass
    holder.kill()
    holder.wait()
    with build_lock(tmp_path / "cache"):
        assert (tmp_path / "cache" / "build.lock").read_text().startswith('{"pid": ')


def test_an_existing_version_is_refused_before_building(builds, tmp_path, capsys):
    (tmp_path / "releases" / "0.1.0-x").mkdir(parents=True)
    for stored in ("mbpp_raw", "mbpp_tasks"):  # what `validate --stage replay` reads
        (tmp_path / "cache" / "dagster-storage" / stored).mkdir(parents=True)
    assert cli.main(["build", "--version", "0.1.0-x"]) == 2
    assert cli.main(["validate", "--stage", "replay", "--version", "0.1.0-x"]) == 2
    refusal = f"plbench: release {tmp_path / 'releases' / '0.1.0-x'} already exists: pass a new --version\n"
    assert capsys.readouterr().err == refusal * 2
    assert builds == []
    assert cli.main(["build", "--version", "0.1.0-y"]) == 0
    assert builds == ["0.1.0-y"]
