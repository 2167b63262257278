import hashlib

import pandas
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from plbench import quality, release
from plbench.file_cells import FileCell, cells_table, row_groups


def cell(tmp_path, name: str, text: str) -> FileCell:
    path = tmp_path / name
    path.write_text(text)
    return FileCell(str(path), hashlib.sha256(text.encode()).hexdigest())


def test_rows_are_cut_into_runs_whose_cells_hold_at_most_the_budget(tmp_path):
    rows = [{"id": i, "text": cell(tmp_path, f"{i}.txt", "x" * size)} for i, size in enumerate([4, 5, 12, 1, 2, 3])]
    groups = [[row["id"] for row in group] for group in row_groups(rows, max_bytes=10)]
    # 4+5 fit; 12 alone is over the budget and still a run of its own; 1+2+3 fit
    assert groups == [[0, 1], [2], [3, 4, 5]]


def test_rows_are_cut_by_any_size_given():
    rows = [{"id": i, "text": "x" * size} for i, size in enumerate([3, 3, 3, 9])]
    groups = [[row["id"] for row in group] for group in row_groups(rows, 6, size=lambda row: len(row["text"]))]
    assert groups == [[0, 1], [2], [3]]


def test_a_table_without_cells_is_one_run_and_an_empty_one_one_empty_run():
    rows = [{"id": i} for i in range(3)]
    assert list(row_groups(rows, max_bytes=1)) == [rows]
    assert list(row_groups([], max_bytes=1)) == [[]]


def test_cells_table_puts_the_text_in_and_refuses_a_changed_file(tmp_path):
    held = cell(tmp_path, "a.txt", "decisions")
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    assert cells_table([{"id": 1, "text": held}], schema).to_pylist() == [{"id": 1, "text": "decisions"}]
    (tmp_path / "a.txt").write_text("edited")
    with pytest.raises(ValueError, match="changed since the stage that wrote it ran"):
        cells_table([{"id": 1, "text": held}], schema)


def test_a_table_of_no_columns_keeps_its_rows():
    assert cells_table([{"id": 1}, {"id": 2}], pa.schema([])).num_rows == 2


def test_file_cells_are_checked_as_their_text_would_be(tmp_path):
    # A cell column may also hold plain text and nulls, or miss in a row; columns keep the schema's order.
    schema = pa.schema([("text", pa.string()), ("id", pa.int64()), ("note", pa.string())])
    rows = [
        {"id": 0, "text": cell(tmp_path, "0.txt", "é" * 3), "note": "a"},
        {"id": 1, "text": "plain", "note": None},
        {"id": 2, "text": None, "note": cell(tmp_path, "n.txt", "")},
        {"id": 3},
    ]
    as_text = [{k: v.text() if isinstance(v, FileCell) else v for k, v in row.items()} for row in rows]
    expected = pa.Table.from_pylist(as_text, schema=schema)
    assert cells_table(rows, schema).equals(expected)
    as_strings = expected.to_pandas().astype({"text": object, "note": object})  # the suites see Python strings
    pandas.testing.assert_frame_equal(quality.table_frame(rows, schema), as_strings)


def test_a_table_with_cells_is_written_one_row_group_per_run_and_reads_back_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(release, "TEXT_BYTES_PER_ROW_GROUP", 10)
    rows = [{"id": i, "text": cell(tmp_path, f"{i}.txt", str(i) * 6)} for i in range(5)]
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    release._write_table(rows, schema, tmp_path / "out" / "t.parquet")
    written = pq.ParquetFile(tmp_path / "out" / "t.parquet")
    assert written.metadata.num_row_groups == 5
    assert written.read().to_pylist() == [{"id": i, "text": str(i) * 6} for i in range(5)]


def test_a_table_with_cells_is_written_as_the_same_table_of_text_is(tmp_path):
    # The cells are read a chunk each; written so, the file's pages (and its bytes) would differ.
    rows = [{"id": i, "text": cell(tmp_path, f"{i}.txt", str(i) * 400_000)} for i in range(5)]
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    release._write_table(rows, schema, tmp_path / "cells" / "t.parquet")
    as_text = pa.Table.from_pylist([{"id": r["id"], "text": r["text"].text()} for r in rows], schema=schema)
    with pq.ParquetWriter(tmp_path / "text.parquet", schema, compression="zstd") as writer:
        writer.write_table(as_text)
    assert (tmp_path / "cells" / "t.parquet").read_bytes() == (tmp_path / "text.parquet").read_bytes()
