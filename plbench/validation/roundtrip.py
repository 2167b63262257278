"""Value round trip: every test value, encoded as a literal of its declared type, passed through
the database and read back, must decode to the Python value it came from.

This proves the literal codec the harness depends on. Per task, in one isolated session:
create an identity function per declared type (`plb_id_<n>(x T) RETURNS T`), then one block
that prints `to_jsonb(plb_id_<n>(<literal>))` for every argument and expected value of every
case. The printed JSON is decoded by the declared type back into a Python value and compared
with the original under the documented normalization: Python equality (1 == 1.0), NaN equal
to NaN, tuples and lists alike inside JSON-typed values, and `{}` equal to `set()` where the
signature made it a set.

PostgreSQL only for now: the Oracle side needs a serialization of object and collection types
that only a live server can confirm, and is recorded as not run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from plbench.compare import same
from plbench.engines.base import Engine
from plbench.mbpp.artifacts import TaskEmitter, TypedTask
from plbench.typed_json import decode


@dataclass(frozen=True)
class RoundTrip:
    task_id: str
    values: int
    equal: int
    mismatches: tuple[str, ...] = field(default=())  # "case 3 argument 1: sent ..., got ..."
    error: str = ""


def roundtrip_task(engine: Engine, task: TypedTask) -> RoundTrip:
    em = TaskEmitter(task, engine.dialect)
    d = em.dialect
    types = [t for _, t in em.params] + [task.signature.returns]
    identities = [f"plb_id_{n}" for n in range(len(types))]
    functions = [
        f"CREATE FUNCTION {name}(x {d.sql_type(t, em.env)}) RETURNS {d.sql_type(t, em.env)} LANGUAGE sql AS 'SELECT x';"
        for name, t in zip(identities, types)
    ]
    probes, expected = [], []
    for n, case in enumerate(task.cases, start=1):
        for i, (value, t) in enumerate(zip((*case.args, case.expected), types)):
            where = f"case {n} " + (f"argument {i + 1}" if i < len(case.args) else "expected value")
            echoed = f"to_jsonb({identities[i]}({d.literal(value, t, em.env)}))"
            probes.append(f"  RAISE NOTICE '%', coalesce({echoed}::text, 'null');")
            expected.append((where, value, t))
    block = d.anonymous_block("", "\n".join(probes))
    with engine.session() as session:
        setup = [session.execute(s) for s in em.setup_statements() + functions]
        result = session.execute(block)
    failed = next((r for r in [*setup, result] if not r.ok), None)
    if failed is not None:
        detail = failed.error.message if failed.error else "timed out"
        return RoundTrip(task.task_id, len(expected), 0, error=detail[:500])
    mismatches = []
    for (where, value, t), line in zip(expected, result.lines):
        got = decode(json.loads(line), t)
        if not same(value, got):
            mismatches.append(f"{where}: sent {value!r:.200}, got {got!r:.200}")
    return RoundTrip(task.task_id, len(expected), len(expected) - len(mismatches), tuple(mismatches))
