"""The emitted PL/pgSQL harness on a real PostgreSQL: it passes right answers and fails wrong ones.

Each test creates a function through the task's own scaffold signature and runs the
task's test block, then reads the per-case verdicts the block printed.
"""

import pytest

from plbench.mbpp.artifacts import TaskEmitter, parse_verdicts
from plbench.mbpp.extract import Comparison
from plbench.validation.mutants import mutants
from plbench.validation.replay import validate_task
from tests.helpers import typed_task


def run_block(engine, task, body: str, first_failure_ends: bool = False):
    """Verdicts of the test block against a function whose body is `body` (PL/pgSQL statements)."""
    em = TaskEmitter(task, "postgres")
    function = em.scaffold().replace("  -- Write the function body here.", body)
    with engine.session() as session:
        setup = [session.execute(s) for s in em.setup_statements() + [function]]
        assert all(r.ok for r in setup), [r.error for r in setup if not r.ok]
        *prelude, block = em.test_block_statements(first_failure_ends)
        assert all(session.execute(s).ok for s in prelude)
        result = session.execute(block)
    assert result.ok, result.error
    return parse_verdicts(result.lines, len(task.cases))


SORT_TASK = typed_task(["xs"], [(([3, 1, 2],), [1, 2, 3]), (([],), []), (([5, 5, 1],), [1, 5, 5])])


def test_a_correct_function_passes_every_case(pg_engine):
    verdict = run_block(pg_engine, SORT_TASK, "  RETURN ARRAY(SELECT x FROM unnest(xs) AS x ORDER BY x);")
    assert verdict.all_passed and verdict.passed == 3


@pytest.mark.parametrize(
    "body, expected",
    [
        ("  RETURN NULL;", {1: "FAIL", 2: "FAIL", 3: "FAIL"}),  # NULL is not an empty array, nor a value
        ("  RETURN ARRAY(SELECT x FROM unnest(xs) AS x ORDER BY x DESC);", {1: "FAIL", 2: "PASS", 3: "FAIL"}),
        ("  RETURN xs;", {1: "FAIL", 2: "PASS", 3: "FAIL"}),
    ],
)
def test_wrong_functions_fail_the_cases_they_get_wrong(pg_engine, body, expected):
    verdict = run_block(pg_engine, SORT_TASK, body)
    assert verdict.verdicts == expected and not verdict.all_passed


def test_a_raising_function_reports_error_per_case_and_the_block_goes_on(pg_engine):
    verdict = run_block(
        pg_engine, SORT_TASK, "  IF cardinality(xs) = 0 THEN RETURN xs; END IF;\n  RAISE EXCEPTION 'boom';"
    )
    assert verdict.verdicts[2] == "PASS"
    assert verdict.verdicts[1].startswith("ERROR P0001: boom") and verdict.complete


@pytest.mark.parametrize(
    "body, expected",
    [
        ("  RETURN ARRAY(SELECT x FROM unnest(xs) AS x ORDER BY x);", ["PASS", "PASS", "PASS"]),
        ("  RETURN NULL;", ["FAIL"]),
        ("  IF xs[1] = 3 THEN RETURN ARRAY[1, 2, 3]; END IF;\n  RAISE EXCEPTION 'boom';", ["PASS", "ERROR"]),
    ],
)
def test_the_mutants_block_ends_at_the_first_case_not_passing(pg_engine, body, expected):
    verdict = run_block(pg_engine, SORT_TASK, body, first_failure_ends=True)
    assert [verdict.verdicts[n].split(" ")[0] for n in sorted(verdict.verdicts)] == expected
    assert verdict.all_passed == verdict.complete == (len(expected) == 3)  # no summary once it ended


def test_float_results_are_compared_within_tolerance(pg_engine):
    task = typed_task(["r"], [((2.0,), 12.566370614359172)])
    assert run_block(pg_engine, task, "  RETURN 12.5663706;").all_passed  # within 1e-6 + 1e-7*|b|
    assert not run_block(pg_engine, task, "  RETURN 12.5663;").all_passed


def test_set_results_ignore_order_but_not_content(pg_engine):
    task = typed_task(["a", "b"], [(([3, 4, 5], [5, 4, 9]), {4, 5})], comparison=Comparison(unordered=True))
    assert run_block(pg_engine, task, "  RETURN ARRAY[5, 4];").all_passed
    assert not run_block(pg_engine, task, "  RETURN ARRAY[4];").all_passed
    assert not run_block(pg_engine, task, "  RETURN ARRAY[4, 4];").all_passed


