"""The release comparison names every added, removed and changed row, and the fields that changed."""

from plbench.release_diff import diff_rows


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
