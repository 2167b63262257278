"""A release loads per subset with Hugging Face `datasets` (the card's `configs`), pandas and DuckDB,
and the card's own loading snippet runs as written."""

import re
import shutil

import pytest

from plbench.config import BuildConfig
from plbench.records import Rejection
from plbench.release import PreparedRelease, publish, subset_counts
from plbench.taskrow import TaskRow


def _task(subset, source_id, dialect):
    return TaskRow(
        task_id=f"{subset}/{source_id}",
        subset=subset,
        dialect=dialect,
        source_dataset="fixture",
        source_id=source_id,
        prompt=f"prompt of {source_id}",
        scaffold="",
        test_cases="[]",
        comparison="{}",
        replay_status="passed",
        notes=("n",),
    )


@pytest.fixture
def release(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # the loader's cache stays in the test's folder
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tasks = [_task("mbpp", i, d) for i in ("1", "2") for d in ("oracle", "postgres")]
    tasks.append(_task("spider_plsql", "concert_singer/0", "postgres"))
    plus_rejected = Rejection(
        subset="mbpp_plus", source_id="9", stage="ingest", reason_code="unparsable", detail="fixture"
    )
    rejected = [
        plus_rejected,
        Rejection(
            subset="spider_plsql",
            source_id="concert_singer/0",
            dialect="oracle",
            stage="spider_tasks",
            reason_code="not_translated",
            detail="fixture",
        ),
    ]
    manifest = {
        "build_id": "fixture",
        "subsets": {
            "mbpp": subset_counts("mbpp", 2, tasks, rejected),
            "mbpp_plus": subset_counts("mbpp_plus", 1, tasks, rejected),
            "spider_plsql": subset_counts("spider_plsql", 1, tasks, rejected),
        },
        "validation": {},
    }
    config = BuildConfig(
        raw_dir=tmp_path, cache_dir=tmp_path / "cache", out_dir=tmp_path / "releases", catalog={}, version="t1"
    )
    return publish(config, PreparedRelease(tasks, {}, manifest))


def test_the_card_declares_every_task_and_one_config_per_released_subset(release):
    front_matter = (release / "README.md").read_text().split("---\n")[1]
    assert front_matter.split("configs:\n")[1] == (
        "- config_name: default\n  data_files:\n  - split: test\n    path: tasks.parquet\n"
        "- config_name: mbpp\n  data_files:\n  - split: test\n    path: subsets/mbpp.parquet\n"
        "- config_name: spider_plsql\n  data_files:\n  - split: test\n    path: subsets/spider_plsql.parquet\n"
    )
    assert sorted(p.name for p in (release / "subsets").iterdir()) == ["mbpp.parquet", "spider_plsql.parquet"]


def test_datasets_loads_all_tasks_and_each_subset_from_the_release_folder(release):
    from datasets import load_dataset

    everything = load_dataset(str(release), split="test")
    assert sorted(zip(everything["task_id"], everything["dialect"], strict=True))[:2] == [
        ("mbpp/1", "oracle"),
        ("mbpp/1", "postgres"),
    ]
    assert everything.num_rows == 5
    mbpp = load_dataset(str(release), "mbpp", split="test")
    assert set(mbpp["subset"]) == {"mbpp"} and mbpp.num_rows == 4 and mbpp[0]["notes"] == ["n"]
    spider = load_dataset(str(release), "spider_plsql", split="test")
    assert spider["task_id"] == ["spider_plsql/concert_singer/0"]
    with pytest.raises(ValueError, match="mbpp_plus"):  # nothing released: no config
        load_dataset(str(release), "mbpp_plus", split="test")


def test_pandas_and_duckdb_read_the_same_rows(release):
    import duckdb
    import pandas as pd

    assert pd.read_parquet(release / "subsets" / "mbpp.parquet")["task_id"].tolist() == ["mbpp/1"] * 2 + ["mbpp/2"] * 2
    counts = duckdb.sql(
        f"SELECT subset, dialect, count(*) FROM '{release}/tasks.parquet' GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert counts == [("mbpp", "oracle", 2), ("mbpp", "postgres", 2), ("spider_plsql", "postgres", 1)]


def test_the_cards_loading_snippet_runs_in_the_release_folder(release, monkeypatch, capsys):
    snippet = re.search(r"```python\n(.*?)```", (release / "README.md").read_text(), re.S).group(1)
    monkeypatch.chdir(release.parent.parent)  # where releases/ is
    scope = {}
    exec(snippet, scope)
    assert scope["tasks"].num_rows == 5 and scope["mbpp"].num_rows == 4 and len(scope["mbpp_frame"]) == 4
    assert "spider_plsql" in capsys.readouterr().out  # DuckDB's printed counts


def test_the_build_id_digests_the_builders_code_and_rule_tables_but_not_bytecode_or_hidden_files(tmp_path):
    from plbench import release

    copy = tmp_path / "plbench"
    shutil.copytree(release.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert release.package_digest(copy) == release.builder_code()
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "release.cpython-311.pyc").write_bytes(b"compiled")
    (copy / ".release.py.swp").write_bytes(b"editor")
    assert release.package_digest(copy) == release.builder_code()
    suite = next((copy / "quality_suites").glob("*.json"))
    suite.write_text(suite.read_text() + " ")
    edited = release.package_digest(copy)
    assert edited != release.builder_code()

    config = BuildConfig(raw_dir=tmp_path)
    built = release.build_id(config, {}, None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(release, "builder_code", lambda: edited)
        assert release.build_id(config, {}, None) != built
    # the Oracle grammar's gate rejects rows a build without its packages releases: another release, another id
    assert release.build_id(config, {}, "antlr4ts-sql 1.1.0") != built
