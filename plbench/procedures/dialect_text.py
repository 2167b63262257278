"""Everything the procedure model spells differently per dialect, as data.

One row per dialect: how a procedure is created and called, how a defined error is raised
(PostgreSQL SQLSTATE, Oracle RAISE_APPLICATION_ERROR code), how a parameter's type is written,
and the sqlglot dialect that renders embedded SQL. Code asks `PROCEDURE_TEXT[dialect]`; it never
branches on the dialect's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from plbench.dialects import DIALECTS


@dataclass(frozen=True)
class ProcedureText:
    sqlglot: str  # sqlglot dialect for the embedded SQL statements
    counter_type: str  # a local integer variable
    create: str  # {name} {param_list} {declarations} {body}
    empty_params: str  # the parameter list of a procedure without parameters
    param: str  # {name} {type} {table} {column}
    plain_param: str  # {name} {type}: a parameter typed by itself, not by a column (an ILE threshold)
    declare: str  # {declarations}: the declaration section of the local variables
    declaration: str  # {name} {type}
    call: str  # {name} {args}
    raise_error: str  # {code} {message}
    if_else: str  # {condition} {then} {orelse}
    argument: str  # {literal} {type}: an argument of a call
    date_literal: str  # {value}
    timestamp_literal: str  # {value}
    add_column: str  # {table} {column} {type} {default}
    create_table: str  # {table} {columns}
    text_type: str
    integer_type: str
    todo: str  # {text}: a region left for the solver to write
    row_loop: str  # {row} {query} {body}: one statement per row of a query (B2's slow baselines)
    row_id: str  # the pseudo-column that addresses one stored row


# The one defined error every archetype raises: a parameter that matches nothing. PostgreSQL lets a
# procedure raise any five-character SQLSTATE; Oracle reserves -20000..-20999 for applications.
@dataclass(frozen=True)
class DefinedError:
    raised: str  # what the raise statement takes
    reported: str  # the code the engine reports (a SQLSTATE, or ORA-nnnnn)


ERROR_CODES = {
    "no_match": {"postgres": DefinedError("PLB01", "PLB01"), "oracle": DefinedError("-20001", "ORA-20001")},
    # the errors ILE rules add (plbench.operators.procedural_rules): no row qualifies; more rows than allowed
    "no_rows": {"postgres": DefinedError("PLB02", "PLB02"), "oracle": DefinedError("-20002", "ORA-20002")},
    "too_many_rows": {"postgres": DefinedError("PLB03", "PLB03"), "oracle": DefinedError("-20003", "ORA-20003")},
    # what an implementation that ignores the defined code raises (A2's check builds one)
    "generic": {"postgres": DefinedError("P0001", "P0001"), "oracle": DefinedError("-20000", "ORA-20000")},
}

_PG_DOLLAR = "$plb$"

PROCEDURE_TEXT: dict[str, ProcedureText] = {
    "postgres": ProcedureText(
        sqlglot=DIALECTS["postgres"].sqlglot_name,
        counter_type="bigint",
        create=(
            "CREATE PROCEDURE {name}{param_list}\nLANGUAGE plpgsql\nAS "
            + _PG_DOLLAR
            + "\n{declarations}BEGIN\n{body}\n"
            "END;\n" + _PG_DOLLAR + ";"
        ),
        empty_params="()",
        param="{name} {type}",
        plain_param="{name} {type}",
        declare="DECLARE\n{declarations}",
        declaration="  {name} {type};\n",
        call="CALL {name}({args})",
        raise_error="RAISE EXCEPTION '{message}' USING ERRCODE = '{code}';",
        if_else="IF {condition} THEN\n{then}\nELSE\n{orelse}\nEND IF;",
        argument="CAST({literal} AS {type})",
        date_literal="DATE '{value}'",
        timestamp_literal="TIMESTAMP '{value}'",
        add_column="ALTER TABLE {table} ADD COLUMN {column} {type} DEFAULT {default}",
        create_table="CREATE TABLE {table} ({columns})",
        text_type="text",
        integer_type="bigint",
        todo="-- TODO: {text}",
        # the loop variable needs a declaration: a block of its own keeps it out of the procedure's
        row_loop="DECLARE\n  {row} record;\nBEGIN\n  FOR {row} IN {query} LOOP\n    {body}\n  END LOOP;\nEND;",
        row_id="ctid",
    ),
    "oracle": ProcedureText(
        sqlglot=DIALECTS["oracle"].sqlglot_name,
        counter_type="NUMBER",
        create="CREATE OR REPLACE PROCEDURE {name}{param_list}\nIS\n{declarations}BEGIN\n{body}\nEND {name};",
        empty_params="",  # Oracle refuses empty parentheses
        param="{name} IN {table}.{column}%TYPE",
        plain_param="{name} IN {type}",
        declare="{declarations}",
        declaration="  {name} {type};\n",
        call="BEGIN {name}({args}); END;",
        raise_error="RAISE_APPLICATION_ERROR({code}, '{message}');",
        if_else="IF {condition} THEN\n{then}\nELSE\n{orelse}\nEND IF;",
        argument="{literal}",
        date_literal="DATE '{value}'",
        timestamp_literal="TIMESTAMP '{value}'",
        add_column="ALTER TABLE {table} ADD ({column} {type} DEFAULT {default})",
        create_table="CREATE TABLE {table} ({columns})",
        text_type="VARCHAR2(4000)",
        integer_type="NUMBER",
        todo="NULL; -- TODO: {text}",  # a PL/SQL block needs a statement
        row_loop="FOR {row} IN ({query}) LOOP\n  {body}\nEND LOOP;",  # a cursor FOR loop declares its record
        row_id="ROWID",
    ),
}


# Result-table column types, keyed by the PostgreSQL type name a described query reports.
RESULT_TYPES: dict[str, dict[str, str]] = {
    "int2": {"postgres": "bigint", "oracle": "NUMBER"},
    "int4": {"postgres": "bigint", "oracle": "NUMBER"},
    "int8": {"postgres": "bigint", "oracle": "NUMBER"},
    "numeric": {"postgres": "numeric", "oracle": "NUMBER"},
    # Floats are stored as numbers of 15 significant digits: an average of doubles depends on the order
    # the rows are summed in, in its last bits, and the physically shuffled copy must give the same state.
    "float4": {"postgres": "numeric", "oracle": "NUMBER"},
    "float8": {"postgres": "numeric", "oracle": "NUMBER"},
    "text": {"postgres": "text", "oracle": "VARCHAR2(4000)"},
    "varchar": {"postgres": "text", "oracle": "VARCHAR2(4000)"},
    "bpchar": {"postgres": "text", "oracle": "VARCHAR2(4000)"},
    "date": {"postgres": "date", "oracle": "DATE"},
    "timestamp": {"postgres": "timestamp", "oracle": "TIMESTAMP"},
    "bool": {"postgres": "boolean", "oracle": "NUMBER(1)"},
}
