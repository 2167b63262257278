"""Per-task, per-dialect artifacts: setup DDL, scaffold, test block, prompt, replay functions.

`TaskEmitter` holds one typed task and one dialect. Everything it writes comes
from the dialect object, so the text of both targets follows one template:

- setup: the named types the signature needs, each once, in dependency order;
- scaffold: the exact signature with an empty body;
- test block: one anonymous block that runs every case, each in its own
  exception scope, and prints `PLBENCH_CASE <n> PASS|FAIL|ERROR <diagnostic>` and a
  closing `PLBENCH_SUMMARY <passed> OF <total>`;
- replay function: maps each case's arguments to a chosen output (the expected
  outputs for replay validation, other outputs for mutants).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from plbench import records
from plbench.dialects import DIALECTS, Dialect, TypeEnv
from plbench.dialects.base import Unit
from plbench.mbpp.extract import Comparison, TestCase
from plbench.mbpp.pytypes import Signature
from plbench.types import PyType

VERDICT = re.compile(r"^PLBENCH_CASE (\d+) (PASS|FAIL|ERROR)\b ?(.*)$")
SUMMARY = re.compile(r"^PLBENCH_SUMMARY (\d+) OF (\d+)$")


@dataclass(frozen=True)
class TypedTask:
    """A task with its test cases and its one inferred signature (dialect-neutral)."""

    subset: str
    source_id: str
    text: str
    entry_point: str
    signature: Signature
    cases: tuple[TestCase, ...]
    comparison: Comparison
    ints_fit_bigint: bool
    notes: tuple[str, ...] = ()

    @property
    def task_id(self) -> str:
        return records.task_id(self.subset, self.source_id)


def _walk_values(value: Any):
    yield value
    if isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _walk_values(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk_values(k)
            yield from _walk_values(v)


def ints_fit_bigint(cases: tuple[TestCase, ...]) -> bool:
    """Whether every int of the task fits PostgreSQL bigint (decided once per task)."""
    return all(
        -(2**63) <= v < 2**63
        for case in cases
        for part in (case.args, case.expected)
        for v in _walk_values(part)
        if isinstance(v, int) and not isinstance(v, bool)
    )


def holds_empty_string(cases: tuple[TestCase, ...]) -> bool:
    return any(v == "" for case in cases for part in (case.args, case.expected) for v in _walk_values(part))


class TaskEmitter:
    def __init__(self, task: TypedTask, dialect: Dialect | str):
        self.task = task
        self.dialect = DIALECTS[dialect] if isinstance(dialect, str) else dialect
        self.env = self._new_env(task.comparison.atol, task.comparison.rtol)
        taken: set[str] = set()
        self.renamed: dict[str, str] = {}
        self.function_name = self._identifier(task.entry_point, taken, function=True)
        self.params = [(self._identifier(name, taken), t) for name, t in task.signature.params]
        self.sql_params = tuple((ident, self.dialect.sql_type(t, self.env)) for ident, t in self.params)
        self.sql_returns = self.dialect.sql_type(task.signature.returns, self.env)
        self._literals: dict[tuple[int, int], tuple[Any, PyType, str]] = {}  # see literal()

    def _new_env(self, atol: float, rtol: float) -> TypeEnv:
        return TypeEnv(int_sql=self.dialect.int_type(self.task.ints_fit_bigint), atol=atol, rtol=rtol)

    def _identifier(self, name: str, taken: set[str], function: bool = False) -> str:
        ident, why = self.dialect.identifier(name, taken, function)
        if why:
            self.renamed[name] = ident
        return ident

    # ---- artifacts ---------------------------------------------------------
    def setup_statements(self) -> list[str]:
        return list(self.env.types.values())

    def scaffold(self) -> str:
        unit = Unit(self.function_name, self.sql_params, self.sql_returns, self.dialect.scaffold_body())
        return self.dialect.create_function(unit, replace=True)

    def literal(self, value: Any, t: PyType) -> str:
        """`value` as a literal of type `t`, each value object written once: the test block, the replay
        function and its mutants share the arguments, and most mutant outputs are other cases' outputs
        (mbpp_plus/630 writes 1.3 MB of literals a function). A literal's text depends on the value, its
        type and the int spelling alone, the same in every env of the task; the types it names are the
        signature's, registered in self.env by sql_type already."""
        key = (id(value), id(t))  # by identity: hashing a nested type or value costs as much as writing it
        known = self._literals.get(key)
        if known is None or known[0] is not value or known[1] is not t:  # kept alive: their ids are not reused
            known = self._literals[key] = (value, t, self.dialect.literal(value, t, self.env))
        return known[2]

    def literals(self, case: TestCase) -> list[str]:
        return [self.literal(v, t) for v, (_, t) in zip(case.args, self.params)]

    def arguments(self, case: TestCase) -> list[str]:
        """The case's arguments as literals cast to the parameters' types (what the grader calls with)."""
        return [self.dialect.typed_argument(lit, sql) for lit, (_, sql) in zip(self.literals(case), self.sql_params)]

    def call(self, case: TestCase) -> str:
        return f"{self.function_name}({', '.join(self.arguments(case))})"

    def test_block_statements(self, first_failure_ends: bool = False) -> list[str]:
        """Helper statements (PostgreSQL pg_temp functions) followed by the one anonymous block. With
        `first_failure_ends`, the block returns at the first case not passing, before its summary (a
        mutant's replay: only whether every case passes counts, parse_verdicts(...).all_passed)."""
        d, ret = self.dialect, self.task.signature.returns
        emit = d.emit_line
        fail_end, error_end = ("\n      RETURN;", "\n    RETURN;") if first_failure_ends else ("", "")
        cases = []
        for n, case in enumerate(self.task.cases, start=1):
            expected = self.literal(case.expected, ret)
            cases.append(
                f"  BEGIN\n    v_expected := {expected};\n    v_actual := {self.call(case)};\n"
                f"    IF {d.eq(ret, 'v_actual', 'v_expected', self.env)} THEN\n"
                f"      {emit(repr_sql(f'PLBENCH_CASE {n} PASS'))}\n      v_passed := v_passed + 1;\n"
                f"    ELSE\n      {emit(repr_sql(f'PLBENCH_CASE {n} FAIL'))}{fail_end}\n"
                f"    END IF;\n  EXCEPTION WHEN OTHERS THEN\n"
                f"    {emit(d.concat(repr_sql(f'PLBENCH_CASE {n} ERROR '), d.error_text()))}{error_end}\n  END;"
            )
        total = len(self.task.cases)
        summary = emit(d.concat(repr_sql("PLBENCH_SUMMARY "), "v_passed", repr_sql(f" OF {total}")))
        variables = (
            f"  v_actual {d.local_var(ret, self.env)};\n  v_expected {d.local_var(ret, self.env)};\n"
            "  v_passed INTEGER := 0;"
        )
        declarations = "\n".join([variables, *d.nested_helpers(self.env).splitlines()])
        block = d.anonymous_block(declarations, "\n".join(cases) + f"\n  {summary}")
        return d.harness_prelude(self.env) + [block]

    def replay_function(self, outputs: list[Any]) -> str:
        """A function with the task's signature returning outputs[i] for the arguments of case i."""
        d, ret = self.dialect, self.task.signature.returns
        exact = self._new_env(0.0, 0.0)  # arguments are matched exactly, whatever the result tolerance
        rows = [(self.literals(case), self.literal(output, ret)) for case, output in zip(self.task.cases, outputs)]
        body, declarations = d.replay_body(self.params, self.sql_returns, rows, exact)
        unit = Unit(self.function_name, self.sql_params, self.sql_returns, body, declarations, d.replay_settings)
        return d.create_function(unit, replace=True)

    def script(self, statements: list[str]) -> str:
        """Statements joined the way the dialect's command-line client runs them."""
        return self.dialect.statement_separator().join(statements) + self.dialect.statement_separator().rstrip(" ")

    def signature_json(self) -> str:
        sig = self.task.signature
        return json.dumps(
            {
                "entry_point": self.task.entry_point,
                "function": self.function_name,
                "params": [
                    {"name": name, "identifier": ident, "python_type": t.describe(), "sql_type": sql}
                    for (name, t), (ident, sql) in zip(sig.params, self.sql_params)
                ],
                "returns": {"python_type": sig.returns.describe(), "sql_type": self.sql_returns},
                "renamed": self.renamed,
            },
            sort_keys=True,
        )

    def test_cases_json(self) -> str:
        from plbench.values import encode

        return json.dumps(
            [
                {"args": encode(list(c.args)), "expected": encode(c.expected), "origin": c.origin}
                for c in self.task.cases
            ],
            sort_keys=True,
            ensure_ascii=False,
            allow_nan=False,
        )

    def prompt(self) -> str:
        d, task = self.dialect, self.task
        setup = self.script(self.setup_statements()) if self.env.types else "(no setup: only built-in types)"
        example = task.cases[0]
        rules = [
            f"Write one {d.display_name} {d.language} function `{self.function_name}` with exactly the signature of "
            "the scaffold below; reply with its complete CREATE OR REPLACE FUNCTION statement.",
            "Return the result; do not print it. Do not create, alter or drop other objects.",
            f"Python types map to {d.display_name} types as the signature shows; lists and tuples are ordered.",
        ]
        if task.signature.returns.kind == "set" or task.comparison.unordered:
            rules.append("The result is compared as a set: element order does not matter.")
        if any(x.kind == "float" for t in task.signature.all_types() for x in t.walk()):
            rules.append(
                f"Floating-point results are compared with |actual - expected| <= "
                f"{task.comparison.atol!r} + {task.comparison.rtol!r} * |expected|."
            )
        if any(x.kind == "json" for t in task.signature.all_types() for x in t.walk()):
            rules.append(
                "Values of mixed shapes are JSON documents: Python lists and tuples as arrays, dicts as "
                "objects; they are compared as JSON values."
            )
        if any(x.kind == "variant" for t in task.signature.all_types() for x in t.walk()):
            rules.append(
                "Values of mixed scalar kinds are tagged: `tag` names the kind ('int', 'float', 'str', "
                "'bool') and the field of that kind holds the value."
            )
        if d.empty_string_is_null and holds_empty_string(task.cases):
            rules.append(f"In {d.display_name} an empty string is NULL: the tests treat '' and NULL alike.")
        if self.renamed:
            rules.append(
                "Renamed identifiers (reserved words or length limits): "
                + ", ".join(f"{k} -> {v}" for k, v in sorted(self.renamed.items()))
                + "."
            )
        return "\n".join(
            [
                task.text.strip(),
                "",
                f"Example: {self.call(example)} returns "
                f"{d.literal(example.expected, task.signature.returns, self.env)}",
                "",
                "Scaffold:",
                self.scaffold(),
                "",
                "Setup already run in the target schema:",
                setup,
                "",
                "Rules:",
                *[f"- {r}" for r in rules],
            ]
        )


def repr_sql(text: str) -> str:
    """A SQL string literal for harness text (ASCII, no quotes inside)."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class BlockVerdict:
    passed: int
    total: int
    verdicts: dict[int, str]
    complete: bool  # the summary line was printed

    @property
    def all_passed(self) -> bool:
        return self.complete and self.passed == self.total and all(v == "PASS" for v in self.verdicts.values())


def parse_verdicts(lines: list[str], total: int) -> BlockVerdict:
    verdicts, passed, complete = {}, 0, False
    for line in lines:
        if m := VERDICT.match(line):
            verdicts[int(m.group(1))] = f"{m.group(2)} {m.group(3)}".strip()
        elif m := SUMMARY.match(line):
            passed, complete = int(m.group(1)), int(m.group(2)) == total
    return BlockVerdict(passed, total, verdicts, complete and len(verdicts) == total)
