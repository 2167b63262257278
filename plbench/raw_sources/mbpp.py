"""Readers for MBPP and MBPP+ raw files: JSONL in, `RawProblem`s and `Rejection`s out.

A bad line never stops a reader: it becomes a task-level Rejection at stage
"ingest" whose detail names the file and line, so the counts reconcile
(records in the file = problems + rejections, blank lines aside).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from plbench.raw_sources.fetch import RawSourceError
from plbench.records import RawProblem, Rejection

STAGE = "ingest"
MALFORMED = "malformed_record"
DUPLICATE = "duplicate_id"

_MBPP_PLUS_ID = re.compile(r"Mbpp/\d+")
_ASSERT_LINE = re.compile(r"assert\b")
# Used only to name the record in a rejection when the line is not parseable JSON.
_RAW_TASK_ID = re.compile(r'"task_id"\s*:\s*("(?:[^"\\]|\\.)*"|\d+)')
_QUOTES = ('"""', "'''")


class _Malformed(Exception):
    """A record-level defect; always turned into a Rejection by `_read_jsonl`."""


Builder = Callable[[dict[str, Any], int], RawProblem]


# ---------------------------------------------------------------- public readers


def read_mbpp(
    path: Path, relative_path: str, sanitized_path: Path | None = None
) -> tuple[list[RawProblem], list[Rejection]]:
    """Read `mbpp.jsonl`; with `sanitized_path`, mark which problems the sanitized subset lists."""
    sanitized = _load_sanitized(sanitized_path) if sanitized_path is not None else None

    def build(obj: dict[str, Any], line: int) -> RawProblem:
        return _mbpp_problem(obj, line, relative_path, sanitized)

    return _read_jsonl(Path(path), relative_path, "mbpp", _mbpp_id, build)


def read_mbpp_plus(path: Path, relative_path: str) -> tuple[list[RawProblem], list[Rejection]]:
    """Read an MBPP+ JSONL release (task_id "Mbpp/N", base/plus inputs as argument lists)."""

    def build(obj: dict[str, Any], line: int) -> RawProblem:
        return _mbpp_plus_problem(obj, line, relative_path)

    return _read_jsonl(Path(path), relative_path, "mbpp_plus", _mbpp_plus_id, build)


# ---------------------------------------------------------------- shared JSONL loop


def _read_jsonl(
    path: Path,
    relative_path: str,
    subset: str,
    id_of: Callable[[Any], str | None],
    build: Builder,
) -> tuple[list[RawProblem], list[Rejection]]:
    problems: list[RawProblem] = []
    rejections: list[Rejection] = []
    first_line: dict[str, int] = {}
    for line, obj in _json_objects(path, relative_path, subset, rejections):
        try:
            problem = build(obj, line)
        except _Malformed as exc:
            source_id = id_of(obj) or f"line:{line}"
            rejections.append(_reject(subset, source_id, MALFORMED, relative_path, line, str(exc)))
            continue
        if problem.source_id in first_line:
            # The first occurrence wins so that appending to a file never changes earlier problems.
            detail = f"task_id {problem.source_id} already read at line {first_line[problem.source_id]}"
            rejections.append(_reject(subset, problem.source_id, DUPLICATE, relative_path, line, detail))
            continue
        first_line[problem.source_id] = line
        problems.append(problem)
    return problems, rejections


