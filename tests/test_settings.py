"""A settings file (PLBENCH_SETTINGS) gives another process the very configuration that wrote it."""

import json
from pathlib import Path

import pytest

from plbench.config import BuildConfig, read_settings
from plbench.raw_sources.catalog import CATALOG, catalog_from_table, catalog_table
from plbench.sandbox import SandboxLimits
from tests.fixtures import write_mirror


def test_a_settings_file_restores_every_setting(tmp_path, monkeypatch):
    config = BuildConfig(
        raw_dir=tmp_path / "raw",
        cache_dir=tmp_path / "cache",
        catalog=write_mirror(tmp_path / "raw"),
        version="t9",
        subsets=("mbpp", "spider2"),
        min_retention=0.25,
        sandbox=SandboxLimits(cpu_seconds=3, wall_seconds=9.0, case_seconds=1.5),
        crosscheck_solutions=tmp_path / "solutions.jsonl",
        executor="celery",
        celery_broker="redis://127.0.0.1:1/0",
    )
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(config.to_settings()))
    monkeypatch.setenv("PLBENCH_SETTINGS", str(path))
    monkeypatch.setenv("PLBENCH_RAW_DIR", str(tmp_path / "elsewhere"))  # the file wins over the variables
    monkeypatch.delenv("PLBENCH_LLM_BASE_URL", raising=False)
    assert BuildConfig.from_env() == config
    assert BuildConfig.from_env(version="t10").version == "t10"  # the command line wins over the file


def test_a_settings_file_naming_an_unknown_setting_or_the_model_is_refused(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"raw_dri": "/x", "llm": "secret"}))
    with pytest.raises(ValueError, match=r"unknown settings \['llm', 'raw_dri'\]"):
        read_settings(path)


def test_the_catalog_survives_its_json_form():
    assert catalog_from_table(catalog_table(CATALOG)) == CATALOG
    on_disk = json.loads(Path("raw_sources/catalog.json").read_text())
    assert catalog_table(CATALOG)["licences"] == on_disk["licences"]
    first = on_disk["datasets"]["mbpp"][0]
    assert catalog_table(CATALOG)["datasets"]["mbpp"][0] == {k: first[k] for k in ("path", "url", "sha256")}


def test_an_unknown_executor_or_celery_without_a_broker_is_refused_by_name():
    from pipelines.executors import executor_for

    with pytest.raises(ValueError, match="unknown executor 'spark'; known: in_process, multiprocess, celery, k8s"):
        executor_for(BuildConfig(executor="spark"))
    with pytest.raises(ValueError, match="executor celery needs a broker: set PLBENCH_CELERY_BROKER"):
        executor_for(BuildConfig(executor="celery"))
    assert executor_for(BuildConfig(executor="celery", celery_broker="redis://127.0.0.1:1/0")).name == "celery"


def test_the_fingerprint_names_the_model_but_never_its_key_and_tells_what_validated_the_rows(tmp_path):
    from plbench.llm import LLMSettings

    model = LLMSettings("http://10.0.0.7:8000/v1", "coder-7b", api_key="sk-secret")
    fingerprint = BuildConfig(ile_proposer="llm", llm=model).fingerprint()
    assert fingerprint["ile_proposer"] == "llm:coder-7b (temperature 0.0, max_tokens 2048)"
    assert fingerprint["crosscheck"] == "llm:coder-7b (temperature 0.0, max_tokens 2048), hint none"
    assert "sk-secret" not in json.dumps(fingerprint) and "10.0.0.7" not in json.dumps(fingerprint)
    offline = BuildConfig().fingerprint()
    assert (offline["oracle_server"], offline["crosscheck"]) == (False, None)
    assert BuildConfig(oracle_dsn="u/p@127.0.0.1:9/FREEPDB1").fingerprint()["oracle_server"] is True
    solutions = tmp_path / "solutions.jsonl"
    solutions.write_text('{"task_id": "mbpp/2", "dialect": "postgres", "code": "x"}\n')
    by_file = BuildConfig(crosscheck_solutions=solutions).fingerprint()["crosscheck"]
    solutions.write_text('{"task_id": "mbpp/2", "dialect": "postgres", "code": "y"}\n')
    assert by_file.startswith("file:")
    assert BuildConfig(crosscheck_solutions=solutions).fingerprint()["crosscheck"] != by_file
    with pytest.raises(ValueError, match="crosscheck_solutions .*missing.jsonl: cannot be read"):
        BuildConfig(crosscheck_solutions=tmp_path / "missing.jsonl").fingerprint()
