"""Procedural mutants of a reference, and the trivial candidates every released task must fail.

Each operator is one row of `OPERATORS`: a function from the procedure model to its mutants, edited
in every dialect's tree alike (the n-th matching node of each tree), so a mutant renders in both.
A mutant is killed when some call of the suite observes a difference (error, output, or any table's
state) or when it does not install.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlglot import exp

from plbench.procedures.dialect_text import PROCEDURE_TEXT
from plbench.procedures.model import CountInto, IfElse, Procedure, Sql, rebuild, walk

# the workspace's names (context["text_columns"]: plbench.procedures.workspace.DatabaseCopy) are PostgreSQL SQL text
WORKSPACE_SQL = PROCEDURE_TEXT["postgres"].sqlglot

_FLIP = {exp.EQ: exp.NEQ, exp.NEQ: exp.EQ, exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE}
_BOUNDARY = {exp.GT: exp.GTE, exp.GTE: exp.GT, exp.LT: exp.LTE, exp.LTE: exp.LT}


@dataclass(frozen=True)
class Mutant:
    operator: str
    description: str
    procedure: Procedure
    before: exp.Expression | None = None  # the PostgreSQL node the operator edited (None: a statement-level edit)
    after: exp.Expression | None = None  # what replaced it


def _sql_statements(proc: Procedure) -> list:
    return [s for s in walk(proc.body) if isinstance(s, (Sql, CountInto))]


def _edit_nodes(proc: Procedure, select: Callable, edit: Callable, label: str, operator: str) -> list[Mutant]:
    """One mutant per node that `select` picks in a statement: `edit(node)` returns its replacement."""
    mutants = []
    for statement in _sql_statements(proc):
        count = len(select(statement.trees["postgres"]))
        for k in range(count):
            edited: dict[str, exp.Expression] = {}

            def change(s, target=statement, k=k, edited=edited):
                if s is not target:
                    return s
                trees = {}
                for dialect, tree in s.trees.items():
                    copy = tree.copy()
                    nodes = select(copy)
                    if k < len(nodes):
                        edited[dialect] = edit(nodes[k])
                        nodes[k].replace(edited[dialect])
                    trees[dialect] = copy
                return replace(s, trees=trees, _rendered={})

            body = rebuild(proc.body, change)
            node = select(statement.trees["postgres"])[k]
            label_text = f"{label}: {node.sql()[:80]}"
            mutants.append(Mutant(operator, label_text, proc.with_body(body), node, edited.get("postgres")))
    return mutants


def _where_comparisons(kinds) -> Callable:
    return lambda tree: [n for n in tree.find_all(*kinds) if n.find_ancestor(exp.Where) is not None]


def relational_flip(proc: Procedure, context) -> list[Mutant]:
    def edit(node):
        return _FLIP[type(node)](this=node.left.copy(), expression=node.right.copy())

    return _edit_nodes(proc, _where_comparisons(tuple(_FLIP)), edit, "operator flipped", "relational_flip")


def boundary_shift(proc: Procedure, context) -> list[Mutant]:
    def edit(node):
        return _BOUNDARY[type(node)](this=node.left.copy(), expression=node.right.copy())

    return _edit_nodes(proc, _where_comparisons(tuple(_BOUNDARY)), edit, "boundary moved", "boundary_shift")


def boundary_plus_one(proc: Procedure, context) -> list[Mutant]:
    """An equality argument shifted by one (`col = para_x` -> `col = para_x + 1`), for number parameters."""
    numbers = {p.name for p in proc.params if p.family in ("integer", "decimal", "float")}

    def select(tree):
        return [
            c
            for c in tree.find_all(exp.Column)
            if c.name in numbers and isinstance(c.parent, exp.EQ) and c.find_ancestor(exp.Where) is not None
        ]

    return _edit_nodes(
        proc,
        select,
        lambda n: exp.Add(this=n.copy(), expression=exp.Literal.number(1)),
        "argument + 1",
        "boundary_plus_one",
    )


def drop_conjunct(proc: Procedure, context) -> list[Mutant]:
    def select(tree):
        return [n for n in tree.find_all(exp.And) if n.find_ancestor(exp.Where) is not None]

    left = _edit_nodes(proc, select, lambda n: n.left.copy(), "right conjunct dropped", "drop_conjunct")
    right = _edit_nodes(proc, select, lambda n: n.right.copy(), "left conjunct dropped", "drop_conjunct")
    return left + right


def swap_if(proc: Procedure, context) -> list[Mutant]:
    ifs = [s for s in walk(proc.body) if isinstance(s, IfElse)]
    mutants = []
    for target in ifs:

        def change(s, target=target):
            return IfElse(s.condition, s.orelse, s.then) if s is target else s

        mutants.append(
            Mutant("swap_if", f"branches swapped: IF {target.condition}", proc.with_body(rebuild(proc.body, change)))
        )
    return mutants


def drop_dml(proc: Procedure, context) -> list[Mutant]:
    mutants = []
    for target in (s for s in walk(proc.body) if isinstance(s, Sql)):

        def change(s, target=target):
            return None if s is target else s

        label = f"{target.kind} removed: {target.render('postgres')[:80]}"
        mutants.append(Mutant("drop_dml", label, proc.with_body(rebuild(proc.body, change))))
    return mutants


def wrong_target_column(proc: Procedure, context) -> list[Mutant]:
    """An INSERT's first two target columns swapped; an UPDATE assigning its status to another text column."""

    def insert_targets(tree):
        if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema) and len(tree.this.expressions) > 1:
            return [tree.this]
        return []

    def swap(schema):
        columns = [c.copy() for c in schema.expressions]
        columns[0], columns[1] = columns[1], columns[0]
        return exp.Schema(this=schema.this.copy(), expressions=columns)

    mutants = _edit_nodes(proc, insert_targets, swap, "target columns swapped", "wrong_target_column")
    other = {t: cols for t, cols in (context or {}).get("text_columns", {}).items() if cols}

    def updated(tree) -> str:  # the table as the workspace names its tables: PostgreSQL text, quoted where it must be
        return tree.this.this.sql(dialect=WORKSPACE_SQL)

    def update_targets(tree):
        return [tree.expressions[0].this] if isinstance(tree, exp.Update) and updated(tree) in other else []

    def retarget(column):
        return exp.column(exp.parse_identifier(other[updated(column.find_ancestor(exp.Update))][0], WORKSPACE_SQL))

    if other:
        mutants += _edit_nodes(
            proc, update_targets, retarget, "status written to another column", "wrong_target_column"
        )
    return mutants


OPERATORS: tuple[tuple[str, Callable], ...] = (
    ("relational_flip", relational_flip),
    ("boundary_shift", boundary_shift),
    ("boundary_plus_one", boundary_plus_one),
    ("drop_conjunct", drop_conjunct),
    ("swap_if", swap_if),
    ("drop_dml", drop_dml),
    ("wrong_target_column", wrong_target_column),
)


def mutants_of(proc: Procedure, context: dict | None = None) -> list[Mutant]:
    return [m for _name, operator in OPERATORS for m in operator(proc, context)]
