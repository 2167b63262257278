"""Dialect emitters without a server: type names and DDL, literals, quoting, identifiers, harness shape.

Everything Oracle-side that can be checked without a server is checked here, always.
"""

import datetime as dt
from dataclasses import replace
from types import SimpleNamespace

import pytest
import sqlglot

from plbench.dialects import DIALECTS, TypeEnv, of_dialect
from plbench.dialects.base import UnrepresentableValue
from plbench.dialects.static_checks import check_block_structure, check_database_ddl, check_type_ddl
from plbench.mbpp.artifacts import TaskEmitter
from plbench.types import BOOL, FLOAT, INT, STR, PyType
from tests.helpers import typed_task

ORACLE, POSTGRES = DIALECTS["oracle"], DIALECTS["postgres"]
LIST_INT = PyType.list_of(INT)
NESTED = PyType.list_of(LIST_INT)
RECORD = PyType("record", (INT, STR))
DICT = PyType("dict", (STR, FLOAT))


def env(dialect, bigint=True):
    return TypeEnv(int_sql=dialect.int_type(bigint), atol=1e-6, rtol=1e-7)


@pytest.mark.parametrize(
    "t, oracle, postgres",
    [
        (INT, "NUMBER", "bigint"),
        (FLOAT, "BINARY_DOUBLE", "double precision"),
        (STR, "VARCHAR2", "text"),
        (BOOL, "BOOLEAN", "boolean"),
        (LIST_INT, "plb_num_tab", "bigint[]"),
        (NESTED, "plb_list_num_tab", "plb_list_i8[]"),
        (RECORD, "plb_rec2_num_txt", "plb_rec2_i8_txt"),
        (DICT, "plb_dict_txt_f8", "plb_kv_txt_f8[]"),
        (PyType.list_of(DICT), "plb_dict_txt_f8_tab", "plb_dict_txt_f8[]"),
        (PyType("set", (STR,)), "plb_txt_tab", "text[]"),
        (PyType("tuple_seq", (BOOL,)), "plb_bool_tab", "boolean[]"),
    ],
)
def test_type_spelling(t, oracle, postgres):
    assert ORACLE.sql_type(t, env(ORACLE)) == oracle
    assert POSTGRES.sql_type(t, env(POSTGRES)) == postgres


def test_type_ddl_is_emitted_once_per_shape_in_dependency_order():
    e = env(ORACLE)
    for t in (NESTED, LIST_INT, NESTED):
        ORACLE.sql_type(t, e)
    assert list(e.types.values()) == [
        "CREATE OR REPLACE TYPE plb_num_tab AS TABLE OF NUMBER;",
        "CREATE OR REPLACE TYPE plb_list_num_tab AS TABLE OF plb_num_tab;",
    ]
    p = env(POSTGRES)
    POSTGRES.sql_type(PyType.list_of(RECORD), p)
    assert list(p.types.values()) == ["CREATE TYPE plb_rec2_i8_txt AS (f1 bigint, f2 text);"]


def test_oracle_bool_inside_sql_types_is_number_1():
    e = env(ORACLE)
    ORACLE.sql_type(PyType("record", (BOOL, STR)), e)
    assert list(e.types.values()) == [
        "CREATE OR REPLACE TYPE plb_rec2_bool_txt AS OBJECT (f1 NUMBER(1), f2 VARCHAR2(4000));"
    ]
    assert ORACLE.literal((True, "a"), PyType("record", (BOOL, STR)), e) == "plb_rec2_bool_txt(1, 'a')"


def test_postgres_int_width_is_decided_per_task():
    assert POSTGRES.int_type(True) == "bigint" and POSTGRES.int_type(False) == "numeric"
    assert POSTGRES.literal(2**70, INT, env(POSTGRES, bigint=False)) == f"{2**70}::numeric"