def test_dict_results_ignore_key_order_and_compare_values(pg_engine):
    task = typed_task(["s"], [(("aab",), {"a": 2, "b": 1})])
    ok = "  RETURN ARRAY[ROW('b', 1)::plb_kv_txt_i8, ROW('a', 2)::plb_kv_txt_i8];"
    wrong = "  RETURN ARRAY[ROW('b', 2)::plb_kv_txt_i8, ROW('a', 1)::plb_kv_txt_i8];"
    assert run_block(pg_engine, task, ok).all_passed
    assert not run_block(pg_engine, task, wrong).all_passed


def test_records_and_nested_lists_compare_field_by_field(pg_engine):
    task = typed_task(["m"], [(([[1, 2], []],), (2, "two"))])
    assert run_block(pg_engine, task, "  RETURN ROW(cardinality(m[1].items), 'two')::plb_rec2_i8_txt;").all_passed
    assert not run_block(pg_engine, task, "  RETURN ROW(2, NULL)::plb_rec2_i8_txt;").all_passed


def test_functions_named_like_builtins_and_reserved_parameters_work(pg_engine):
    task = typed_task(["order"], [(("abc",), "cba")], entry="reverse")
    assert TaskEmitter(task, "postgres").renamed == {"order": "order_"}
    assert run_block(pg_engine, task, "  RETURN 'cba';").all_passed
    assert not run_block(pg_engine, task, "  RETURN order_;").all_passed


def test_replay_passes_and_every_mutant_is_killed(pg_engine):
    task = typed_task(["xs", "k"], [(([1, 2, 3], 1), [3, 1, 2]), (([4, 5], 0), [4, 5]), (([], 2), [])])
    result = validate_task(pg_engine, task)
    assert (result.status, result.mutants_total, result.mutants_killed) == ("passed", 3, 3)
    assert [m.name for m in mutants(task)] == ["null", "other_case", "reorder"]


def test_the_replay_lookup_is_planned_once_per_function(pg_engine):
    """Its plan is generic from the first call (custom plans would plan the whole VALUES list at every
    one of the first five calls); the candidate's functions get no such setting."""
    task = typed_task(["xs", "k"], [(([1, 2, 3], 1), [3, 1, 2]), (([4, 5], 0), [4, 5])])
    em = TaskEmitter(task, "postgres")
    replay = em.replay_function([c.expected for c in task.cases])
    assert "LANGUAGE plpgsql\nSET plan_cache_mode = force_generic_plan\nAS $plb$" in replay
    assert "SET " not in em.scaffold()
    with pg_engine.session() as session:
        assert session.execute(replay).ok
        settings = session.query(f"SELECT proconfig FROM pg_proc WHERE proname = '{em.function_name}'")
        assert settings.rows == [(["plan_cache_mode=force_generic_plan"],)]
        assert session.query(f"SELECT {em.call(task.cases[1])}").rows == [([4, 5],)]
        assert session.query("SHOW plan_cache_mode").rows == [("auto",)]  # restored after the call


def test_a_harness_that_cannot_tell_mutants_apart_is_rejected(pg_engine):
    # A tolerance wider than any perturbation: the perturbed mutants pass the block.
    loose = Comparison(atol=10.0, rtol=0.0)
    task = typed_task(["x"], [((1,), 0.5), ((2,), 0.5)], comparison=loose)
    result = validate_task(pg_engine, task)
    assert result.status == "harness_too_weak"
    assert set(result.survivors) == {"other_case", "perturb"} and result.mutants_killed == 1


def test_json_and_variant_values_round_trip_through_the_harness(pg_engine):
    task = typed_task(["xs"], [(([1, [2, 3], 4],), 10), (([[1]],), 1)])
    assert validate_task(pg_engine, task).status == "passed"
    task = typed_task(["xs"], [(([1, "a", 2.5],), [1, "a"]), (([True],), [])])
    assert validate_task(pg_engine, task).status == "passed"


@pytest.mark.parametrize("entry", ["power", "gcd", "sum"])
def test_task_functions_named_like_builtins_are_the_ones_called(pg_engine, entry):
    task = typed_task(["a", "b"], [((3, 4), 81), ((2, 3), 8)], entry=entry)
    assert run_block(pg_engine, task, "  RETURN CASE a WHEN 3 THEN 81 ELSE 8 END;").all_passed
    assert not run_block(pg_engine, task, "  RETURN 0;").all_passed
    assert validate_task(pg_engine, task).status == "passed"


def test_lists_of_dicts_get_a_wrapper_distinct_from_the_pair_type(pg_engine):
    task = typed_task(["n"], [((2,), [{}, {1: 2}]), ((0,), [])])
    em = TaskEmitter(task, "postgres")
    assert em.setup_statements() == [
        "CREATE TYPE plb_kv_i8_i8 AS (k bigint, v bigint);",
        "CREATE TYPE plb_dict_i8_i8 AS (items plb_kv_i8_i8[]);",
    ]
    assert validate_task(pg_engine, task).status == "passed"
