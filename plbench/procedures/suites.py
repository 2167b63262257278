"""Call suites: ordered calls from one initial state, their arguments drawn from the database itself.

Per parameter the candidates are the gold's own literal, the column's smallest, middle and largest
values, a value that matches nothing, and NULL when the column allows it. The reference runs them in
order; only calls that change the state or produce output (a raised error counts) are kept. What each
call must do is whatever the reference did: the recorded error, output lines and per-table state. The
reference must then give the same trace on two fresh runs and on a physically shuffled copy.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass

from plbench.procedures.archetypes import Seed
from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.lift import Param
from plbench.procedures.workspace import CallResult, Trace, Workspace

MIN_CALLS = 3
MAX_CANDIDATE_CALLS = 12
NO_MATCH_TEXT = "zz plbench: matches nothing"


class SuiteRejected(ValueError):
    def __init__(self, reason_code: str, detail: str):
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


@dataclass(frozen=True)
class CallSuite:
    args: tuple[tuple, ...]  # Python argument values per call
    expected: tuple[CallResult, ...]  # what the reference did, call by call
    initial: dict[str, tuple[int, str]]

    def to_json(self, seed: Seed) -> dict:
        return {
            "calls": [
                {
                    "call": {d: call_text(seed, args, d) for d in seed.dialects},
                    "args": [_json_value(a) for a in args],
                    "error": r.error,
                    "lines": list(r.lines),
                    "state": {t: list(v) for t, v in sorted(r.state.items())},
                }
                for args, r in zip(self.args, self.expected)
            ],
            "initial_state": {t: list(v) for t, v in sorted(self.initial.items())},
        }


def _json_value(value):
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def literal(value, param: Param, dialect: str) -> str:
    """An argument value as the dialect's call takes it (typed, so overloads cannot compete)."""
    text = PROCEDURE_TEXT[dialect]
    if value is None:
        raw = "NULL"
    elif isinstance(value, str):
        raw = "'" + value.replace("'", "''") + "'"
    elif isinstance(value, dt.datetime):
        raw = text.timestamp_literal.format(value=value.isoformat(sep=" "))
    elif isinstance(value, dt.date):
        raw = text.date_literal.format(value=value.isoformat())
    elif isinstance(value, bool):
        raw = str(int(value))
    else:
        raw = repr(value) if isinstance(value, float) else str(value)
    return text.argument.format(literal=raw, type=param.type[dialect])


def call_text(seed: Seed, args: tuple, dialect: str) -> str:
    rendered = ", ".join(literal(v, p, dialect) for v, p in zip(args, seed.procedure.params))
    return PROCEDURE_TEXT[dialect].call.format(name=seed.procedure.name, args=rendered)


def _no_match(values: list, family: str):
    if family == "text":
        return NO_MATCH_TEXT
    if not values:
        return 0
    top = values[-1]
    if isinstance(top, dt.datetime):
        return top + dt.timedelta(days=1)
    if isinstance(top, dt.date):
        return top + dt.timedelta(days=1)
    return top + 1


def column_values(workspace: Workspace, param: Param) -> list:
    """The column's distinct non-NULL values in order (at most a few hundred, spread over the range);
    none for a parameter typed by itself (its candidates are its gold value and the no-match value)."""
    if not param.table["postgres"]:
        return []
    q = (
        f"SELECT DISTINCT {param.column['postgres']} FROM {param.table['postgres']} "
        f"WHERE {param.column['postgres']} IS NOT NULL ORDER BY 1 LIMIT 500"
    )
    result = workspace.copy_read(q)
    return [r[0] for r in result.rows] if result.ok else []


