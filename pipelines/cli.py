"""`plbench`: rebuild a release, rerun one stage, or open the Dagster UI on the same storage.

Every command runs the asset graph of `pipelines/definitions.py` in-process against
the Dagster instance in `.dagster/` (DAGSTER_HOME), so a stage rerun from the CLI
reuses the upstream values stored by an earlier build, and `plbench dev` shows the
same runs in the UI.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from pipelines.stages import (
    DEFAULT_NEEDS,
    PARTITIONED,
    REBUILD_JOB,
    STAGE_NEEDS,
    STAGES,
    rerun_job,
    stage_assets,
    step_stage,
)
from plbench.config import DIALECT_NAMES, SUBSETS, BuildConfig, NotConfigured
from plbench.paths import project_root

# Dagster settings only the environment holds, for the runs this process and the UI it starts create (a value
# the user set stays). One "materialization planned" event per partitioned asset and run, naming its partitions,
# instead of one per partition: a four-subset build of the mirror wrote 682 of them (325 per database stage),
# the first 4.9 s of its run on the SQLite event log. Dagster's trade-off: a partition of a run that failed shows
# as missing rather than failed; the run and its failed step still show the failure.
DAGSTER_ENVIRONMENT = {"DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "true"}


def dagster_environment() -> None:
    for name, value in DAGSTER_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def dagster_home() -> Path:
    """DAGSTER_HOME (default `.dagster/`) with the project's dagster.yaml; a DAGSTER_HOME the user chose
    keeps its own dagster.yaml (e.g. dagster.postgres.yaml) and gets the project's only when it has none."""
    chosen = os.environ.get("DAGSTER_HOME")
    home = Path(chosen or project_root() / ".dagster")
    home.mkdir(parents=True, exist_ok=True)
    settings = project_root() / "dagster.yaml"
    target = home / "dagster.yaml"
    stale = not target.exists() or (not chosen and target.read_bytes() != settings.read_bytes())
    if settings.exists() and stale:
        shutil.copyfile(settings, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _subsets(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = sorted(set(names) - set(SUBSETS))
    if unknown:
        raise SystemExit(f"plbench: unknown subset(s) {unknown}; known: {', '.join(SUBSETS)}")
    return names


def _config(args: argparse.Namespace) -> BuildConfig:
    return BuildConfig.from_env(
        subsets=_subsets(args.subsets),
        version=args.version,
        out_dir=Path(args.out).resolve() if getattr(args, "out", None) else None,
    )


def execute(
    config: BuildConfig,
    selection: list[list[str]] | None = None,
    instance=None,
    partition: str | None = None,
    job: str = REBUILD_JOB,
    tags: dict[str, str] | None = None,
    quiet: bool = False,
):
    """Run `job` (or a selection of its assets) in-process, as one run; returns Dagster's result.

    The `database` partitions are registered first, from the raw files alone, so the one run covers
    every database partition. With `partition`, the selection runs for that one database only.
    Stage lines go to stderr unless `quiet`.
    """
    import dagster as dg

    from assets.spider import register_database_partitions

    if instance is None:
        dagster_home()
        with dg.DagsterInstance.get() as persistent:
            return execute(config, selection, persistent, partition, job, tags, quiet)
    tags = {**_run_tags(config), **(tags or {})}
    if selection is None:
        selection = [k.path for k in _all_asset_keys(config)]
    partitioned = [k for k in selection if k[0] in PARTITIONED]
    if partition is not None:
        return _run(config, selection, instance, job, {**tags, "dagster/partition": partition}, 1, quiet)
    if not partitioned:
        return _run(config, selection, instance, job, tags, 0, quiet)
    keys = register_database_partitions(instance, config)
    if not keys:  # no Spider subset selected: nothing to normalize
        return _run(config, [k for k in selection if k not in partitioned], instance, job, tags, 0, quiet)
    tags |= {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    return _run(config, selection, instance, job, tags, len(keys), quiet)


def _run_tags(config: BuildConfig) -> dict[str, str]:
    """What every CLI run says about itself in the run list."""
    return {"plbench/subsets": ",".join(config.subsets), "plbench/version": config.version or "(derived)"}


def _all_asset_keys(config: BuildConfig):
    from pipelines.definitions import build_definitions

    return sorted(build_definitions(config).resolve_asset_graph().get_all_asset_keys())


def _run(
    config: BuildConfig,
    selection: list[list[str]],
    instance,
    job: str,
    tags: dict[str, str],
    partitions: int = 0,
    quiet: bool = False,
):
    import dagster as dg

    from pipelines.definitions import build_definitions
    from pipelines.executors import run_in_process, run_on_workers
    from plbench.collector import collector_thresholds

    dagster_environment()
    run_config = {"loggers": {"progress": {"config": {"partitions": partitions, "quiet": quiet}}}}
    keys = [dg.AssetKey(k) for k in selection]
    options = dict(instance=instance, asset_selection=keys, raise_on_error=False, tags=tags, run_config=run_config)
    if config.executor == "in_process":
        with collector_thresholds():
            return run_in_process(build_definitions(config).resolve_job_def(job), options, config.steps_at_once)
    return run_on_workers(config, job, options)


def failure_messages(result) -> list[tuple[str, str]]:
    """(step, message) of each failed step, the message being the project's own, not Dagster's wrapper."""
    from pipelines.progress import project_message

    return [
        (step_stage(event.step_key), project_message(event.step_failure_data.error)[0])
        for event in result.all_events
        if event.is_step_failure
    ]


def outcome(result) -> dict:
    """What a run did, for the final lines and `--json`: the release written, or what failed and why."""
    from pipelines.progress import project_message

    out: dict = {"ok": result.success, "run_id": result.run_id, "job": result.job_def.name}
    for event in result.get_asset_materialization_events():
        out.update(release_fields(event.materialization.metadata))
    out["failed"] = []
    for event in result.all_events:
        if event.is_step_failure:
            message, hint = project_message(event.step_failure_data.error)
            out["failed"].append({"stage": step_stage(event.step_key), "message": message, "hint": hint})
    for check in result.get_asset_check_evaluations():
        if not check.passed:
            details = json.dumps({k: v.value for k, v in check.metadata.items()}, default=str)[:500]
            out["failed"].append(
                {
                    "stage": f"{check.asset_key.to_user_string()} (blocking check {check.check_name})",
                    "message": details,
                    "hint": None,
                }
            )
    return out


def release_fields(metadata: dict) -> dict:
    """Where a `release` materialization wrote the release and what it holds (nothing for other assets)."""
    if "release_path" not in metadata:
        return {}
    return {
        "release": metadata["release_path"].value,
        "version": metadata["version"].value,
        "unchanged": metadata["unchanged"].value if "unchanged" in metadata else False,
        "subsets": metadata["subsets"].value,
        "validation": metadata["validation"].value,
    }


def up_to_date(instance) -> dict:
    """The outcome of a build that had nothing to run: the release the latest run wrote."""
    import dagster as dg

    [record] = instance.fetch_materializations(dg.AssetKey("release"), limit=1).records
    fields = release_fields(record.asset_materialization.metadata)
    return {"ok": True, "run_id": record.run_id, "job": REBUILD_JOB, "up_to_date": True, "failed": [], **fields}


def final_lines(summary: dict) -> list[str]:
    """Where the release is and what it holds; or, last, the failing stage, its message and a hint."""
    if summary["failed"]:
        lines = []
        for failure in summary["failed"]:
            hint = f" (hint: {failure['hint']})" if failure["hint"] else ""
            lines.append(f"plbench: {failure['stage']} failed: {failure['message']}{hint}")
        return lines[1:] + lines[:1]  # the first failure, the cause of what follows, comes last
    if "release" not in summary:
        return [f"plbench: {summary['job']} done; no release written (add --version V to write one)"]
    if summary.get("up_to_date") and summary.get("runs"):
        done = f"up to date (the stages that ran left what it holds as it was; run {summary['run_id']} wrote it) in"
    elif summary.get("up_to_date"):
        done = "up to date (nothing changed since run {}) in".format(summary["run_id"])
    elif summary.get("unchanged"):
        done = "unchanged (this build made the very tables it holds) in"
    else:
        done = "written to"
    lines = [f"release {summary['version']} {done} {summary['release']}"]
    for subset, counts in sorted(summary["subsets"].items()):
        released = ", ".join(f"{d} {n}" for d, n in sorted(counts.get("released", {}).items()))
        rejected = sum(counts.get("rejected", {}).values())
        lines.append(f"  {subset}: {counts.get('input', 0)} in; released {released or 'none'}; {rejected} rejected")
    return lines


def report(result, output: str = "lines", summary: dict | None = None) -> int:
    """Print the run's outcome (`lines`, `quiet`: the final lines; `json`: one object); the exit code."""
    summary = summary or outcome(result)
    if output == "json":
        print(json.dumps(summary, sort_keys=True, default=str))
    else:
        stream = sys.stdout if summary["ok"] else sys.stderr
        for line in final_lines(summary):
            print(line, file=stream)
    return 0 if summary["ok"] else 1


def _output(args: argparse.Namespace) -> str:
    return "json" if args.json else "quiet" if args.quiet else "lines"


def _exclusive(config: BuildConfig, run) -> int:
    """Run a build command alone in this checkout, refusing an existing --version up front."""
    from plbench.buildlock import BuildRunning, build_lock

    if config.version and (config.out_dir / config.version).exists():
        print(
            f"plbench: release {config.out_dir / config.version} already exists: pass a new --version", file=sys.stderr
        )
        return 2
    try:
        with build_lock(config.cache_dir):
            return run()
    except BuildRunning as exc:
        print(f"plbench: {exc}", file=sys.stderr)
        return 2


def build(
    config: BuildConfig, instance=None, everything: bool = False, quiet: bool = False, output: str = "lines"
) -> int:
    """Run what is outdated (pipelines/freshness.py), or every stage with `everything`; print the outcome.
    What waits on a stage that runs is planned again once that run ended, and runs, in a run of its own (tag
    `plbench/wave`), only if the stage's value changed. Without `instance`, the project's (DAGSTER_HOME)."""
    import dagster as dg

    from assets.spider import register_database_partitions
    from pipelines.definitions import build_definitions
    from pipelines.freshness import build_plan

    if instance is None:
        dagster_home()
        with dg.DagsterInstance.get() as persistent:
            return build(config, persistent, everything, quiet, output)
    tags = {"plbench/command": "build"}
    if everything:
        return report(execute(config, instance=instance, tags=tags, quiet=quiet), output)
    partitions = register_database_partitions(instance, config)
    definitions, ran, runs, failed = build_definitions(config), set(), [], []
    while keys := build_plan(definitions, instance, partitions, frozenset(ran)).run_now:
        wave = {**tags, "plbench/wave": str(len(runs) + 1)}
        summary = outcome(execute(config, [k.path for k in keys], instance, tags=wave, quiet=quiet))
        runs.append(summary["run_id"])
        failed += summary["failed"]  # a check that does not block fails without stopping the build
        if not summary["ok"] or "release" in summary:  # the release, downstream of every stage, ends a build
            break
        ran.update(keys)
    else:  # the release is fresh: nothing it holds changed
        summary = up_to_date(instance)
    return report(None, output, summary | {"runs": runs, "failed": failed})


def cmd_build(args: argparse.Namespace) -> int:
    config = _config(args)

    def build_alone() -> int:
        if config.raw_dir is not None and "spider2" in config.subsets:  # a download stays the build's own
            from plbench.spider.spider2 import unpack_ahead

            unpack_ahead(config.raw_dir, config.cache_dir)
        return build(config, None, args.all, args.quiet or args.json, _output(args))

    return _exclusive(config, build_alone)


def validate(
    config: BuildConfig,
    stage: str,
    dialects: list[str],
    database: str | None = None,
    instance=None,
    quiet: bool = False,
    output: str = "lines",
) -> int:
    """Rerun `stage` (for `database` only, if given) from stored upstream values, in a run named after it; with
    `config.version`, then write that release, running first what depends on the stage and changed (`build`).
    Without `instance`, the project's (DAGSTER_HOME)."""
    selection = [[name] for name in stage_assets(stage, dialects)]
    if database:
        selection = [k for k in selection if k[0] in PARTITIONED]
    tags = {"plbench/command": "validate", "plbench/stage": stage, "plbench/dialect": ",".join(dialects)}
    if database:
        tags["plbench/database"] = database
    result = execute(config, selection, instance, database, rerun_job(stage), tags, quiet)
    if not config.version or not outcome(result)["ok"]:
        return report(result, output)
    # The release reads every stage, so the stages after this one whose inputs changed run before it is written.
    return build(config, instance, quiet=quiet, output=output)


def cmd_validate(args: argparse.Namespace) -> int:
    config = _config(args)
    needs = STAGE_NEEDS.get(args.stage, DEFAULT_NEEDS)
    missing = [name for name in needs if not (config.storage_dir / name).exists()]
    if missing:
        print(
            f"plbench: no stored results of {', '.join(missing)} in {config.storage_dir}: "
            "run `plbench build` once before rerunning a stage",
            file=sys.stderr,
        )
        return 2
    if args.database and args.stage != "normalize":
        print("plbench: --database applies to --stage normalize only", file=sys.stderr)
        return 2
    dialects = [args.dialect] if args.dialect else list(DIALECT_NAMES)
    quiet = args.quiet or args.json
    return _exclusive(
        config, lambda: validate(config, args.stage, dialects, args.database, quiet=quiet, output=_output(args))
    )


def _runnable(targets: dict) -> dict:
    """The opened engines, after saying which dialects have none."""
    for dialect, target in targets.items():
        if isinstance(target, NotConfigured):
            print(f"plbench: {dialect} candidates not run: {target.reason}", file=sys.stderr)
    return {d: t for d, t in targets.items() if not isinstance(t, NotConfigured)}


def cmd_evaluate_interactive(args: argparse.Namespace) -> int:
    """One Interactive episode per task of the release's `interactive` subset, driven by the configured model."""
    from pipelines.resources import llm_resource, open_engines
    from plbench.engines.base import EngineUnavailable
    from plbench.interactive.episode import evaluate_interactive

    config = BuildConfig.from_env()
    client = llm_resource(config, in_definitions=False).client()
    if isinstance(client, NotConfigured):
        print(f"plbench: interactive episodes not run: {client.reason}", file=sys.stderr)
        return 2
    release_dir = Path(args.release).resolve()
    out = (
        Path(args.out) if args.out else Path("evaluations") / f"{release_dir.name}-interactive-{client.settings.model}"
    )
    try:
        with open_engines(config, {"postgres"}) as targets:
            if isinstance(targets["postgres"], NotConfigured):
                print(f"plbench: interactive episodes not run: {targets['postgres'].reason}", file=sys.stderr)
                return 2
            summary = evaluate_interactive(release_dir, targets["postgres"], client, out, args.limit)
    except (ValueError, OSError, EngineUnavailable) as exc:
        print(f"plbench: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(
        f"{summary['episodes']} episodes, EX {summary['ex']:.1%}, hidden facts recovered {summary['recovered_share']}"
    )
    print(f"episodes and summary.json in {out}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Grade every candidate, appending its rows as it goes; `--resume` continues an interrupted run."""
    if args.interactive:
        return cmd_evaluate_interactive(args)
    if not args.solutions:
        print("plbench: evaluate needs --solutions (or --interactive)", file=sys.stderr)
        return 2
    import contextlib
    import hashlib

    from pipelines.resources import open_engines
    from plbench.engines.base import EngineUnavailable
    from plbench.evaluate import read_release, read_solutions, run_candidates
    from plbench.grading.episodes import episodes_of
    from plbench.grading.results import ResultLog, markdown, summarize, summary_line, write_results

    with contextlib.ExitStack() as stack:
        try:
            config = BuildConfig.from_env()
            release_dir, solutions = Path(args.release).resolve(), Path(args.solutions).resolve()
            release = read_release(release_dir)
            candidates = read_solutions(solutions)
            targets = stack.enter_context(open_engines(config, {c.dialect for c in candidates} & set(DIALECT_NAMES)))
            _runnable(targets)  # says which dialects have no engine; their candidates get rows saying why
            out = Path(args.out) if args.out else Path("evaluations") / f"{release.name}-{solutions.stem}"
            run = {"release": release.name, "solutions_sha256": hashlib.sha256(solutions.read_bytes()).hexdigest()}
            log = stack.enter_context(contextlib.closing(ResultLog(out / "cases.jsonl", run, resume=args.resume)))
        except (ValueError, OSError, EngineUnavailable) as exc:
            print(f"plbench: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
        try:
            for index, _, _, rows in run_candidates(release, candidates, targets, skip=set(log.rows)):
                log.add(index, rows)
        except EngineUnavailable as exc:
            print(
                f"plbench: {exc}; {len(log.rows)} of {len(candidates)} candidates graded and kept in {log.path}: "
                "rerun with --resume to continue",
                file=sys.stderr,
            )
            return 1
    rows = log.all_rows()
    summary = summarize([r for r in rows if r["subset"] is not None], episodes_of(release.tasks))
    write_results(out, rows, markdown(summary, release.name, solutions.name))
    for key, s in summary.items():
        print(summary_line(key, s))
    unknown = sum(1 for r in rows if r["subset"] is None)
    if unknown:
        print(f"{unknown} candidates name no task of the release or an unknown dialect: not graded (see cases)")
    print(f"per-case results and summary in {out}")
    return 0


def cmd_crosscheck(args: argparse.Namespace) -> int:
    """Candidates (a file, or a model at one hint level) vs the Python reference; agreement figures."""
    from pipelines.resources import llm_resource, open_engines
    from plbench.evaluate import read_solutions, read_tasks
    from plbench.validation import crosscheck as xc

    config, release = BuildConfig.from_env(), Path(args.release).resolve()
    client = llm_resource(config, in_definitions=False).client()
    if args.llm and isinstance(client, NotConfigured):
        print(f"plbench: crosscheck not run: {client.reason}", file=sys.stderr)
        return 2
    tasks = read_tasks(release)
    candidates = None if args.llm else read_solutions(Path(args.solutions))
    source = f"llm {client.settings.model}, hint {args.hint_level}" if args.llm else args.solutions
    dialects = {c.dialect for c in candidates} if candidates else set(DIALECT_NAMES)
    with open_engines(config, dialects) as targets:
        engines = _runnable(targets)
        if args.llm:
            todo = [t for key, t in sorted(tasks.items()) if key[1] in engines][: args.limit]
            candidates = xc.generate_candidates(todo, client, args.hint_level)
        rows = xc.crosscheck(tasks, candidates, engines, config.sandbox, config.workers)
    stem = f"llm-{args.hint_level}" if args.llm else Path(args.solutions).stem
    out = Path(args.out) if args.out else Path("crosschecks") / f"{release.name}-{stem}"
    summary = xc.summarize(rows)
    xc.write_results(out, rows, summary, source)
    for key, s in summary.items():
        print(
            f"{key}: output-level agreement {s['output_level']['rate']} ({s['output_level']['agree']}/"
            f"{s['output_level']['of']} cases; conclusive only {s['output_level_conclusive']['rate']}), "
            f"pass/fail-level agreement {s['pass_fail_level']['rate']} ({s['pass_fail_level']['agree']}/"
            f"{s['pass_fail_level']['of']} candidates; conclusive only {s['pass_fail_level_conclusive']['rate']}); "
            f"inconclusive cases by cause: {s['inconclusive_cases_by_cause'] or 'none'}"
        )
    print(f"per-case comparisons and summary in {out}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from plbench.release_diff import report_lines

    try:
        lines = report_lines(Path(args.old), Path(args.new), values=args.values)
    except FileNotFoundError as error:
        print(f"plbench: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def cmd_normalize(args: argparse.Namespace) -> int:
    from pipelines.resources import open_engines
    from plbench.engines.base import EngineUnavailable
    from plbench.own_database import OwnDatabaseError, checked_input, normalize_own_database, summary_lines

    sqlite_path = Path(args.sqlite).resolve()
    config = BuildConfig.from_env(normalized_dir=Path(args.out).resolve() if args.out else None)
    try:
        queries = checked_input(sqlite_path, Path(args.queries) if args.queries else None)
        with open_engines(config, ["postgres"]) as engines:
            if isinstance(engines["postgres"], NotConfigured):
                raise EngineUnavailable(engines["postgres"].reason)
            report = normalize_own_database(sqlite_path, queries, config.normalized_dir, engines["postgres"])
    except (OwnDatabaseError, EngineUnavailable) as error:
        print(f"plbench: {error}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(report)))
    return 0 if report["load"]["verified"] else 1


def dev_command(args: argparse.Namespace) -> list[str]:
    """`dagster dev` run by this interpreter (no venv on PATH needed), on the project's code location."""
    command = [sys.executable, "-m", "dagster", "dev", "-m", "pipelines.definitions"]
    if args.host:
        command += ["--host", args.host]
    if args.port:
        command += ["--port", str(args.port)]
    return command


def cmd_dev(args: argparse.Namespace) -> int:
    dagster_home()
    dagster_environment()  # the UI creates the runs it launches
    os.chdir(project_root())
    command = dev_command(args)
    os.execv(command[0], command)


def _output_options(command: argparse.ArgumentParser) -> None:
    group = command.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", help="no stage lines: only where the release is, or what failed")
    group.add_argument("--json", action="store_true", help="no stage lines: one JSON object with the outcome on stdout")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="plbench",
        description=__doc__.split("\n\n")[0],
        epilog=(
            "Environment: PLBENCH_RAW_DIR (local mirror of the raw sources; unset: download and verify), "
            "PLBENCH_PG_DSN (PostgreSQL to use; unset: a private server under .cache/pgserver), "
            "PLBENCH_ORACLE_DSN (user/password@host:port/service; unset: Oracle validation is recorded as not_run), "
            "DAGSTER_HOME (default: .dagster/)."
        ),
    )
    sub = p.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="rebuild a release from raw sources (every stage)")
    build.add_argument("--subsets", help=f"comma-separated subsets to build (default: {','.join(SUBSETS)})")
    build.add_argument("--version", help="release version (default: <builder version>-<build id>)")
    build.add_argument("--out", help="folder that receives <version>/ (default: releases/)")
    build.add_argument(
        "--all", action="store_true", help="run every stage (default: only what changed since the stored values)"
    )
    _output_options(build)
    build.set_defaults(func=cmd_build)
    validate = sub.add_parser("validate", help="rerun one stage, reusing the stored results of the stages above it")
    validate.add_argument(
        "--stage",
        required=True,
        choices=sorted(STAGES),
        metavar="STAGE",
        help="the stage and the assets it reruns: "
        + "; ".join(f"{stage}: {', '.join(assets)}" for stage, assets in STAGES.items()),
    )
    validate.add_argument("--dialect", choices=DIALECT_NAMES, help="only this dialect (stages that have one)")
    validate.add_argument("--subsets", help="comma-separated subsets (as for build)")
    validate.add_argument(
        "--database",
        help="with --stage normalize: rebuild this one database partition only "
        "(e.g. spider1.concert_singer); `plbench build` (or --version) then reruns what depends on it, "
        "if the database came out different",
    )
    validate.add_argument(
        "--version",
        help="then write a release with this new version, running first what depends on the rerun stage "
        "and changed (as `build` does)",
    )
    validate.add_argument("--out", help="folder that receives <version>/ (default: releases/)")
    _output_options(validate)
    validate.set_defaults(func=cmd_validate)
    evaluate = sub.add_parser("evaluate", help="score a JSONL of {task_id, dialect, code} candidates on a release")
    evaluate.add_argument("--release", required=True, help="a release folder (releases/<version>)")
    evaluate.add_argument("--solutions", help="JSONL file of {task_id, dialect, code}")
    evaluate.add_argument(
        "--interactive",
        action="store_true",
        help="run Interactive episodes: the model at PLBENCH_LLM_BASE_URL/_MODEL solves each interactive task "
        "with the simulated user and a scratch database; episodes and summary.json in --out",
    )
    evaluate.add_argument("--limit", type=int, help="with --interactive: only the first N tasks")
    evaluate.add_argument(
        "--out", help="folder for cases.parquet and summary.md (default: evaluations/<release>-<solutions>)"
    )
    evaluate.add_argument(
        "--resume", action="store_true", help="continue an interrupted run from the cases.jsonl in --out"
    )
    evaluate.set_defaults(func=cmd_evaluate)
    xcheck = sub.add_parser("crosscheck", help="compare candidates' verdicts with the Python reference's")
    xcheck.add_argument("--release", required=True, help="a release folder (releases/<version>)")
    source = xcheck.add_mutually_exclusive_group(required=True)
    source.add_argument("--solutions", help="JSONL file of {task_id, dialect, code}")
    source.add_argument("--llm", action="store_true", help="generate candidates with PLBENCH_LLM_BASE_URL/_MODEL")
    xcheck.add_argument(
        "--hint-level",
        default="none",
        choices=["none", "reference", "reference_tests"],
        help="with --llm: the prompt alone, + the Python reference, + its tests",
    )
    xcheck.add_argument("--limit", type=int, help="with --llm: only the first N tasks")
    xcheck.add_argument(
        "--out", help="folder for comparisons.parquet and summary.json (default: crosschecks/<release>-<source>)"
    )
    xcheck.set_defaults(func=cmd_crosscheck)
    diff = sub.add_parser("diff", help="tasks added, removed and changed between two releases, with the fields")
    diff.add_argument("old", help="the older release folder (releases/<version>)")
    diff.add_argument("new", help="the newer release folder")
    diff.add_argument("--values", action="store_true", help="also print the start of each old and new value")
    diff.set_defaults(func=cmd_diff)
    own = sub.add_parser(
        "normalize", help="normalize your own SQLite database into both dialects, load it, check queries"
    )
    own.add_argument("--sqlite", required=True, help="the SQLite database file (opened read-only)")
    own.add_argument("--queries", help="JSON list of objects with a `query` field, checked for equivalence")
    own.add_argument("--out", help="folder for own/<database>/<dialect>/ and report.json (default: normalized/)")
    own.set_defaults(func=cmd_normalize)
    dev = sub.add_parser("dev", help="open the Dagster UI on the same storage (runs `dagster dev`)")
    dev.add_argument("--host", help="address the UI listens on (default: dagster's, 127.0.0.1)")
    dev.add_argument("--port", type=int, help="port the UI listens on (default: dagster's, 3000)")
    dev.set_defaults(func=cmd_dev)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


def run(argv: list[str] | None = None) -> NoReturn:
    """The `plbench` command: `main`, its exit handlers (logging's among them), then the exit, without the
    interpreter's teardown. The teardown only frees the heap the command leaves to the operating system, which
    frees it anyway, and walks it with the collector first: it took 2.1 s after a full build of the mirror, and
    0.7 s after one in which nothing changed. Threads still running are not waited for: the commands end those
    they start (a full build leaves daemon threads only). A command that raises ends the usual way."""
    code = main(argv)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
