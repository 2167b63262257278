"""Spider 1.0 gold files: dev.json's questions paired with dev_gold.sql, and train_gold.sql."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class GoldFormatError(ValueError):
    """A gold file line that cannot be read (names the file and the line)."""


@dataclass(frozen=True)
class GoldQuery:
    source_id: str  # dev: 0-based index in dev.json; train: 1-based line number in train_gold.sql
    db_id: str
    question: str  # "" for train (train_gold.sql holds no questions)
    sql: str
    split: str  # "dev" | "train"


# ---- readers ---------------------------------------------------------------------------------


def _gold_line(path: Path, number: int, line: str) -> tuple[str, str]:
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise GoldFormatError(f"{path}:{number}: expected '<sql>\\t<db_id>', got {line[:80]!r}")
    return parts[0].strip(), parts[1].strip()


def _gold_lines(path: Path) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        return [_gold_line(path, n, line) for n, line in enumerate(handle, start=1) if line.strip()]


def read_spider_dev(dev_json_path: Path, dev_gold_path: Path) -> list[GoldQuery]:
    """dev.json's questions paired line by line with dev_gold.sql (whose SQL carries the 2020 fixes)."""
    entries = json.loads(Path(dev_json_path).read_text(encoding="utf-8"))
    gold = _gold_lines(Path(dev_gold_path))
    if len(entries) != len(gold):
        raise GoldFormatError(f"{dev_gold_path}: {len(gold)} queries for {len(entries)} questions in {dev_json_path}")
    out = []
    for i, (entry, (sql, db_id)) in enumerate(zip(entries, gold)):
        if not isinstance(entry, dict) or entry.get("db_id") != db_id or "question" not in entry:
            raise GoldFormatError(
                f"{dev_json_path}: entry {i} ({str(entry)[:60]}) does not match {dev_gold_path}:{i + 1} (db {db_id})"
            )
        out.append(GoldQuery(str(i), db_id, entry["question"], sql, "dev"))
    return out


def read_train_gold(train_gold_path: Path) -> list[GoldQuery]:
    """train_gold.sql: one '<sql>\\t<db_id>' per line; the source id is the line number."""
    path = Path(train_gold_path)
    with open(path, encoding="utf-8") as handle:
        return [
            GoldQuery(str(n), db_id, "", sql, "train")
            for n, line in enumerate(handle, start=1)
            if line.strip()
            for sql, db_id in [_gold_line(path, n, line)]
        ]
