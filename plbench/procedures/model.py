"""One procedure model, rendered into PL/pgSQL and Oracle PL/SQL.

A procedure is a name, `para_…` parameters and a body of statements: SQL statements (one sqlglot tree
per dialect, so a mutant edits every dialect's tree alike), a `SELECT COUNT(*) INTO` guard, an IF/ELSE
and a raise of a defined error. The statement count and cyclomatic complexity are read off the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from sqlglot import exp

from plbench.procedures.dialect_text import ERROR_CODES, PROCEDURE_TEXT
from plbench.procedures.lift import Param
from plbench.procedures.stored_trees import TreesStoredApart


@dataclass(frozen=True)
class Sql(TreesStoredApart):
    """A DML statement: `kind` is delete / insert / update.

    Its trees are never edited once it exists (an edit makes a new statement of copies), so each dialect's
    text is generated once: a mutant or an ILE round keeps its reference's other statements, texts and all."""

    kind: str
    trees: dict[str, exp.Expression]
    _rendered: dict = field(default_factory=dict, compare=False, repr=False)  # dialect -> text

    def render(self, dialect: str) -> str:
        if dialect not in self._rendered:
            self._rendered[dialect] = self.trees[dialect].sql(dialect=PROCEDURE_TEXT[dialect].sqlglot) + ";"
        return self._rendered[dialect]


@dataclass(frozen=True)
class CountInto(TreesStoredApart):
    """`SELECT COUNT(*) INTO var FROM … WHERE …` (a tree of `SELECT COUNT(*) FROM …` per dialect; rendered
    once per dialect, as Sql is)."""

    var: str
    trees: dict[str, exp.Select]
    _rendered: dict = field(default_factory=dict, compare=False, repr=False)  # dialect -> text

    def render(self, dialect: str) -> str:
        if dialect not in self._rendered:
            text = self.trees[dialect].sql(dialect=PROCEDURE_TEXT[dialect].sqlglot)
            head = "SELECT COUNT(*)"
            if not text.startswith(head):
                raise ValueError(f"not a count query: {text[:60]}")
            self._rendered[dialect] = f"{head} INTO {self.var}{text[len(head) :]};"
        return self._rendered[dialect]


@dataclass(frozen=True)
class Raise:
    error: str  # a key of ERROR_CODES
    message: str

    def render(self, dialect: str) -> str:
        code = ERROR_CODES[self.error][dialect].raised
        return PROCEDURE_TEXT[dialect].raise_error.format(code=code, message=self.message.replace("'", "''"))


@dataclass(frozen=True)
class Todo:
    """A region removed from the reference, for the solver to complete."""

    text: str

    def render(self, dialect: str) -> str:
        return PROCEDURE_TEXT[dialect].todo.format(text=self.text)


@dataclass(frozen=True)
class RowLoop(TreesStoredApart):
    """One DML statement per row of a query, the row in `row`: what B2's slow baselines do instead of one
    set-based statement (a tree of the query and one of the statement per dialect)."""

    TREE_FIELDS = ("trees", "inner")

    trees: dict[str, exp.Expression]
    inner: dict[str, exp.Expression]
    row: str

    def render(self, dialect: str) -> str:
        text = PROCEDURE_TEXT[dialect]
        body = self.inner[dialect].sql(dialect=text.sqlglot) + ";"
        query = self.trees[dialect].sql(dialect=text.sqlglot)
        return text.row_loop.format(row=self.row, query=query, body=body)


@dataclass(frozen=True)
class IfElse:
    condition: str  # dialect-neutral: a comparison of a local variable with a number
    then: tuple
    orelse: tuple

    def render(self, dialect: str) -> str:
        return PROCEDURE_TEXT[dialect].if_else.format(
            condition=self.condition,
            then=_indent(render_body(self.then, dialect)),
            orelse=_indent(render_body(self.orelse, dialect)),
        )


EMPTY_BODY = "NULL;"  # a body or branch that does nothing: PL/SQL needs a statement there, PL/pgSQL accepts it


def _indent(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.splitlines())


def render_body(statements: tuple, dialect: str) -> str:
    """The statements, one a line; a mutant that dropped a body's or branch's only statement gets EMPTY_BODY."""
    return "\n".join(s.render(dialect) for s in statements) or EMPTY_BODY


def walk(statements: tuple):
    """Every statement, IF bodies included, in textual order."""
    for s in statements:
        yield s
        if isinstance(s, IfElse):
            yield from walk(s.then)
            yield from walk(s.orelse)


def rebuild(body: tuple, change: Callable) -> tuple:
    """The body with `change(statement)` applied to every statement, IF bodies included (None drops it)."""
    out = []
    for s in body:
        new = change(s)
        if new is s and isinstance(s, IfElse):
            new = IfElse(s.condition, rebuild(s.then, change), rebuild(s.orelse, change))
        if new is not None:
            out.append(new)
    return tuple(out)


@dataclass(frozen=True)
class Procedure:
    name: str
    params: tuple[Param, ...]
    body: tuple
    counters: tuple[str, ...] = ()  # the local integer variables the body uses
    _rendered: dict = field(default_factory=dict, compare=False, repr=False)  # dialect -> text, rendered once

    def render(self, dialect: str) -> str:
        if dialect not in self._rendered:
            self._rendered[dialect] = self._render(dialect)
        return self._rendered[dialect]

    def _render(self, dialect: str) -> str:
        text = PROCEDURE_TEXT[dialect]
        params = ", ".join(
            (text.param if p.table[dialect] else text.plain_param).format(
                name=p.name, type=p.type[dialect], table=p.table[dialect], column=p.column[dialect]
            )
            for p in self.params
        )
        lines = "".join(text.declaration.format(name=name, type=text.counter_type) for name in self.counters)
        declarations = text.declare.format(declarations=lines) if lines else ""
        return text.create.format(
            name=self.name,
            param_list=f"({params})" if params else text.empty_params,
            declarations=declarations,
            body=_indent(render_body(self.body, dialect)),
        )

    def dialects(self) -> tuple[str, ...]:
        """The dialects every statement has a tree for."""
        have = set(PROCEDURE_TEXT)
        for s in walk(self.body):
            if isinstance(s, (Sql, CountInto, RowLoop)):
                have &= set(s.trees)
        return tuple(sorted(have))

    @property
    def statements(self) -> int:
        return sum(1 for _ in walk(self.body))

    @cached_property  # every task of a seed asks (the body never changes: with_body makes another Procedure)
    def cyclomatic(self) -> int:
        """1 + decision points: IF statements, CASE branches and AND/OR in the SQL conditions."""
        decisions = 0
        for s in walk(self.body):
            if isinstance(s, IfElse):
                decisions += 1
            elif isinstance(s, (Sql, CountInto)):
                tree = s.trees["postgres"]
                decisions += sum(1 for _ in tree.find_all(exp.If)) + sum(1 for _ in tree.find_all(exp.And, exp.Or))
        return 1 + decisions

    def with_body(self, body: tuple) -> Procedure:
        return replace(self, body=body, _rendered={})