@pytest.mark.parametrize(
    "value, t, oracle, postgres",
    [
        ("it's", STR, "'it''s'", "'it''s'"),
        ("", STR, "''", "''"),
        (-3, INT, "-3", "-3"),
        (1.5, FLOAT, "1.5d", "1.5::double precision"),
        (float("inf"), FLOAT, "BINARY_DOUBLE_INFINITY", "'Infinity'::double precision"),
        (None, LIST_INT, "NULL", "NULL::bigint[]"),
        ([], LIST_INT, "plb_num_tab()", "ARRAY[]::bigint[]"),
        (
            [[1], []],
            NESTED,
            "plb_list_num_tab(plb_num_tab(1), plb_num_tab())",
            "ARRAY[ROW(ARRAY[1]::bigint[])::plb_list_i8, ROW(ARRAY[]::bigint[])::plb_list_i8]::plb_list_i8[]",
        ),
        (
            {"b": 2.0, "a": 1.0},
            DICT,
            "plb_dict_txt_f8(plb_kv_txt_f8('a', 1.0d), plb_kv_txt_f8('b', 2.0d))",
            "ARRAY[ROW('a', 1.0::double precision)::plb_kv_txt_f8, ROW('b', 2.0::double precision)::plb_kv_txt_f8]"
            "::plb_kv_txt_f8[]",
        ),
        ({3, 1}, PyType("set", (INT,)), "plb_num_tab(1, 3)", "ARRAY[1, 3]::bigint[]"),
    ],
)
def test_literals(value, t, oracle, postgres):
    assert ORACLE.literal(value, t, env(ORACLE)) == oracle
    assert POSTGRES.literal(value, t, env(POSTGRES)) == postgres


def test_long_oracle_strings_are_chunked_and_oversized_ones_refused():
    text = "x" * 2500
    literal = ORACLE.literal(text, STR, env(ORACLE))
    assert literal.count(" || ") == 2 and literal.replace("' || '", "") == f"'{text}'"
    assert ORACLE.literal("y" * 5000, STR, env(ORACLE)).count(" || ") == 4  # PL/SQL VARCHAR2: 32767 bytes
    with pytest.raises(UnrepresentableValue) as err:  # inside a SQL type: VARCHAR2(4000)
        ORACLE.literal(["y" * 5000], PyType.list_of(STR), env(ORACLE))
    assert err.value.reason_code == "value_out_of_range"


def test_values_each_dialect_cannot_hold_are_refused_with_a_reason():
    with pytest.raises(UnrepresentableValue) as err:
        POSTGRES.literal("a\x00b", STR, env(POSTGRES))
    assert err.value.reason_code == "unsupported_value"
    with pytest.raises(UnrepresentableValue) as err:
        ORACLE.literal(10**40, INT, env(ORACLE))
    assert err.value.reason_code == "value_out_of_range"


@pytest.mark.parametrize(
    "name, oracle, postgres",
    [
        ("nums", "nums", "nums"),
        ("order", "order_", "order_"),
        ("level", "level_", "level"),
        ("end", "end_", "end_"),
        ("x" * 70, "x" * 70, "x" * 54 + "_"),
    ],
)
def test_identifiers(name, oracle, postgres):
    assert ORACLE.identifier(name, set())[0] == oracle
    assert POSTGRES.identifier(name, set())[0].startswith(postgres)
    assert len(POSTGRES.identifier(name, set())[0].encode()) <= 63


@pytest.mark.parametrize(
    "name, oracle, postgres",
    [
        ("event_report", "event_report", "event_report"),
        ("date", '"DATE"', "date"),
        ("level", '"LEVEL"', "level"),
        ("user", '"USER"', '"user"'),
        ("order", '"ORDER"', '"order"'),
        ("Score", "Score", "Score"),
        ("_sum", '"_SUM"', "_sum"),
        ("café", '"CAFÉ"', '"café"'),
    ],
)
def test_a_new_name_is_spelt_by_the_ddl_rule(name, oracle, postgres):
    """Folded and quoted when it is no plain identifier or a reserved word, as IdentifierMap declares names."""
    for dialect, spelt in ((ORACLE, oracle), (POSTGRES, postgres)):
        assert dialect.new_identifier(name).sql(dialect=dialect.sqlglot_name) == spelt


@pytest.mark.parametrize(
    "postgres, oracle",
    [
        ("SELECT a FROM t EXCEPT SELECT a FROM u", "SELECT a FROM t MINUS SELECT a FROM u"),
        # a string's or a quoted name's EXCEPT is no keyword: it stays
        ("SELECT 'EXCEPT' AS \"EXCEPT\" FROM t", "SELECT 'EXCEPT' AS \"EXCEPT\" FROM t"),
        ('SELECT _sum, t._x FROM t WHERE "_y" = 1', 'SELECT "_SUM", t."_X" FROM t WHERE "_y" = 1'),
    ],
)
def test_oracle_writes_minus_and_folds_names_oracle_takes_only_quoted(postgres, oracle):
    tree = sqlglot.parse_one(postgres, read="postgres")
    before = tree.sql()
    assert tree.sql(dialect=ORACLE.sqlglot_name) == oracle
    assert tree.sql(dialect=ORACLE.sqlglot_name, copy=False) == oracle
    assert tree.sql() == before  # the caller's tree keeps its names, even when it allows no copy


