import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from plbench import release
from plbench.file_cells import FileCell, cell_groups, read_cells


def cell(tmp_path, name: str, text: str) -> FileCell:
    path = tmp_path / name
    path.write_text(text)
    return FileCell(str(path), hashlib.sha256(text.encode()).hexdigest())


def test_rows_are_cut_into_runs_whose_cells_hold_at_most_the_budget(tmp_path):
    rows = [{"id": i, "text": cell(tmp_path, f"{i}.txt", "x" * size)} for i, size in enumerate([4, 5, 12, 1, 2, 3])]
    groups = [[row["id"] for row in group] for group in cell_groups(rows, max_bytes=10)]
    # 4+5 fit; 12 alone is over the budget and still a run of its own; 1+2+3 fit
    assert groups == [[0, 1], [2], [3, 4, 5]]


def test_a_table_without_cells_is_one_run_and_an_empty_one_one_empty_run():
    rows = [{"id": i} for i in range(3)]
    assert list(cell_groups(rows, max_bytes=1)) == [rows]
    assert list(cell_groups([], max_bytes=1)) == [[]]


def test_read_cells_puts_the_text_in_and_refuses_a_changed_file(tmp_path):
    held = cell(tmp_path, "a.txt", "decisions")
    assert read_cells([{"id": 1, "text": held}]) == [{"id": 1, "text": "decisions"}]
    (tmp_path / "a.txt").write_text("edited")
    with pytest.raises(ValueError, match="changed since the stage that wrote it ran"):
        read_cells([{"text": held}])


def test_a_table_with_cells_is_written_one_row_group_per_run_and_reads_back_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(release, "CELL_BYTES_PER_ROW_GROUP", 10)
    rows = [{"id": i, "text": cell(tmp_path, f"{i}.txt", str(i) * 6)} for i in range(5)]
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    release._write_table(rows, schema, tmp_path / "out" / "t.parquet")
    written = pq.ParquetFile(tmp_path / "out" / "t.parquet")
    assert written.metadata.num_row_groups == 5
    assert written.read().to_pylist() == [{"id": i, "text": str(i) * 6} for i in range(5)]
