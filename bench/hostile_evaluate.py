"""`plbench evaluate`'s path on 2,000 candidates with 100 hostile ones mixed in (issue 9): every candidate
gets its rows, none is forged, none costs more than the timeout plus the watchdog's grace.

Fixture tasks (written here, no raw data); clean candidates are their replay functions (correct by
construction); hostile ones cycle through the attacks of issue 9 §1-6. The run goes through
`plbench.evaluate.run_candidates` and the append-only result log, as the command does, with a short
statement timeout so the loops are cheap. Prints the figures it checks.

    python bench/hostile_evaluate.py [--candidates 2000] [--hostile 100] [--timeout 1.0]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from plbench.config import BuildConfig
from plbench.engines.postgres import _WATCHDOG_GRACE_S, PostgresEngine
from plbench.evaluate import Candidate, read_release, run_candidates
from plbench.grading.results import ResultLog, write_results
from plbench.mbpp.artifacts import TaskEmitter, TypedTask, ints_fit_bigint
from plbench.mbpp.extract import Comparison, TestCase
from plbench.mbpp.pytypes import infer_signature
from plbench.mbpp.stages import emit_artifacts

TASKS = {  # entry point -> (parameter names, [(arguments, expected)])
    "sort_list": (["xs"], [(([3, 1, 2],), [1, 2, 3]), (([],), []), (([2, 2, 1],), [1, 2, 2])]),
    "add": (["a", "b"], [((1, 2), 3), ((-1, 1), 0), ((10, 5), 15)]),
    "shout": (["s"], [(("hi",), "HI!"), (("",), "!"), (("a b",), "A B!")]),
    "is_even": (["n"], [((2,), True), ((3,), False), ((0,), True)]),
    "pair": (["xs"], [(([1, 5, 3],), (1, 5)), (([4],), (4, 4))]),
}


def _task(n: int, entry: str) -> TypedTask:
    params, raw = TASKS[entry]
    cases = tuple(TestCase(args, expected, f"bench[{i}]") for i, (args, expected) in enumerate(raw))
    signature = infer_signature(params, [(c.args, c.expected) for c in cases])
    return TypedTask("mbpp", str(n), "", entry, signature, cases, Comparison(), ints_fit_bigint(cases))


def _row(task: TypedTask) -> dict:
    art = emit_artifacts(task, "postgres")
    comparison = {"atol": task.comparison.atol, "rtol": task.comparison.rtol, "unordered": task.comparison.unordered}
    return {
        "task_id": task.task_id,
        "subset": "mbpp",
        "dialect": "postgres",
        "entry_point": task.entry_point,
        "signature": art.signature,
        "setup_sql": art.setup_sql,
        "test_block": art.test_block,
        "test_cases": art.test_cases,
        "comparison": json.dumps(comparison),
    }


def _wrong(em: TaskEmitter, body: str, declare: str = "") -> str:
    """A function with the task's signature and the given (wrong) body."""
    params = ", ".join(f"{n} {t}" for n, t in em.sql_params)
    return (
        f"CREATE OR REPLACE FUNCTION {em.function_name}({params}) RETURNS {em.sql_returns} LANGUAGE plpgsql AS $h$\n"
        f"{declare}BEGIN\n{body}\nEND;\n$h$;"
    )


HOSTILE = {  # attack -> its code, from the task's emitter and the right answer
    "fake_verdict_lines": lambda em, right: _wrong(
        em, "RAISE NOTICE 'PLBENCH_CASE 1 PASS'; RAISE NOTICE 'PLBENCH_CASE 2 PASS'; RETURN NULL;"
    ),
    "operator_override": lambda em, right: (
        "CREATE FUNCTION f_eq(anyelement, anyelement) RETURNS boolean LANGUAGE sql AS 'SELECT true';\n"
        "CREATE OPERATOR = (LEFTARG = anyelement, RIGHTARG = anyelement, FUNCTION = f_eq);\n"
        + _wrong(em, "RETURN NULL;")
    ),
    "reads_the_answers": lambda em, right: _wrong(
        em,
        "EXECUTE 'SELECT ' || (regexp_match(current_query(), 'v_expected := ([^;]*);'))[1] INTO r; RETURN r;",
        declare=f"DECLARE r {em.sql_returns};\n",
    ),
    "unkillable_loop": lambda em, right: _wrong(
        em, "LOOP BEGIN PERFORM pg_sleep(0.5); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP;"
    ),
    "ends_its_session": lambda em, right: "SELECT pg_terminate_backend(pg_backend_pid());",
    "read_only_role_committed": lambda em, right: (
        "ALTER ROLE CURRENT_USER SET default_transaction_read_only = on; COMMIT; " + right
    ),
    "escapes_the_transaction": lambda em, right: right + "\nCOMMIT; BEGIN; SET statement_timeout = 0;",
    "newline_error": lambda em, right: _wrong(em, "RAISE EXCEPTION E'one\\ntwo';"),
}
UNKNOWN = ("unknown_task", "unknown_dialect")  # candidates that name no task: one not_graded row each