def test_identifiers_that_collide_after_case_folding_are_renamed():
    taken = set()
    assert ORACLE.identifier("A", taken) == ("A", None)
    renamed, why = ORACLE.identifier("a", taken)
    assert renamed == "a_2" and "case folding" in why


def test_long_type_names_are_hashed_within_the_limit():
    deep = PyType("record", tuple([INT, STR, FLOAT, BOOL] * 6))
    name = POSTGRES.sql_type(deep, env(POSTGRES))
    assert name.startswith("plb_t_") and len(name) <= 63


@pytest.mark.parametrize(
    "type_name, kind",
    [
        ("NUMBER", "DECIMAL"),
        ("BINARY_DOUBLE", "DOUBLE"),
        ("VARCHAR2(4000)", "VARCHAR"),
        ("NUMBER(1)", "DECIMAL"),
    ],
)
def test_oracle_element_types_parse_in_sqlglot(type_name, kind):
    assert sqlglot.exp.DataType.build(type_name, dialect="oracle").this.name == kind


@pytest.mark.parametrize("dialect", ["oracle", "postgres"])
def test_every_artifact_of_a_rich_task_passes_the_static_checks(dialect):
    task = typed_task(
        ["m", "order"],
        [
            (([[1, 2], [3]], {"a": 1.5}), [(1, "a", True)]),
            (([], {}), [(2, None, False)]),
        ],
    )
    em = TaskEmitter(task, dialect)
    assert check_type_ddl(DIALECTS[dialect], em.setup_statements()) == []
    for text in [*em.test_block_statements(), em.scaffold(), em.replay_function([None, None])]:
        assert check_block_structure(text) == []
    assert em.renamed == {"order": "order_"}


@pytest.mark.parametrize("dialect", ["oracle", "postgres"])
def test_an_emitter_writes_each_value_once_and_as_the_dialect_does(dialect):
    """The block, the replay function and its mutants share the cases' values: each object is written
    once, with the dialect's own literal."""
    task = typed_task(["m", "k"], [(([[1, 2], [3]], 1), [3, 1]), (([], 2), []), (([[4]], 3), [4])])
    tops = [v for c in task.cases for v in (*c.args, c.expected)]
    written = []

    class Counting(type(DIALECTS[dialect])):
        def literal(self, value, t, env, top=True):
            written.extend(v for v in tops if v is value and not isinstance(v, int))
            return super().literal(value, t, env, top)

    em, plain = TaskEmitter(task, Counting()), TaskEmitter(task, dialect)
    expected = [c.expected for c in task.cases]
    texts = [em.replay_function(expected), em.replay_function(expected[1:] + expected[:1]), *em.test_block_statements()]
    assert len(written) == 3 * 2  # the three cases' list argument and expected output, once each
    for case in task.cases:
        assert em.literals(case) == [
            DIALECTS[dialect].literal(v, t, plain.env) for v, (_, t) in zip(case.args, em.params)
        ]
    again = [plain.replay_function(expected), plain.replay_function(expected[1:] + expected[:1])]
    assert texts == again + plain.test_block_statements()


def test_static_checks_catch_broken_text():
    assert check_block_structure("BEGIN IF x THEN NULL; END; END;")
    assert check_block_structure("BEGIN x := 'open; END;")
    assert check_block_structure("BEGIN f((1); END;")
    assert check_type_ddl(ORACLE, ["CREATE OR REPLACE TYPE plb_x AS TABLE OF NUMBR(3"]) != []
    assert check_type_ddl(ORACLE, ["CREATE OR REPLACE TYPE plb_y AS TABLE OF plb_unknown;"]) != []
    assert check_type_ddl(ORACLE, ["CREATE OR REPLACE TYPE select AS TABLE OF NUMBER;"]) != []


