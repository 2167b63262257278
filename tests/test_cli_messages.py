"""What the CLI prints: one line per stage, the final lines, and on failure the stage, the project's own
message and a hint; real runs of the asset graph on a miniature mirror."""

import io
import json
import re
import subprocess
import sys
from types import SimpleNamespace

import dagster as dg
import pytest

from pipelines.cli import execute, final_lines, main, parser, report
from pipelines.definitions import build_definitions
from pipelines.freshness import build_plan
from pipelines.progress import HINTS, Progress, figures, hint_for, progress_bar
from plbench.config import BuildConfig
from plbench.paths import project_root
from tests.fixtures import MBPP, write_mirror

ROOT = project_root()
MBPP_ONLY = [["mbpp_raw"], ["mbpp_plus_raw"], ["mbpp_test_cases"]]


@pytest.fixture
def instance(tmp_path):
    (tmp_path / "dagster").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp_path / "dagster"), overrides={"telemetry": {"enabled": False}}) as inst:
        yield inst


def _config(tmp_path, **changes) -> BuildConfig:
    root = tmp_path / "mirror"
    return BuildConfig(
        raw_dir=root,
        catalog=write_mirror(root),
        cache_dir=tmp_path / "cache",
        download_dir=tmp_path / "downloads",
        subsets=("mbpp",),
    ).with_(**changes)


@pytest.mark.parametrize(
    ("chain", "hint"),
    [
        (["RawSourceError: mbpp/mbpp.jsonl: downloading x failed", "URLError: <urlopen error refused>"], HINTS[0][1]),
        (["OSError: [Errno -2] Name or service not known"], HINTS[0][1]),
        (["OSError: [Errno 98] Address already in use"], HINTS[1][1]),
        (["OSError: [Errno 28] No space left on device"], HINTS[2][1]),
        (["ValueError: bad record"], None),
    ],
)
def test_each_hint_answers_its_cause(chain, hint):
    assert hint_for(chain) == hint


def test_stage_figures_read_the_metadata_every_stage_attaches():
    two = {"count_in": 10, "count_out": 8, "rejected": {"a": 1, "b": 1}}
    assert figures(two) == "10 in, 8 out, 2 rejected (a 1, b 1)"
    assert figures({"count_in": 5, "count_out": 5, "rejected_tasks": {}}) == "5 in, 5 out"
    many = {"w": 4, "x": 3, "y": 2, "z": 1}
    assert figures({"rejected": many}) == "10 rejected (w 4, x 3, y 2, …)"
    assert figures({"ran": False, "reason": "no Oracle", "count_in": 3, "count_out": 3}) == (
        "not run: no Oracle, 3 in, 3 out"
    )


def test_one_line_per_stage_with_its_figures(tmp_path, instance, capsys):
    result = execute(_config(tmp_path), MBPP_ONLY, instance=instance)
    assert report(result) == 0
    err = capsys.readouterr().err.splitlines()
    assert "  mbpp_raw started" in err and "  mbpp_test_cases started" in err
    ends = [line for line in err if line.startswith("✓ ")]
    assert len(ends) == 3
    raw = next(line for line in ends if line.startswith("✓ mbpp_raw:"))
    counts = f"{len(MBPP) + 1} in, {len(MBPP)} out, 1 rejected"  # the malformed line
    assert re.fullmatch(rf"✓ mbpp_raw: {counts}, \d+\.\d s", raw), raw
    assert not [line for line in err if "DEBUG" in line or "dagster - " in line]  # Dagster's own log stays out


def test_quiet_and_json_print_only_the_outcome(tmp_path, instance, capsys):
    result = execute(_config(tmp_path), MBPP_ONLY, instance=instance, quiet=True)
    assert report(result, "json") == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    outcome = json.loads(captured.out)
    assert outcome["ok"] is True and outcome["failed"] == [] and outcome["job"] == "rebuild_release"
    assert final_lines(outcome) == ["plbench: rebuild_release done; no release written (add --version V to write one)"]


def test_offline_the_last_line_names_the_stage_the_message_and_the_hint(tmp_path, instance, capsys):
    offline = _config(tmp_path, raw_dir=None)  # the fixture catalog's URLs point at a closed local port
    result = execute(offline, MBPP_ONLY, instance=instance)
    assert report(result) == 1
    last = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert last.startswith("plbench: mbpp_raw failed: mbpp/mbpp.jsonl: downloading http://127.0.0.1:9/mbpp/mbpp.jsonl")
    assert last.endswith("(hint: offline? set PLBENCH_RAW_DIR to a local mirror of the raw sources)")
    assert report(result, "json") == 1
    [failure] = json.loads(capsys.readouterr().out)["failed"]
    assert failure["stage"] == "mbpp_raw" and failure["hint"] == HINTS[0][1]