def _json_objects(
    path: Path, relative_path: str, subset: str, rejections: list[Rejection]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) per non-blank line; undecodable lines go to `rejections`."""
    # Bytes, decoded line by line: one bad byte costs one record, not the whole file.
    with open(path, "rb") as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            problem = None
            try:
                text = raw.decode("utf-8")
                obj = json.loads(text)
            except UnicodeDecodeError as exc:
                text = raw.decode("utf-8", errors="replace")
                problem = f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            except json.JSONDecodeError as exc:
                problem = f"invalid JSON ({exc.msg} at column {exc.colno})"
            else:
                if isinstance(obj, dict):
                    yield line, obj
                    continue
                problem = f"expected a JSON object, got {_type_name(obj)}"
            source_id = _raw_task_id(text) or f"line:{line}"
            rejections.append(_reject(subset, source_id, MALFORMED, relative_path, line, problem))


def _reject(subset: str, source_id: str, code: str, relative_path: str, line: int, problem: str) -> Rejection:
    return Rejection(
        subset=subset,
        source_id=source_id,
        stage=STAGE,
        reason_code=code,
        detail=f"{relative_path} line {line}: {problem}",
    )


def _raw_task_id(text: str) -> str | None:
    """Best-effort task_id from text that did not parse, so the rejection names the task."""
    match = _RAW_TASK_ID.search(text)
    if match is None:
        return None
    try:
        return str(json.loads(match.group(1))) or None
    except json.JSONDecodeError:
        return None


# ---------------------------------------------------------------- field checks


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _field(obj: dict[str, Any], name: str) -> Any:
    if name not in obj:
        raise _Malformed(f"missing field {name!r}")
    return obj[name]


def _str_field(obj: dict[str, Any], name: str, non_empty: bool = False) -> str:
    value = _field(obj, name)
    if not isinstance(value, str):
        raise _Malformed(f"field {name!r} must be a string, got {_type_name(value)}")
    if non_empty and not value.strip():
        raise _Malformed(f"field {name!r} is empty")
    return value


def _str_list_field(obj: dict[str, Any], name: str) -> list[str]:
    value = _field(obj, name)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Malformed(f"field {name!r} must be a list of strings, got {_type_name(value)}")
    return list(value)


def _number_field(obj: dict[str, Any], name: str) -> float:
    value = _field(obj, name)
    # bool is an int subclass in Python but never a meaningful tolerance.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Malformed(f"field {name!r} must be a number, got {_type_name(value)}")
    return float(value)


def _cases_field(obj: dict[str, Any], name: str, quirks: list[str]) -> list[list[Any]]:
    """Test inputs: a list of cases, each case the list of call arguments."""
    value = _field(obj, name)
    if value == {}:
        # MBPP+ v0.1.0 serialises one empty input set as {} (Mbpp/793 plus_input):
        # same meaning as [], so it is read as "no cases" and the fact is kept.
        quirks.append(f"{name} was {{}} in the raw file, read as []")
        return []
    if not isinstance(value, list):
        raise _Malformed(f"field {name!r} must be a list of argument lists, got {_type_name(value)}")
    for index, case in enumerate(value):
        if not isinstance(case, list):
            raise _Malformed(f"field {name!r}: case {index} must be a list of arguments, got {_type_name(case)}")
    return value


# ---------------------------------------------------------------- MBPP


def _mbpp_id(obj: Any) -> str | None:
    task_id = obj.get("task_id") if isinstance(obj, dict) else None
    if isinstance(task_id, bool) or not isinstance(task_id, (int, str)):
        return None
    return str(task_id) or None


def _mbpp_problem(obj: dict[str, Any], line: int, relative_path: str, sanitized: dict[int, str] | None) -> RawProblem:
    task_id = _field(obj, "task_id")
    if isinstance(task_id, bool) or not isinstance(task_id, int):
        raise _Malformed(f"field 'task_id' must be an integer, got {_type_name(task_id)}")
    # challenge_test_list is not used downstream, so it may be absent, but not of the wrong type.
    if "challenge_test_list" in obj:
        _str_list_field(obj, "challenge_test_list")
    return RawProblem(
        subset="mbpp",
        source_id=str(task_id),
        source_file=relative_path,
        line=line,
        text=_str_field(obj, "text", non_empty=True),
        entry_point=None,
        reference_code=_str_field(obj, "code", non_empty=True),
        test_list=_str_list_field(obj, "test_list"),
        test_setup_code=_str_field(obj, "test_setup_code"),
        extra=_sanitized_extra(task_id, sanitized),
    )


def _sanitized_extra(task_id: int, sanitized: dict[int, str] | None) -> dict[str, Any]:
    if sanitized is None:
        return {}
    if task_id in sanitized:
        return {"in_sanitized": True, "sanitized_prompt": sanitized[task_id]}
    return {"in_sanitized": False}


def _load_sanitized(path: Path) -> dict[int, str]:
    """task_id -> prompt from sanitized-mbpp.json (a JSON array).

    This file only annotates MBPP problems, it has no records of its own to
    reject, so a broken file is a hard error rather than "nothing is sanitized".
    """
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RawSourceError(f"{path}: not a valid UTF-8 JSON file: {exc}") from exc
    if not isinstance(data, list):
        raise RawSourceError(f"{path}: expected a JSON array, got {_type_name(data)}")
    prompts: dict[int, str] = {}
    for index, entry in enumerate(data):
        task_id = entry.get("task_id") if isinstance(entry, dict) else None
        prompt = entry.get("prompt") if isinstance(entry, dict) else None
        if isinstance(task_id, bool) or not isinstance(task_id, int) or not isinstance(prompt, str):
            raise RawSourceError(f"{path}: entry {index} lacks an integer task_id and a string prompt")
        prompts[task_id] = prompt
    return prompts


# ---------------------------------------------------------------- MBPP+


def _mbpp_plus_id(obj: Any) -> str | None:
    task_id = obj.get("task_id") if isinstance(obj, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None


def _mbpp_plus_problem(obj: dict[str, Any], line: int, relative_path: str) -> RawProblem:
    task_id = _str_field(obj, "task_id")
    if not _MBPP_PLUS_ID.fullmatch(task_id):
        raise _Malformed(f"field 'task_id' must look like 'Mbpp/N', got {task_id!r}")
    prompt = _str_field(obj, "prompt")
    text = prompt_text(prompt)
    if not text:
        raise _Malformed("field 'prompt' holds no task description")
    asserts, setup = split_assertion(_str_field(obj, "assertion"))
    quirks: list[str] = []
    base_input = _cases_field(obj, "base_input", quirks)
    plus_input = _cases_field(obj, "plus_input", quirks)
    extra: dict[str, Any] = {"contract": _str_field(obj, "contract"), "prompt": prompt}
    if quirks:
        extra["quirks"] = quirks
    return RawProblem(
        subset="mbpp_plus",
        source_id=task_id,
        source_file=relative_path,
        line=line,
        text=text,
        entry_point=_str_field(obj, "entry_point", non_empty=True),
        reference_code=_str_field(obj, "canonical_solution", non_empty=True),
        test_list=asserts,
        test_setup_code=setup,
        base_input=base_input,
        plus_input=plus_input,
        atol=_number_field(obj, "atol"),
        extra=extra,
    )


def prompt_text(prompt: str) -> str:
    """The task description inside an MBPP+ prompt docstring, without its example assert lines."""
    body = prompt.strip()
    for quote in _QUOTES:
        if len(body) >= 2 * len(quote) and body.startswith(quote) and body.endswith(quote):
            body = body[len(quote) : -len(quote)]
            break
    kept = [line for line in body.splitlines() if not _ASSERT_LINE.match(line.strip())]
    return "\n".join(kept).strip()


def split_assertion(assertion: str) -> tuple[list[str], str]:
    """(assert lines, other non-empty lines) of an MBPP+ `assertion` field.

    Ten tasks start with `import math` for their math.isclose asserts; that line
    goes to test_setup_code (as in MBPP) so the asserts stay runnable.
    """
    lines = [line.rstrip() for line in assertion.splitlines() if line.strip()]
    asserts = [line.strip() for line in lines if _ASSERT_LINE.match(line.strip())]
    # Setup keeps its indentation in case it ever holds a block (a helper def).
    setup = [line for line in lines if not _ASSERT_LINE.match(line.strip())]
    return asserts, "\n".join(setup)
