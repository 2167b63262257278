"""Replay of the procedures subset's Oracle references on a configured Oracle engine (its validate stage).

Each Oracle row's reference runs the row's calls on a fresh copy of its database (OracleWorkspace, the copy
read from the normalized Oracle files). It passes when it installs and every call does on Oracle what the
PostgreSQL reference recorded in the row's call suite, as far as the two dialects compare: the defined
error of the same name (PLB01 is ORA-20001: dialect_text.ERROR_CODES), some error where PostgreSQL raised
another, none where it raised none; as many output lines; and every table's row count (table names as
Oracle folds them). Values are typed otherwise in Oracle, so the content hashes are not compared: a
candidate is graded against this reference's own Oracle run (plbench.procedures.oracle_grade). Rows with
the same database, setup, reference and calls (a seed's scenarios mostly share them) replay once; a
reference passes only when a second fresh run gives what the first did.
"""

from __future__ import annotations

import json
from pathlib import Path

from plbench.dialects import DIALECTS
from plbench.procedures.dialect_text import ERROR_CODES
from plbench.procedures.oracle_workspace import OracleCopy, OracleTrace, OracleWorkspace
from plbench.taskrow import TaskRow

ORACLE_ERROR = {codes["postgres"].reported: codes["oracle"].reported for codes in ERROR_CODES.values()}


def database_folder(normalized_dir: Path, database: str) -> Path:
    """Where the Spider 1.0 database's normalized Oracle files are (plbench.normalize.emit.write_files)."""
    return normalized_dir / "spider1" / database / "oracle"


def replay_rows(engine, rows: list[TaskRow], normalized_dir: Path) -> dict[tuple[str, str], str]:
    """Row key -> '' when its reference passed on Oracle, else why not (see the module docstring)."""
    copies: dict[str, OracleCopy | str] = {}
    verdicts: dict[tuple, str] = {}
    out = {}
    for row in rows:
        if row.database not in copies:
            try:
                copies[row.database] = OracleCopy.read(database_folder(normalized_dir, row.database), row.database)
            except ValueError as exc:
                copies[row.database] = f"cannot copy database {row.database}: {exc}"
        copy, same = copies[row.database], (row.database, row.setup_sql, row.reference_code, row.test_cases)
        if same not in verdicts:
            verdicts[same] = copy if isinstance(copy, str) else replay(OracleWorkspace(engine, copy), row)
        out[row.key] = verdicts[same]
    return out


def replay(workspace: OracleWorkspace, row: TaskRow) -> str:
    """'' when the row's Oracle reference reproduces its call suite as far as the dialects compare, and a
    second fresh run gives what the first did (the reference is deterministic on Oracle too)."""
    calls, setup = json.loads(row.test_cases), json.loads(row.setup_sql)
    trace = workspace.run(setup, row.reference_code, calls)
    if trace.install_error:
        return f"the reference does not install on Oracle: {trace.install_error}"
    return first_difference(json.loads(row.call_suite)["calls"], trace) or unstable(
        trace, workspace.run(setup, row.reference_code, calls)
    )


def unstable(first: OracleTrace, second: OracleTrace) -> str:
    """Where two fresh runs of the same reference differ, '' when they do not."""
    if second.install_error:
        return f"the reference installed once, then not: {second.install_error}"
    for index, (a, b) in enumerate(zip(first.calls, second.calls), start=1):
        if a.observed() != b.observed():
            return f"not deterministic on Oracle: call {index} differs between two fresh runs"
    return ""


def first_difference(recorded: list[dict], trace: OracleTrace) -> str:
    """Where the Oracle run first departs from PostgreSQL's recorded calls, '' when it does not."""
    fold = DIALECTS["oracle"].fold
    for index, (want, got) in enumerate(zip(recorded, trace.calls), start=1):
        error = want["error"]
        expected_error = ORACLE_ERROR.get(error, "some error") if error else "no error"
        if (got.error is None) != (error is None) or (error in ORACLE_ERROR and got.error != ORACLE_ERROR[error]):
            found = f"{got.error} ({got.message[:120]})" if got.error else "no error"
            raised = f"PostgreSQL raised {error or 'nothing'}"
            return f"call {index}: {raised}, expected {expected_error} on Oracle, got {found}"
        if len(got.lines) != len(want["lines"]):
            return f"call {index}: {len(want['lines'])} output lines on PostgreSQL, {len(got.lines)} on Oracle"
        for table, (rows, _) in sorted(want["state"].items()):
            oracle_rows = got.state.get(fold(table), (None, ""))[0]
            if oracle_rows != rows:
                return f"after call {index}: table {table} holds {rows} rows on PostgreSQL, {oracle_rows} on Oracle"
    return ""