def candidate_args(seed: Seed, workspace: Workspace) -> list[tuple]:
    gold = tuple(p.gold_value for p in seed.procedure.params)
    out = [gold]
    for i, param in enumerate(seed.procedure.params):
        values = column_values(workspace, param)
        picks = [values[0], values[len(values) // 2], values[-1]] if values else []
        picks.append(_no_match(values, param.family))
        if param.nullable:
            picks.append(None)
        for value in picks:
            args = gold[:i] + (value,) + gold[i + 1 :]
            if args not in out:
                out.append(args)
    return out[:MAX_CANDIDATE_CALLS]


def _informative(before: dict, result: CallResult) -> bool:
    return result.error is not None or bool(result.lines) or result.state != before


def first_difference(a: Trace, b: Trace) -> str:
    """'' when the two traces are the same, else which call differs first."""
    if a.install_error != b.install_error:
        return f"install: {a.install_error} vs {b.install_error}"
    for i, (x, y) in enumerate(zip(a.calls, b.calls), start=1):
        if x.observed() != y.observed():
            return f"call {i} ({x.call}) differs"
    return "" if len(a.calls) == len(b.calls) else "different number of calls"


def run_seed(workspace: Workspace, seed: Seed, calls: list[str], procedure: str | None = None, **kw) -> Trace:
    """A run of the reference, or of `procedure`: one the build made from the seed's model (a mutant, a
    trivial candidate, an adapter's variant), never a candidate's. Its DML writes only the seed's tables,
    and nothing in the copy (no trigger, no foreign key, no rule) carries a write to another, so only
    they are read after each call; the other tables keep their initial state."""
    text = procedure if procedure is not None else seed.procedure.render("postgres")
    return workspace.run_built(seed.setup["postgres"], text, calls, seed.writes, **kw)


def explore(seed: Seed, workspace: Workspace) -> tuple[list[tuple], Trace]:
    """The candidate calls' arguments, and the reference's run of them all from the initial state."""
    candidates = candidate_args(seed, workspace)
    return candidates, run_seed(workspace, seed, [call_text(seed, a, "postgres") for a in candidates])


def build_suite(
    seed: Seed, workspace: Workspace, shuffled: Workspace, explored: tuple[list[tuple], Trace] | None = None
) -> CallSuite:
    """The seed's call suite; SuiteRejected when too few calls matter or the reference is not deterministic
    (`explored`: `explore`'s answer when it was asked already)."""
    candidates, trace = explored or explore(seed, workspace)
    if trace.install_error:
        raise SuiteRejected("reference_does_not_install", trace.install_error)
    kept, before = [], trace.initial
    for args, result in zip(candidates, trace.calls):
        if _informative(before, result):
            kept.append((args, result))
        before = result.state
    if len(kept) < MIN_CALLS:
        raise SuiteRejected("suite_too_short", f"{len(kept)} of {len(candidates)} calls change state or output")
    # The calls left out changed nothing, so the kept ones saw the same states as in a run of them alone:
    # this run is the first fresh run of the suite (a reference whose left-out calls had hidden effects
    # differs from the next run, and is rejected as nondeterministic).
    first = Trace(initial=trace.initial, calls=[result for _, result in kept])
    return record_suite(seed, [args for args, _ in kept], workspace, shuffled, first)


def record_suite(
    seed: Seed, args: list[tuple], workspace: Workspace, shuffled: Workspace, first: Trace | None = None
) -> CallSuite:
    """The reference's trace on these calls, once it is the same on two fresh runs and a shuffled copy
    (`first`: the first fresh run when one was made already)."""
    calls = [call_text(seed, a, "postgres") for a in args]
    first = first or run_seed(workspace, seed, calls)
    if all(r.error is not None for r in first.calls):
        raise SuiteRejected("suite_only_errors", "every call raises an error")
    second, third = run_seed(workspace, seed, calls), run_seed(shuffled, seed, calls)
    for label, other in (("a second fresh run", second), ("a physically shuffled copy", third)):
        if why := first_difference(first, other):
            raise SuiteRejected("nondeterministic", f"{label}: {why}")
    return CallSuite(tuple(args), tuple(first.calls), first.initial)


def wide_args(seed: Seed, workspace: Workspace, limit: int = 40) -> list[tuple]:
    """More calls to try against surviving mutants: each parameter over its column's values."""
    gold = tuple(p.gold_value for p in seed.procedure.params)
    out = []
    for i, param in enumerate(seed.procedure.params):
        values = column_values(workspace, param)
        step = max(1, len(values) // limit)
        for value in values[::step]:
            out.append(gold[:i] + (value,) + gold[i + 1 :])
    return out
