"""The release comparison names every added, removed and changed row, and the fields that changed."""

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.cli import main
from plbench.release_diff import diff_rows, digested, read_digested


def _row(task_id, dialect="postgres", **fields):
    return {"task_id": task_id, "dialect": dialect, "prompt": "p", "build_id": "b1", **fields}


def test_rows_are_matched_on_task_and_dialect_and_build_identity_is_ignored():
    old = [_row("a/1"), _row("a/1", "oracle"), _row("a/2"), _row("a/3", gone=1)]
    new = [_row("a/1", build_id="b2"), _row("a/1", "oracle", prompt="q"), _row("a/4")]
    new = [dict(r, scenario=None) for r in new]
    diff = diff_rows([dict(r, gone=None) for r in old], new)
    assert diff.added == [("a/4", "postgres")]
    assert diff.removed == [("a/2", "postgres"), ("a/3", "postgres")]
    assert diff.changed == {("a/1", "oracle"): ["prompt"]}
    assert diff.only_old_columns == ["gone"] and diff.only_new_columns == ["scenario"]
    assert diff.summary()["changed_per_field"] == {"prompt": 1}


def test_a_field_list_restricts_what_counts_as_changed():
    diff = diff_rows([_row("a/1", notes=["x"])], [_row("a/1", notes=["y"], prompt="q")], fields=("notes",))
    assert diff.changed == {("a/1", "postgres"): ["notes"]}


def test_digested_rows_count_the_changes_the_texts_do_read_a_batch_at_a_time(tmp_path):
    old = [_row(f"a/{i}", notes=f"n{i}", test_cases=None) for i in range(5)]
    new = [_row("a/0", notes="n0"), _row("a/1", notes="changed"), _row("a/2", prompt="q", notes="n2"), _row("a/9")]
    new = [dict(r, test_cases="[]") if r["task_id"] == "a/0" else dict(r, test_cases=None) for r in new]
    fields = ("prompt", "notes", "test_cases", "setup_sql")  # setup_sql: a column the old file lacks
    path = _release(tmp_path / "old", old) / "tasks.parquet"
    digests = read_digested(path, fields, batch_rows=2)
    assert [r["task_id"] for r in digests] == ["a/0", "a/1", "a/2", "a/3", "a/4"]
    assert {len(r["prompt"]) for r in digests} == {16} and {r["setup_sql"] for r in digests} == {None}
    by_digest, by_text = diff_rows(digests, digested(new, fields), fields), diff_rows(old, new, fields)
    assert by_digest == by_text
    assert by_digest.changed == {("a/0", "postgres"): ["test_cases"], ("a/1", "postgres"): ["notes"],
                                 ("a/2", "postgres"): ["prompt"]}  # fmt: skip
    assert by_digest.added == [("a/9", "postgres")] and len(by_digest.removed) == 2


def _release(folder, rows):
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), folder / "tasks.parquet")
    return folder


def test_plbench_diff_lists_added_removed_and_changed_tasks_with_their_fields(tmp_path, capsys):
    old = _release(tmp_path / "0.1.0", [_row("a/1", notes=""), _row("a/2", notes=""), _row("a/3", notes="n")])
    new = [_row("a/1", build_id="b2", notes=""), _row("a/3", prompt="q", notes="m"), _row("a/4", notes="")]
    new = _release(tmp_path / "0.2.0", new)
    assert main(["diff", str(old), str(new), "--values"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        "removed  a/2 [postgres]",
        "added    a/4 [postgres]",
        "changed  a/3 [postgres]: notes, prompt",
        "    notes: n",
        "         → m",
    ]
    assert "added 1, removed 1, changed 1" in lines
    assert "  prompt: 1" in lines and "  notes: 1" in lines


def test_plbench_diff_refuses_a_folder_that_is_not_a_release(tmp_path, capsys):
    old = _release(tmp_path / "0.1.0", [_row("a/1")])
    assert main(["diff", str(old), str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"plbench: {tmp_path}: not a release folder (no tasks.parquet)"