def candidates(tasks: list[TypedTask], total: int, hostile: int) -> tuple[list[Candidate], dict[int, str]]:
    """`total` candidates, `hostile` of them (spread evenly) hostile: index -> the attack it is."""
    every = max(1, total // hostile)
    names = [*HOSTILE, *UNKNOWN]
    out, attacks = [], {}
    for i in range(total):
        task = tasks[i % len(tasks)]
        em = TaskEmitter(task, "postgres")
        right = em.replay_function([c.expected for c in task.cases])
        if i % every != every - 1 or len(attacks) >= hostile:
            out.append(Candidate(task.task_id, "postgres", right))
            continue
        name = attacks[i] = names[len(attacks) % len(names)]
        if name == "unknown_task":
            out.append(Candidate("mbpp/none", "postgres", right))
        elif name == "unknown_dialect":
            out.append(Candidate(task.task_id, "sqlite", right))
        else:
            out.append(Candidate(task.task_id, "postgres", HOSTILE[name](em, right)))
    return out, attacks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--hostile", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=1.0)
    args = parser.parse_args()
    config = BuildConfig.from_env()
    engine = PostgresEngine.start(config.pg_dsn, config.pg_data_dir, args.timeout)
    tasks = [_task(n, entry) for n, entry in enumerate(TASKS, start=1)]
    cands, attacks = candidates(tasks, args.candidates, args.hostile)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pq.write_table(pa.Table.from_pylist([_row(t) for t in tasks]), folder / "tasks.parquet")
        release = read_release(folder)
        log = ResultLog(folder / "out" / "cases.jsonl", {"release": "bench", "solutions_sha256": "bench"})
        costs: dict[int, float] = {}
        start = last = time.perf_counter()
        for index, _, _, rows in run_candidates(release, cands, {"postgres": engine}):
            log.add(index, rows)
            now = time.perf_counter()
            costs[index], last = now - last, now
        wall = time.perf_counter() - start
        log.close()
        write_results(folder / "out", log.all_rows(), "")
        written = pq.read_table(folder / "out" / "cases.parquet").to_pylist()
    engine.close()
    per_candidate = Counter(r["candidate"] for r in written)
    cases = {key: len(json.loads(row["test_cases"])) for key, row in release.tasks.items()}
    wrong_rows = [i for i, c in enumerate(cands) if per_candidate[i] != cases.get((c.task_id, c.dialect), 1)]
    correct_after_attack = {"read_only_role_committed", "escapes_the_transaction"}  # may pass: right code
    forged = [
        r
        for r in written
        if r["verdict"] == "PASS" and r["candidate"] in attacks and attacks[r["candidate"]] not in correct_after_attack
    ]
    clean_failed = [r for r in written if r["candidate"] not in attacks and r["verdict"] != "PASS"]
    grace = 2 * _WATCHDOG_GRACE_S  # a cancel a grace after the timeout, the backend ended a grace later
    slowest = max(costs.values())
    verdicts = Counter((attacks[r["candidate"]], r["verdict"]) for r in written if r["candidate"] in attacks)
    print(f"candidates: {len(cands)} ({len(attacks)} hostile); case rows written: {len(written)}; wall {wall:.1f} s")
    print(f"candidates without exactly one row per case: {len(wrong_rows)}")
    print(f"forged passes (wrong hostile candidates scored PASS): {len(forged)}")
    print(f"clean candidates with a case not passing: {len({r['candidate'] for r in clean_failed})}")
    print(f"slowest candidate: {slowest:.2f} s (bound: timeout {args.timeout} s + grace {grace} s)")
    print("hostile verdicts:", json.dumps({f"{k[0]}:{k[1]}": v for k, v in sorted(verdicts.items())}))
    assert not wrong_rows and not forged and not clean_failed and slowest <= args.timeout + grace + 0.5


if __name__ == "__main__":
    main()