def test_oracle_harness_compares_in_order_and_never_with_collection_equals():
    task = typed_task(["xs"], [(([3, 1, 2],), [1, 2, 3])])
    block = TaskEmitter(task, "oracle").test_block_statements()[-1]
    assert "plb_eq_list_num(v_actual, v_expected)" in block
    assert "a.FIRST" in block and "v_actual = v_expected" not in block
    assert "DBMS_OUTPUT.PUT_LINE('PLBENCH_SUMMARY ' || v_passed || ' OF 1');" in block


def test_scaffolds_have_the_exact_signature_and_an_empty_body():
    task = typed_task(["xs", "n"], [(([1, 2], 1), [2])])
    assert TaskEmitter(task, "postgres").scaffold() == (
        "CREATE OR REPLACE FUNCTION f(xs bigint[], n bigint)\nRETURNS bigint[]\nLANGUAGE plpgsql\nAS $plb$\n"
        "BEGIN\n  -- Write the function body here.\nEND;\n$plb$;"
    )
    assert TaskEmitter(task, "oracle").scaffold() == (
        "CREATE OR REPLACE FUNCTION f(xs IN plb_num_tab, n IN NUMBER)\nRETURN plb_num_tab\nIS\n"
        "BEGIN\n  NULL; -- Write the function body here.\nEND f;"
    )


def test_a_sql_case_expression_inside_a_block_ends_with_a_bare_end():
    cursor_loop = (
        "BEGIN\n  FOR r IN (SELECT AVG(CASE WHEN x IS NULL THEN 0 ELSE x END) AS C1 FROM t) LOOP\n"
        "    DBMS_OUTPUT.PUT_LINE(r.C1);\n  END LOOP;\nEND;"
    )
    assert check_block_structure(cursor_loop) == []
    assert check_block_structure("BEGIN CASE x WHEN 1 THEN NULL; END CASE; END;") == []
    assert check_block_structure("BEGIN x := CASE WHEN y THEN 1 END; END LOOP;")  # END LOOP closes nothing open


# ---- the database and Spider rules each dialect owns (one exact output per entry) ---------------


@pytest.mark.parametrize(
    ("family", "postgres", "oracle"),
    [
        ("integer", "bigint", "NUMBER(19)"),
        ("decimal", "numeric", "NUMBER"),
        ("float", "double precision", "BINARY_DOUBLE"),
        ("text", "text", "VARCHAR2(4000 BYTE)"),
        ("boolean", "boolean", "NUMBER(1)"),
        ("date", "date", "DATE"),
        ("timestamp", "timestamp", "TIMESTAMP"),
        ("time", "time", "VARCHAR2(32 BYTE)"),
        ("binary", "bytea", "BLOB"),
        ("json", "jsonb", "CLOB"),
    ],
)
def test_column_types(family, postgres, oracle):
    assert (POSTGRES.column_type(family), ORACLE.column_type(family)) == (postgres, oracle)
    assert set(POSTGRES.column_types) == set(ORACLE.column_types)


def test_text_longer_than_a_varchar2_is_a_clob_in_oracle_only():
    assert (POSTGRES.column_type("text", 4001), ORACLE.column_type("text", 4001)) == ("text", "CLOB")
    assert ORACLE.column_type("text", 4000) == "VARCHAR2(4000 BYTE)"