def test_the_final_lines_say_where_the_release_is_and_what_it_holds():
    summary = {
        "ok": True,
        "failed": [],
        "job": "rebuild_release",
        "release": "/r/t1",
        "version": "t1",
        "subsets": {
            "mbpp": {"input": 12, "released": {"oracle": 8, "postgres": 8}, "rejected": {"a": 3, "b": 1}},
            "spider2": {"input": 4, "released": {}, "rejected": {}},
        },
    }
    assert final_lines(summary) == [
        "release t1 written to /r/t1",
        "  mbpp: 12 in; released oracle 8, postgres 8; 4 rejected",
        "  spider2: 4 in; released none; 0 rejected",
    ]
    rerun = final_lines(dict(summary, unchanged=True))[0]
    assert rerun == "release t1 unchanged (this build made the very tables it holds) in /r/t1"
    failed = {"failed": [{"stage": "a", "message": "first", "hint": None}, {"stage": "b", "message": "x", "hint": "h"}]}
    assert final_lines(failed) == ["plbench: b failed: x (hint: h)", "plbench: a failed: first"]


def test_quiet_and_json_are_options_of_build_and_validate(capsys):
    assert parser().parse_args(["build", "--json"]).json is True
    assert parser().parse_args(["validate", "--stage", "replay", "--quiet"]).quiet is True
    with pytest.raises(SystemExit):
        main(["build", "--json", "--quiet"])
    assert "not allowed with argument" in capsys.readouterr().err


def _event(kind: str, partition: str | None = None):
    materialization = SimpleNamespace(metadata={}, partition=partition)
    return SimpleNamespace(
        event_type_value=kind,
        step_key="normalized_databases_oracle",
        event_specific_data=SimpleNamespace(materialization=materialization),
    )


def _stage_output(tty: bool) -> str:
    stream = io.StringIO()
    progress = Progress(stream, tty, partitions=2)
    kinds = ["STEP_START", "ASSET_MATERIALIZATION", "ASSET_MATERIALIZATION", "STEP_SUCCESS"]
    for kind, partition in zip(kinds, [None, "spider1.a", "spider1.b", None]):
        progress.on_event(_event(kind, partition))
    return stream.getvalue()


def test_a_partitioned_stage_shows_a_bar_of_its_databases_on_a_terminal_only():
    assert progress_bar(0, 4, "databases") == "[------------------------] 0/4 databases"
    assert progress_bar(3, 4, "databases") == "[##################------] 3/4 databases"
    assert progress_bar(7, 0, "databases") == "7 databases"  # no known total: the count alone
    shown = _stage_output(tty=True)
    assert "\r\033[K  normalized_databases_oracle [############------------] 1/2 databases" in shown
    assert "[########################] 2/2 databases" in shown
    assert re.search(r"\r\033\[K✓ normalized_databases_oracle: 2 databases, [0-9.]+ s\n$", shown)
    piped = _stage_output(tty=False)
    assert "[" not in piped and "\r" not in piped
    assert piped.splitlines()[0] == "  normalized_databases_oracle started"


def test_stages_running_side_by_side_share_the_pending_line_and_each_ends_on_its_own_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the terminal's width (shutil.get_terminal_size)
    stream = io.StringIO()
    progress = Progress(stream, tty=True, partitions=2)
    progress.on_event(_event("STEP_START"))
    progress.on_event(SimpleNamespace(event_type_value="STEP_START", step_key="mbpp_test_cases"))
    progress.on_event(_event("ASSET_MATERIALIZATION", "spider1.a"))
    assert stream.getvalue().endswith(
        "\r\033[K  normalized_databases_oracle [############------------] 1/2 databases · mbpp_test_cases …"
    )
    progress.on_event(SimpleNamespace(event_type_value="STEP_SUCCESS", step_key="mbpp_test_cases"))
    ended = stream.getvalue().split("✓ mbpp_test_cases: ")[1]
    assert re.fullmatch(r"[0-9.]+ s\n\r\033\[K  normalized_databases_oracle \[#+-+\] 1/2 databases", ended)
    monkeypatch.setenv("COLUMNS", "20")  # a line wider than the terminal would wrap, and could not be rewritten
    progress.on_event(SimpleNamespace(event_type_value="STEP_START", step_key="mbpp_signatures"))
    assert stream.getvalue().endswith("\r\033[K  normalized_databa")  # 19 characters


