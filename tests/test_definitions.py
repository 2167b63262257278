"""The Dagster code location loads, and its graph has the shape the README describes."""

import re

import dagster as dg
import pytest

from pipelines.cli import parser
from pipelines.definitions import REBUILD_JOB, defs


def test_definitions_load_and_wire_every_stage():
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {
        "mbpp_raw",
        "mbpp_plus_raw",
        "mbpp_test_cases",
        "mbpp_signatures",
        "mbpp_augmented",
        "mbpp_ile_tasks",
        "mbpp_ile_validation",
        "mbpp_tasks",
        "replay_validation_postgres",
        "replay_validation_oracle",
        "roundtrip_postgres",
        "roundtrip_oracle",
        "spider1_raw",
        "spider2_lite_raw",
        "normalized_databases_postgres",
        "normalized_databases_oracle",
        "normalization_report",
        "spider_plsql_tasks",
        "spider2_tasks",
        "procedure_seeds",
        "procedures_tasks",
        "procedures_validation",
        "procedural_ile",
        "procedures_ile_tasks",
        "procedures_ile_validation",
        "multiturn_tasks",
        "multiturn_validation",
        "interactive_tasks",
        "interactive_validation",
        "release_tables",
        "crosscheck_candidates",
        "crosscheck",
        "validation_reports",
        "release",
    }
    upstream = {k.to_user_string() for k in graph.get(dg.AssetKey("release_tables")).parent_keys}
    assert {
        "replay_validation_postgres",
        "replay_validation_oracle",
        "mbpp_tasks",
        "spider_plsql_tasks",
        "normalization_report",
        "procedures_validation",
        "procedures_ile_validation",
        "multiturn_validation",
    } <= upstream
    interactive = {k.to_user_string() for k in graph.get(dg.AssetKey("interactive_tasks")).parent_keys}
    assert interactive == {"spider1_raw", "procedures_tasks", "procedural_ile"}  # ILE's final rounds are perturbed
    normalized = graph.get(dg.AssetKey(["normalized_databases_postgres"]))
    assert normalized.partitions_def.name == "database"  # one partition per database
    assert defs.resolve_job_def(REBUILD_JOB) is not None


def test_blocking_checks_guard_tasks_and_replay():
    checks = {(k.asset_key.to_user_string(), k.name) for k in defs.resolve_asset_graph().asset_check_keys}
    assert checks == {
        ("mbpp_tasks", "mbpp_tasks_reconcile"),
        ("replay_validation_postgres", "retention_floor"),
        ("replay_validation_oracle", "retention_floor"),
        ("normalization_report", "databases_loaded"),
        ("normalization_report", "gold_equivalence_floor"),
        ("procedures_tasks", "references_pass_their_suites"),
        ("procedures_tasks", "mutant_floor"),
        ("procedures_tasks", "trivial_candidates_fail"),
        ("release_tables", "quality_suites"),
    }


def test_cli_documents_the_contract():
    help_text = parser().format_help()
    assert all(
        word in help_text for word in ("build", "validate", "PLBENCH_RAW_DIR", "PLBENCH_PG_DSN", "PLBENCH_ORACLE_DSN")
    )
    args = parser().parse_args(["validate", "--stage", "replay", "--dialect", "postgres"])
    assert (args.stage, args.dialect, args.version) == ("replay", "postgres", None)