@pytest.mark.parametrize(
    ("rule", "postgres", "oracle"),
    [
        (lambda d: d.fold("Home_Town"), "home_town", "HOME_TOWN"),
        (lambda d: bool(d.plain_identifier.match("_x")), True, False),
        (lambda d: bool(d.plain_identifier.match("x$#")), False, True),
        (lambda d: d.unchecked_foreign_key, " NOT VALID", " ENABLE NOVALIDATE"),
        (lambda d: d.empty_string_is_null, False, True),
        (
            lambda d: d.stored_column(["", True, dt.time(7, 5), "x", 2.5]),
            ["", True, dt.time(7, 5), "x", 2.5],
            [None, 1, "07:05:00", "x", 2.5],
        ),
        (lambda d: d.stored_column(["x", None, 2.5]), ["x", None, 2.5], ["x", None, 2.5]),
        (
            lambda d: (d.row_id, d.text_type, d.division_truncates_integers),
            ("ctid", "TEXT", True),
            ("ROWID", "VARCHAR(4000)", False),
        ),
        (lambda d: d.date_text_formats, {}, {"date": "YYYY-MM-DD", "timestamp": "YYYY-MM-DD HH24:MI:SS"}),
        (
            lambda d: d.first_at_extreme.format(order="DESC", ties=", plb_rowid0"),
            "(ARRAY_AGG(plb_value ORDER BY plb_key DESC NULLS LAST, plb_rowid0))[1]",
            "MAX(plb_value) KEEP (DENSE_RANK FIRST ORDER BY plb_key DESC NULLS LAST, plb_rowid0)",
        ),
        (
            lambda d: d.ascii_like(sqlglot.exp.column("a"), sqlglot.exp.Literal.string("x%")).sql(d.sqlglot_name),
            "a ILIKE 'x%'",
            "UPPER(a) LIKE UPPER('x%')",
        ),
        (lambda d: (d.language, d.display_name), ("PL/pgSQL", "PostgreSQL"), ("PL/SQL", "Oracle")),
        (
            lambda d: (d.block_description, d.print_description),
            ("a PostgreSQL anonymous block (DO $$ ... $$)", "RAISE NOTICE '%', <line>"),
            ("an Oracle PL/SQL anonymous block (BEGIN ... END;)", "DBMS_OUTPUT.PUT_LINE(<line>)"),
        ),
        (lambda d: (d.renames_view_columns, d.output_column(2)), (True, "c2"), (False, "C2")),
    ],
)
def test_database_and_spider_rules(rule, postgres, oracle):
    assert rule(POSTGRES) == postgres
    assert rule(ORACLE) == oracle


@pytest.mark.parametrize(
    ("kind", "postgres", "oracle"),
    [
        (
            "number",
            "coalesce(trim_scale(round((r.c1)::numeric, 4))::text, 'NULL')",
            "NVL(RTRIM(TO_CHAR(ROUND(r.c1, 4), 'FM9999999999999999999999999999990.9999'), '.'), 'NULL')",
        ),
        ("integer", "coalesce((r.c1)::text, 'NULL')", "NVL(TO_CHAR(r.c1), 'NULL')"),
        ("date", "coalesce(to_char(r.c1, 'YYYY-MM-DD'), 'NULL')", "NVL(TO_CHAR(r.c1, 'YYYY-MM-DD'), 'NULL')"),
        (
            "timestamp",
            "coalesce(to_char(r.c1, 'YYYY-MM-DD HH24:MI:SS'), 'NULL')",
            "NVL(TO_CHAR(r.c1, 'YYYY-MM-DD HH24:MI:SS'), 'NULL')",
        ),
        (
            "boolean",
            "coalesce((r.c1)::text, 'NULL')",
            "NVL(CASE WHEN r.c1 = 1 THEN 'true' WHEN r.c1 = 0 THEN 'false' END, 'NULL')",
        ),
        ("binary", "coalesce(encode(r.c1, 'hex'), 'NULL')", "NVL(LOWER(RAWTOHEX(r.c1)), 'NULL')"),
        ("text", "coalesce((r.c1)::text, 'NULL')", "NVL(TO_CHAR(r.c1), 'NULL')"),
    ],
)
def test_print_field(kind, postgres, oracle):
    assert POSTGRES.print_field("r.c1", kind, 4, "NULL") == postgres
    assert ORACLE.print_field("r.c1", kind, 4, "NULL") == oracle


def test_print_rows_block():
    assert POSTGRES.print_rows_block("SELECT a, b FROM t;", ["c1", "c2"], "LINE") == (
        "DO $plbench$\nDECLARE\n  r record;\nBEGIN\n  FOR r IN SELECT * FROM (\nSELECT a, b FROM t\n"
        "  ) AS plb_q(c1, c2) LOOP\n    RAISE NOTICE '%', LINE;\n  END LOOP;\nEND\n$plbench$;"
    )
    assert ORACLE.print_rows_block("SELECT a AS C1 FROM t", ["C1"], "LINE") == (
        "BEGIN\n  FOR r IN (\nSELECT a AS C1 FROM t\n  ) LOOP\n    DBMS_OUTPUT.PUT_LINE(LINE);\n  END LOOP;\nEND;\n/"
    )