def test_without_a_spider_subset_the_database_stages_are_not_outdated_and_stored_stages_are_fresh(tmp_path, instance):
    config = _config(tmp_path)
    assert execute(config, MBPP_ONLY, instance=instance).success
    outdated = {k.to_user_string() for k in build_plan(build_definitions(config), instance, []).outdated}
    assert not outdated & {"mbpp_raw", "mbpp_plus_raw", "mbpp_test_cases"}  # stored, code and inputs unchanged
    assert not outdated & {"normalized_databases_postgres", "normalized_databases_oracle"}  # no partition
    assert {"mbpp_signatures", "mbpp_tasks", "normalization_report", "release"} <= outdated  # never built


def test_a_stage_reporting_its_own_units_shows_a_bar_of_them_on_a_terminal(monkeypatch, tmp_path):
    """Through a real run on an instance with the project's dagster.yaml: an asset's stage (each_database)
    reports its databases done, stage_progress logs them, the progress logger's handler turns them into the
    stage line's bar; other steps' lines are not. The instance keeps no debug lines (the IO manager's)."""
    import logging

    import dagster as dg
    import yaml

    from pipelines import progress as progress_module
    from pipelines.progress import _EventHandler, stage_progress
    from plbench.paths import project_root
    from plbench.procedures.parallel import each_database

    monkeypatch.setattr(progress_module, "PROGRESS_EVERY_S", 0.0)
    stream = io.StringIO()
    shown = Progress(stream, tty=True)

    @dg.logger
    def to_stream(_init_context) -> logging.Logger:
        logger = logging.Logger("test.progress", level=logging.DEBUG)
        logger.addHandler(_EventHandler(shown))
        return logger

    @dg.asset
    def seeded(context: dg.AssetExecutionContext) -> list[int]:
        with stage_progress(context):
            return each_database(lambda n: n * n, [1, 2, 3], workers=2)

    job = dg.define_asset_job("seeding", selection=[seeded])
    defs = dg.Definitions(assets=[seeded], jobs=[job], loggers={"to_stream": to_stream})
    settings = yaml.safe_load((project_root() / "dagster.yaml").read_text(encoding="utf-8"))
    with dg.DagsterInstance.local_temp(str(tmp_path), overrides=settings) as instance:
        result = defs.resolve_job_def("seeding").execute_in_process(
            run_config={"loggers": {"to_stream": {}}}, instance=instance
        )
        stored = [(e.level, e.user_message) for e in instance.all_logs(result.run_id) if not e.is_dagster_event]
    assert result.success and result.output_for_node("seeded") == [1, 4, 9]
    assert (logging.INFO, "progress 3/3 databases") in stored
    assert not [message for level, message in stored if level < logging.INFO]
    text = stream.getvalue()
    for done in (1, 2, 3):
        assert f"\r\033[K  seeded [{'#' * (8 * done)}{'-' * (24 - 8 * done)}] {done}/3 databases" in text
    assert re.search(r"\r\033\[K✓ seeded: [0-9.]+ s\n$", text)
    piped = Progress(io.StringIO(), tty=False)
    piped.on_event(SimpleNamespace(event_type_value="STEP_START", step_key="seeded"))
    piped.on_message("seeded", "progress 1/3 databases")
    piped.on_message("other", "progress 1/3 databases")
    assert piped.stream.getvalue() == "  seeded started\n"


def test_sqlglots_command_fallback_warnings_stay_off_the_terminal(caplog):
    import sqlglot

    # What the Spider schemas' unchecked foreign keys give (imported above: pipelines.definitions).
    sqlglot.parse("ALTER TABLE a ADD CONSTRAINT f FOREIGN KEY (x) REFERENCES b (y) ENABLE NOVALIDATE", read="oracle")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("sqlglot")] == []


def test_the_command_runs_the_exit_handlers_and_skips_the_teardown(tmp_path):
    """`plbench` (pipelines.cli:run) returns the command's code with its output flushed and the exit handlers
    run, and skips the interpreter's teardown (a global's finalizer never runs)."""
    script = (
        "import atexit, sys\n"
        "class Teardown:\n"
        "    def __del__(self, open=open):\n"
        "        open(self.path, 'w').close()\n"
        "kept = Teardown()\n"
        "kept.path = sys.argv[1] + '/teardown'\n"
        "atexit.register(lambda: open(sys.argv[1] + '/exit_handler', 'w').close())\n"
        "from pipelines.cli import run\n"
        "print('before', end='')\n"
        "run(['diff', sys.argv[1] + '/a', sys.argv[1] + '/b'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stdout == "before"
    assert done.stderr.startswith("plbench: ") and "/a" in done.stderr
    assert (tmp_path / "exit_handler").exists()
    assert not (tmp_path / "teardown").exists()
