"""Scale-out on existing engines: the graph on dagster-celery workers with a Redis broker gives the
in-process build's release byte for byte; run and event storage on PostgreSQL is shared by processes;
the README's Kubernetes run configuration is valid for dagster-k8s's executor."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipelines.cli import execute, report
from pipelines.stages import is_shard_step, step_stage
from plbench.release_report import RUN_MEASURED
from tests.conftest import REPO, fixture_config
from tests.helpers import stop

pytestmark = pytest.mark.scale
REDIS_SERVER = Path("/usr/bin/redis-server")
WORKERS = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{process.args[0]} exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """Debian's redis-server on 127.0.0.1 on a free port, nothing persisted."""
    if not REDIS_SERVER.exists():
        pytest.skip(f"{REDIS_SERVER} is absent (Debian's redis-server; .ci/run installs it)")
    port = _free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [str(REDIS_SERVER), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, server)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(server)


def _release_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_celery_build_on_two_workers_gives_the_in_process_release_byte_for_byte(
    fixture_build, redis_url, tmp_path_factory, monkeypatch
):
    config, _ = fixture_build
    fresh = {name: tmp_path_factory.mktemp(f"celery-{name}") for name in ("cache", "out", "normalized", "validation")}
    celery = config.with_(
        cache_dir=fresh["cache"],
        out_dir=fresh["out"],
        normalized_dir=fresh["normalized"],
        validation_dir=fresh["validation"],
        executor="celery",
        celery_broker=redis_url,
        task_shards=3,  # the sharded stages' shards are steps the workers split (fewer than the 8 by default)
    )
    folder = tmp_path_factory.mktemp("celery")
    settings = folder / "settings.json"
    settings.write_text(json.dumps(celery.to_settings()))
    monkeypatch.setenv("PLBENCH_SETTINGS", str(settings))  # this process and every worker read the same settings
    (folder / "dagster_celery_config.py").write_text(f"broker_url = {redis_url!r}\nresult_backend = {redis_url!r}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)])}
    (folder / "dagster").mkdir()
    instance = dg.DagsterInstance.local_temp(str(folder / "dagster"), overrides={"telemetry": {"enabled": False}})
    logs = [(folder / f"worker{i}.log").open("w") for i in range(WORKERS)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "dagster_celery.app", "worker", "--prefetch-multiplier=1"]
            + ["--concurrency=1", "--loglevel=INFO", "-Q", "dagster", "-n", f"plbench{i}@%h"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the worker and its pool stop together
        )
        for i, log in enumerate(logs)
    ]
    try:
        result = execute(celery, instance=instance)
    finally:
        for worker in workers:
            stop(worker, group=True)
    texts = [(folder / f"worker{i}.log").read_text() for i in range(WORKERS)]
    assert report(result) == 0, texts[0][-3000:]
    assert result.dagster_run.job_name == "rebuild_release"
    # Both workers took steps: each logs the tasks it received.
    received = [len(re.findall(r"Task execute_plan\[[^]]+\] received", text)) for text in texts]
    assert all(n > 0 for n in received) and sum(received) == len(
        {e.step_key for e in result.all_events if e.is_step_success}
    ), received
    # MBPP's test cases and replay ran as 3 shards each, steps which both workers took
    shard_steps = [e for e in result.all_events if e.is_step_start and is_shard_step(e.step_key)]
    assert {step_stage(e.step_key) for e in shard_steps} == {
        "mbpp_test_cases",
        "replay_validation_oracle",
        "replay_validation_postgres",
    }
    assert len(shard_steps) == 9 and len({e.pid for e in shard_steps}) == WORKERS
    # validation reports hold no timings: each stage's report is the same for the same inputs
    assert _release_files(celery.validation_dir / "t1") == _release_files(config.validation_dir / "t1")
    in_process, on_workers = _release_files(config.out_dir / "t1"), _release_files(celery.out_dir / "t1")
    assert sorted(on_workers) == sorted(in_process)
    differing = sorted(name for name in in_process if in_process[name] != on_workers[name])
    assert set(differing) <= {"manifest.json", *RUN_MEASURED} and "manifest.json" in differing, differing
    # the only differences: when each build wrote its release, and the plots of the run's own timings
    manifests = [json.loads(files.pop("manifest.json")) for files in (in_process, on_workers)]
    assert manifests[0].pop("built_at") != manifests[1].pop("built_at")
    for manifest in manifests:
        assert set(RUN_MEASURED) <= set(manifest["report"])
        manifest["report"] = {k: v for k, v in manifest["report"].items() if k not in RUN_MEASURED}
    assert manifests[0] == manifests[1]


POSTGRES_YAML = REPO / "dagster.postgres.yaml"


def test_run_and_event_storage_on_postgres_is_shared_by_processes(tmp_path_factory, pg_engine, tmp_path, monkeypatch):
    """The documented dagster.yaml variant on the project's pgserver: a run one process records, another reads."""
    import psycopg

    config = fixture_config(tmp_path_factory, pg_engine)
    database = f"plbench_dagster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_engine._dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    try:
        # dagster-postgres speaks psycopg2's dialect; SQLAlchemy 2.1 takes a bare postgresql:// for psycopg 3
        url = re.sub(r"postgresql://([^/]*)/[^?]*", rf"postgresql+psycopg2://\g<1>/{database}", pg_engine._dsn)
        monkeypatch.setenv("PLBENCH_DAGSTER_PG_URL", url)
        home = tmp_path / "home"
        home.mkdir()
        shutil.copyfile(POSTGRES_YAML, home / "dagster.yaml")
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
            result = execute(config.with_(cache_dir=tmp_path / "cache"), [["mbpp_raw"]], instance=instance, quiet=True)
            assert result.success
        reader = (
            "import dagster as dg\n"
            "with dg.DagsterInstance.get() as i:\n"
            "    [run] = i.get_runs()\n"
            "    event = i.get_latest_materialization_event(dg.AssetKey('mbpp_raw'))\n"
            "    print(run.run_id, run.status.value, event.run_id)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", reader],
            env={**os.environ, "DAGSTER_HOME": str(home)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert out == [result.run_id, "SUCCESS", result.run_id]
    finally:
        with psycopg.connect(pg_engine._dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {database} WITH (FORCE)")


def _readme_block(title: str) -> dict:
    """The YAML block that follows `title` in the README."""
    text = (REPO / "README.md").read_text()
    block = re.search(re.escape(title) + r".*?```yaml\n(.*?)```", text, re.S)
    assert block, f"README has no yaml block after {title!r}"
    return yaml.safe_load(block.group(1))


def test_the_readme_kubernetes_run_config_fits_the_k8s_executor_schema():
    from dagster._config import validate_config
    from dagster_k8s import k8s_job_executor

    from pipelines.definitions import build_definitions
    from plbench.config import BuildConfig

    run_config = _readme_block("Kubernetes run configuration")
    schema = k8s_job_executor.config_schema.config_type
    checked = validate_config(schema, run_config["execution"]["config"])
    assert checked.success, [e.message for e in checked.errors]
    assert any("PLBENCH_SETTINGS" in v for v in run_config["execution"]["config"]["env_vars"])
    misspelt = {**run_config["execution"]["config"], "job_namespce": "plbench"}
    assert not validate_config(schema, misspelt).success  # the schema is strict: the check can fail
    job = build_definitions(BuildConfig(executor="k8s")).resolve_job_def("rebuild_release")
    assert job.executor_def.name == "k8s"