def test_validate_help_names_what_each_stage_reruns(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["validate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "procedures: procedures_validation;" in help_text
    assert "procedure_tasks: procedure_seeds, procedures_tasks;" in help_text


def test_validate_before_any_build_says_what_to_do(tmp_path, monkeypatch, capsys):
    from pipelines import cli

    monkeypatch.setattr(cli.BuildConfig, "storage_dir", property(lambda self: tmp_path / "empty"))
    assert cli.main(["validate", "--stage", "replay", "--dialect", "postgres"]) == 2
    assert "run `plbench build` once" in capsys.readouterr().err


def test_resources_come_from_the_environment_once_and_say_what_is_not_configured(monkeypatch, tmp_path):
    from pipelines.resources import engines_resource, llm_resource
    from plbench.config import NO_ORACLE, BuildConfig, NotConfigured

    for name in ("PLBENCH_ORACLE_DSN", "PLBENCH_LLM_BASE_URL", "PLBENCH_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    config = BuildConfig.from_env(cache_dir=tmp_path)
    with engines_resource(config).open("oracle") as oracle:
        assert oracle == NotConfigured(NO_ORACLE, dialect="oracle")
    assert llm_resource(config).client() == NotConfigured(
        "PLBENCH_LLM_BASE_URL and PLBENCH_LLM_MODEL not set: no OpenAI-compatible endpoint configured"
    )
    monkeypatch.setenv("PLBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PLBENCH_LLM_MODEL", "m")
    monkeypatch.setenv("PLBENCH_LLM_API_KEY", "secret")
    monkeypatch.setenv("PLBENCH_ORACLE_DSN", "u/secret@127.0.0.1:9/FREEPDB1")
    configured = BuildConfig.from_env(cache_dir=tmp_path)
    client = llm_resource(configured, in_definitions=False).client()
    assert (client.settings.model, client.settings.api_key) == ("m", "secret")
    assert client.cache_dir == tmp_path / "llm"
    # Given to Definitions, what came from the environment is named, never spelled out.
    assert isinstance(llm_resource(configured).api_key, dg.EnvVar)
    assert engines_resource(configured).oracle.dsn == dg.EnvVar("PLBENCH_ORACLE_DSN")
    assert engines_resource(configured, in_definitions=False).oracle.dsn == "u/secret@127.0.0.1:9/FREEPDB1"


def test_graph_names_say_what_each_node_is_and_every_asset_reaches_the_release():
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    labels = [k.path[-1] for k in keys]  # what a graph node shows
    assert len(set(labels)) == len(labels) and not {"postgres", "oracle"} & set(labels)
    release = dg.AssetKey("release")
    reaching, frontier = {release}, [release]
    while frontier:
        frontier = [p for k in frontier for p in graph.get(k).parent_keys if p not in reaching]
        reaching |= set(frontier)
    assert reaching == set(keys)  # no dead end: every asset leads to the release
    assert all(graph.get(k).code_version for k in keys)
    assert "`releases/<version>/`" in graph.get(release).description  # Markdown keeps it; HTML would eat it


def test_code_versions_follow_the_code_an_asset_runs():
    from assets.versions import code_version
    from plbench.code_closure import ROOT, source_digest, source_files

    files = {p.relative_to(ROOT).as_posix() for p in source_files("assets.replay")}
    assert {"assets/replay.py", "plbench/mbpp/stages.py", "plbench/validation/replay.py"} <= files
    assert "plbench/spider/stages.py" not in files  # a Spider change leaves replay fresh
    assert code_version("assets.replay") == code_version("assets.replay") != code_version("assets.spider")
    assert source_digest("plbench.validation.replay") != source_digest("plbench.spider.stages")


def test_a_subset_s_code_version_follows_its_own_code_not_every_subset_s(monkeypatch):
    from assets.subsets import subset_code_version
    from assets.versions import code_version
    from plbench.code_closure import ROOT
    from plbench.subsets import SUBSETS

    def versions() -> dict[str, str]:
        modules = ("mbpp", "replay", "operators", "ile_validation", "procedural_ile", "spider")
        staged = {name: subset_code_version(SUBSETS[name]) for name in ("procedures", "multiturn", "interactive")}
        return {**{m: code_version(f"assets.{m}") for m in modules}, **staged}

    before = versions()
    replay = ROOT / "plbench" / "validation" / "replay.py"  # MBPP's replay
    edited, real_read = replay.read_bytes() + b"# a fix\n", type(replay).read_bytes
    monkeypatch.setattr(type(replay), "read_bytes", lambda path: edited if path == replay else real_read(path))
    after = versions()
    # what replays moves; MBPP's extraction and ILE, the procedures and Spider stay fresh
    assert {name for name in before if after[name] != before[name]} == {"replay", "ile_validation"}


def _versions(**settings) -> dict[str, str]:
    from pipelines.definitions import build_definitions
    from plbench.config import BuildConfig

    graph = build_definitions(BuildConfig(**settings)).resolve_asset_graph()
    return {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}


FOUR = ("mbpp", "mbpp_plus", "spider_plsql", "spider2")


def test_how_a_run_executes_is_no_part_of_any_code_version():
    executed = {"workers": 7, "procedure_workers": 5, "task_shards": 3, "steps_at_once": 1}
    on_celery = {"executor": "celery", "celery_broker": "redis://127.0.0.1:9/0"}
    assert _versions(subsets=FOUR, **executed, **on_celery) == _versions(subsets=FOUR)
    assert _versions(subsets=FOUR, statement_timeout_s=5.0) != _versions(subsets=FOUR)  # that one grades


def test_a_subset_selection_moves_only_the_versions_of_what_asks_about_the_subsets_it_changes():
    from plbench.config import SUBSETS

    four = _versions(subsets=FOUR)
    moved = {
        name: {n for n, v in _versions(subsets=subsets).items() if v != four[n]}
        for name, subsets in (("nine", SUBSETS), ("no_plus", ("mbpp", "spider_plsql", "spider2")))
    }
    release = {"release_tables", "crosscheck_candidates", "crosscheck", "validation_reports", "release"}
    staged = {f"{s}_{kind}" for s in SUBSETS if s not in FOUR for kind in ("tasks", "validation")}
    # MBPP's and Spider's stages and the partitions stay fresh: no code of theirs asks about the new subsets;
    # spider1_raw does (the procedures read it too), and so what reads it for the procedures
    procedures = {"spider1_raw", "normalization_report", "procedure_seeds", "procedural_ile"}
    assert moved["nine"] == {*staged, *procedures, *release}
    # mbpp_raw asks about MBPP alone: dropping MBPP+ leaves it fresh
    mbpp_plus = {"mbpp_plus_raw", "mbpp_test_cases", "mbpp_signatures", "mbpp_augmented", "mbpp_tasks"}
    validations = {f"{stage}_{d}" for stage in ("replay_validation", "roundtrip") for d in ("oracle", "postgres")}
    assert moved["no_plus"] == {*mbpp_plus, *validations, *release}


def test_dropping_mbpp_ile_moves_only_ile_and_the_release():
    from plbench.config import SUBSETS

    nine, no_ile = _versions(subsets=SUBSETS), _versions(subsets=tuple(s for s in SUBSETS if s != "mbpp_ile"))
    release = {"release_tables", "crosscheck_candidates", "crosscheck", "validation_reports", "release"}
    assert {n for n in nine if nine[n] != no_ile[n]} == {"mbpp_ile_tasks", "mbpp_ile_validation", *release}


def test_an_asset_sees_only_the_selection_of_the_subsets_it_declares():
    from assets.versions import reads_selection, selected_subsets
    from plbench.config import BuildConfig

    seen = []

    @dg.asset(metadata=reads_selection("mbpp", "mbpp_ile"))
    def asking(context: dg.AssetExecutionContext) -> None:
        seen.append(selected_subsets(context, BuildConfig(subsets=("mbpp", "spider2"))))

    @dg.asset
    def declaring_none(context: dg.AssetExecutionContext) -> None:
        seen.append(selected_subsets(context, BuildConfig(subsets=("mbpp", "spider2"))))

    dg.materialize([asking, declaring_none], raise_on_error=True)
    assert sorted(seen, key=len) == [set(), {"mbpp"}]  # spider2 is selected but declared by neither


def test_assets_read_the_selection_only_through_what_they_declare():
    """Outside log messages, an asset's code reads `build.subsets` only through selected_subsets, which
    holds it to its declaration; config_digest digests it, and the partitions' registration (no asset)
    reads it to know the databases."""
    import ast
    from pathlib import Path

    import assets

    allowed = {"selected_subsets", "config_digest", "selected_sources"}
    found = []
    for path in sorted(Path(assets.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        in_text = {id(n) for s in ast.walk(tree) if isinstance(s, ast.JoinedStr) for n in ast.walk(s)}
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name not in allowed):
            reads = [n for n in ast.walk(function) if isinstance(n, ast.Attribute) and n.attr == "subsets"]
            found += [f"{path}:{n.lineno}" for n in reads if id(n) not in in_text]
    assert found == []


def test_imports_are_found_in_every_nested_block(tmp_path):
    from plbench.code_closure import _imports

    source = tmp_path / "m.py"
    source.write_text(
        "import plbench.a\n"
        "if x:\n    from plbench import b\nelse:\n    import os\n"
        "def f():\n    try:\n        from plbench.c import d\n    except E:\n        import plbench.e\n"
        "    finally:\n        import plbench.f\n"
        "class K:\n    def g(self):\n        with w:\n            for i in y:\n                import plbench.h\n"
        "match v:\n    case 1:\n        import plbench.i\n"
        "from . import plbench\n"
        "if TYPE_CHECKING:\n    import plbench.j\nelse:\n    import plbench.k\n"
        "if typing.TYPE_CHECKING:\n    from plbench.l import m\n"
    )
    assert _imports(source) == {
        "plbench.a",
        "plbench",
        "plbench.b",
        "plbench.c",
        "plbench.c.d",
        "plbench.e",
        "plbench.f",
        "plbench.h",
        "plbench.i",
        "plbench.k",  # what only annotations import is not code the module runs
    }


def test_runs_and_kinds_say_what_they_did(tmp_path):
    from pipelines.definitions import build_definitions, candidate_kinds
    from plbench.config import BuildConfig, NotConfigured
    from plbench.llm import LLMSettings

    offline = BuildConfig(llm=NotConfigured("no endpoint"))
    assert candidate_kinds(offline) == {"python"}
    assert candidate_kinds(BuildConfig(llm=LLMSettings("http://127.0.0.1:9/v1", "m"))) == {"openai"}
    node = build_definitions(offline).resolve_asset_graph().get(dg.AssetKey("crosscheck_candidates"))
    assert node.kinds == {"python"}
    rerun = defs.resolve_job_def("rerun_replay")
    assert {k.to_user_string() for k in rerun.asset_layer.selected_asset_keys} == {
        "replay_validation_postgres",
        "replay_validation_oracle",
    }


def test_every_validation_by_execution_is_a_stage_a_researcher_reruns():
    from pipelines.stages import STAGES, stage_assets

    staged = {name for stage in STAGES for name in stage_assets(stage)}
    validations = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    validations = {name for name in validations if re.fullmatch(r".+_validation(_postgres|_oracle)?", name)}
    assert validations and validations <= staged
    assert stage_assets("procedures") == ["procedures_validation"]  # seconds, not the minutes of its tasks


def test_the_ui_materializes_an_asset_with_the_job_of_its_stage():
    from pipelines.stages import PARTITIONED, UI_STAGES, ui_job, ui_stage_assets

    implicit = "__ASSET_JOB"  # Dagster's own job, which holds every asset
    jobs_of = {k.to_user_string(): [implicit] for k in defs.resolve_asset_graph().get_all_asset_keys()}
    for job in defs.jobs:
        for key in defs.resolve_job_def(job.name).asset_layer.selected_asset_keys:
            jobs_of[key.to_user_string()].append(job.name)
    # What the UI's Materialize button launches: the first job holding the asset, names sorted as strings.
    first = {asset: sorted(names)[0] for asset, names in jobs_of.items()}
    staged = {asset: ui_job(stage) for stage in UI_STAGES for asset in ui_stage_assets(stage)}
    assert first["replay_validation_postgres"] == "Stage_replay"
    assert first["release"] == "Stage_release" and first["mbpp_raw"] == "Stage_raw_sources"
    assert {a: first[a] for a in staged} == staged  # each staged asset in one UI job, which wins
    assert {first[a] for a in PARTITIONED} == {implicit}  # from the UI, a backfill of their partitions


def test_dev_runs_dagster_with_this_interpreter_and_takes_host_and_port():
    import sys

    from pipelines.cli import dev_command

    args = parser().parse_args(["dev", "--host", "0.0.0.0", "--port", "3111"])
    assert dev_command(args) == [
        sys.executable,
        *("-m", "dagster", "dev", "-m", "pipelines.definitions", "--host", "0.0.0.0", "--port", "3111"),
    ]
    assert dev_command(parser().parse_args(["dev"]))[-2:] == ["-m", "pipelines.definitions"]