@pytest.mark.parametrize(
    ("types", "postgres", "oracle"),
    [
        ([INT, STR], set(), set()),
        ([LIST_INT], {"collection_type"}, {"collection_type"}),
        ([NESTED], {"collection_type", "object_type"}, {"collection_type"}),  # PostgreSQL's wrapper composite
        ([RECORD], {"object_type"}, {"object_type"}),
        ([DICT], {"collection_type", "object_type"}, {"collection_type", "object_type"}),
        ([PyType("variant", (INT, STR))], {"object_type"}, {"object_type"}),
    ],
)
def test_type_constructs(types, postgres, oracle):
    assert POSTGRES.type_constructs(types) == postgres
    assert ORACLE.type_constructs(types) == oracle


def test_the_data_scripts(tmp_path):
    table = SimpleNamespace(
        target=SimpleNamespace(sql="t"), column_names=["a", "b"], rows=[(1, "x\ty"), (None, "it's")], data_text=None
    )
    assert POSTGRES.data_script(table) == "COPY t (a, b) FROM stdin;\n1\tx\\ty\n\\N\tit's\n\\.\n"
    assert ORACLE.data_script(table) == (
        "INSERT ALL\n  INTO t (a, b) VALUES (1, 'x\ty')\n  INTO t (a, b) VALUES (NULL, 'it''s')\nSELECT 1 FROM DUAL;\n"
    )


def test_flags_and_the_print_rows_scaffold():
    assert (POSTGRES.checked_statically, ORACLE.checked_statically) == (False, True)
    assert (POSTGRES.value_round_trip, ORACLE.value_round_trip) == (True, False)
    assert POSTGRES.print_rows_scaffold("<row>") == "DO $$\nBEGIN\n  -- RAISE NOTICE '%', <row>;\nEND\n$$;"
    assert ORACLE.print_rows_scaffold("<row>") == "BEGIN\n  -- DBMS_OUTPUT.PUT_LINE(<row>);\n  NULL;\nEND;\n/"


def test_of_dialect_selects_the_items_of_one_dialect():
    items = [SimpleNamespace(dialect=d, n=i) for i, d in enumerate(["oracle", None, "postgres", "oracle"])]
    assert [x.n for x in of_dialect(items, "oracle")] == [0, 3]
    assert [x.n for x in of_dialect(items, None)] == [1]


def test_database_ddl_checks_without_a_server():
    from plbench.normalize.emit import normalize
    from plbench.normalize.schema import Column, ForeignKey, SourceDatabase, Table

    table = Table(
        "t",
        (Column("id", "INTEGER", "integer", "integer"), Column("p", "INTEGER", "integer", "integer")),
        ("id",),
        (ForeignKey(("p",), "t", ("id",)),),
    )
    db = SourceDatabase("spider1", "d", "sqlite", "", [table], rows={"t": [(1, 1)]})
    for dialect in (POSTGRES, ORACLE):
        assert check_database_ddl(dialect, normalize(db, dialect.name)) == []
    long = normalize(db, "oracle")
    long.tables[0].columns[0] = replace(
        long.tables[0].columns[0], target=replace(long.tables[0].target, name="X" * 129)
    )
    long.create_statements.append("CREATE TABLE (")
    problems = check_database_ddl(ORACLE, long)
    assert problems[0].startswith("does not parse as Oracle: CREATE TABLE (")
    assert problems[1:] == [f"identifier over 128 bytes: {'X' * 129}"]


def test_a_table_is_parsed_by_its_new_lines_and_a_problem_reads_as_the_whole_statement_s():
    from plbench.dialects.static_checks import _statement_problem, without_table_name
    from plbench.normalize.emit import normalize
    from plbench.normalize.schema import Column, SourceDatabase, Table

    def table(name, *columns):
        return Table(name, tuple(Column(c, "INTEGER", "integer", "integer") for c in columns), (columns[0],))

    tables = [table("a", "id", "shared"), table("b", "shared", "id", "own")]
    db = normalize(SourceDatabase("spider1", "d", "sqlite", "", tables), "oracle")
    assert check_database_ddl(ORACLE, db) == []
    # b's lines but one were parsed in a; the broken one fails, with the message of b's whole statement
    db.create_statements[1] = db.create_statements[1].replace("OWN NUMBER(19)", "OWN NUMBER(19 x")
    whole = _statement_problem(ORACLE.sqlglot_name, ORACLE.display_name, without_table_name(db.create_statements[1])[1])
    head, _, detail = whole.partition(": ")
    assert check_database_ddl(ORACLE, db) == [f"{head}: {db.create_statements[1][:80]}: {detail}"]
    assert detail  # sqlglot says where it stopped
