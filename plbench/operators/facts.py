"""The facts of a procedural requirement that a perturbation can hide, rename or contradict.

A fact is a phrase of the requirement (`stated`) tied to the procedure model: `ignored` is an
implementation that does not know it (what an omission must make the reference differ from), and
`opposite` is the implementation of its conflicting reading (what a contradiction must tell apart).
Each kind of fact is one row of `FACT_KINDS`: where it is found in a seed, and the texts every
perturbation writes for it (templates over the site's words), and the ops it serves. A site may also
come from the previous round of procedural ILE: the last round's clause, which that round's reference
ignores. The deterministic proposer draws only from this catalogue, so each row is tested with its exact
texts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from plbench.operators.procedural_ile import previous_procedure
from plbench.procedures.archetypes import COUNT_COLUMN, Seed, main_table
from plbench.procedures.describe import expression
from plbench.procedures.dialect_text import ERROR_CODES
from plbench.procedures.model import Procedure, Sql, rebuild
from plbench.procedures.mutants import _edit_nodes, _where_comparisons
from plbench.procedures.scenarios.a2 import FACTS as DOCUMENT_FACTS

# The invented words jargon is made of: one is drawn per task (seeded), so the term carries no meaning
# the solver could guess; ProcArena's "cinder sweep" is of this kind.
JARGON_WORDS = ("amber", "cobalt", "cinder", "juniper", "quartz", "saffron", "tamarack", "vellum")

TEXT_OPS = ("jargon", "mask", "contradiction")  # the ops that perturb a fact the requirement states
_OPPOSITE = {exp.GT: exp.GTE, exp.GTE: exp.GT, exp.LT: exp.LTE, exp.LTE: exp.LT, exp.EQ: exp.NEQ, exp.NEQ: exp.EQ}


@dataclass(frozen=True)
class FactKind:
    """The texts of one kind of fact; each template is formatted with the site's words and `term`."""

    kind: str
    noun: str  # what the jargon term names ("sweep", "test", ...)
    explicit: str  # the fact as one sentence: the ledger's answer
    topic: str  # what an omission leaves open: the ledger's key for a mask
    masked: str  # the words that take the stated ones' place when the fact is masked
    jargon: str  # the words that take their place when the fact becomes a term ({term})
    other: str  # the conflicting reading, as one sentence
    # the sites of the kind in a seed (and the previous ILE round's seed, if any): words, stated, ignored, opposite
    find: Callable[[Seed, Seed | None], list[dict]]
    ops: tuple[str, ...] = TEXT_OPS


@dataclass(frozen=True)
class Fact:
    """One site of a kind in one seed, its texts filled in."""

    fact_id: str  # "<kind>" or "<kind>:<n>": stable per seed
    kind: FactKind
    words: dict  # the site's words the templates use
    stated: str
    ignored: Procedure
    opposite: Procedure

    def text(self, field_name: str, term: str = "") -> str:
        return getattr(self.kind, field_name).format(stated=self.stated, term=term, **self.words)

    @property
    def explicit(self) -> str:
        return self.text("explicit")


def _document_fact(archetypes: tuple[str, ...], document_fact: str, stated: str) -> Callable[[Seed, Seed | None], list]:
    """A fact A2 also moves into a document: its words, and A2's implementation ignoring it."""

    def find(seed: Seed, previous: Seed | None) -> list[dict]:
        if seed.archetype not in archetypes:
            return []
        table = seed.writes[0]
        ignored = DOCUMENT_FACTS[document_fact].ignored(seed.procedure, table)
        return [{"words": {"table": table}, "stated": stated.format(table=table), "ignored": ignored}]

    return find


def _comparisons(seed: Seed, previous: Seed | None) -> list[dict]:
    """Each WHERE comparison of a parameter: ignored = the comparison dropped, opposite = its neighbour
    (a boundary moved, = and <> swapped)."""
    params = {p.name for p in seed.procedure.params}

    def select(tree):
        nodes = _where_comparisons(tuple(_OPPOSITE))(tree)
        return [n for n in nodes if params & {c.name for c in n.find_all(exp.Column)}]

    proc = seed.procedure
    opposites = _edit_nodes(
        proc, select, lambda n: _OPPOSITE[type(n)](this=n.left.copy(), expression=n.right.copy()), "", ""
    )
    dropped = _edit_nodes(proc, select, lambda n: exp.true(), "", "")
    sites = []
    for opposite, ignored in zip(opposites, dropped):
        words = {"left": expression(opposite.before.left), "right": expression(opposite.before.right)}
        words["other_words"] = expression(opposite.after)
        sites.append(
            {
                "words": words,
                "stated": expression(opposite.before),
                "ignored": ignored.procedure,
                "opposite": opposite.procedure,
            }
        )
    return sites


def _counter_step(seed: Seed, previous: Seed | None) -> list[dict]:
    """status_update's counter: ignored = the counter left alone, opposite = a step of 2 (setting it to 1
    instead would agree with the reference on every suite whose calls select each row once)."""
    if seed.archetype != "status_update":
        return []

    def edited(change) -> Procedure:
        def one(s):
            if not (isinstance(s, Sql) and s.kind == "update"):
                return s
            trees = {d: t.copy() for d, t in s.trees.items()}
            for tree in trees.values():
                counter = next(e for e in tree.expressions if e.this.name == COUNT_COLUMN)
                change(tree, counter)
            return Sql(s.kind, trees)

        return seed.procedure.with_body(rebuild(seed.procedure.body, one))

    ignored = edited(lambda tree, counter: tree.set("expressions", [e for e in tree.expressions if e is not counter]))
    opposite = edited(lambda tree, counter: counter.expression.set("expression", exp.Literal.number(2)))
    return [{"words": {}, "stated": f"adds 1 to {COUNT_COLUMN}", "ignored": ignored, "opposite": opposite}]


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def key_comparisons(tree: exp.Expression, params: set[str]) -> list[exp.EQ]:
    """`column = parameter` conjuncts of the WHERE of a one-table query with no LIMIT (else none)."""
    if not isinstance(tree, exp.Select) or tree.args.get("joins") or tree.args.get("limit"):
        return []
    if not tree.args.get("group") and any(isinstance(e.unalias(), exp.AggFunc) for e in tree.expressions):
        return []  # one row whatever the key selects: a reading keeping one row cannot differ
    where = tree.args.get("where")
    if where is None or not isinstance(tree.args["from_"].this, exp.Table):
        return []
    out = []
    for node in _conjuncts(where.this):
        names = [c.name for c in node.find_all(exp.Column)] if isinstance(node, exp.EQ) else []
        if len(names) == 2 and len(params & set(names)) == 1:
            out.append(node)
    return out


def _limited_to_one_row(proc: Procedure) -> Procedure:
    """The procedure whose INSERT keeps at most one row of its query."""

    def one(s):
        if not (isinstance(s, Sql) and s.kind == "insert"):
            return s
        trees = {}
        for d, tree in s.trees.items():
            trees[d] = tree.copy()
            if isinstance(tree.expression, exp.Query):  # not INSERT ... VALUES, e.g. an ILE round's audit row
                trees[d].set("expression", trees[d].expression.limit(1))
        return Sql(s.kind, trees)

    return proc.with_body(rebuild(proc.body, one))


def _unique_key(seed: Seed, previous: Seed | None) -> list[dict]:
    """The claim that a key compared by equality identifies one row of the queried table: its reading keeps
    at most one row. The query is on one table and the comparison is a conjunct of its WHERE, so a call on
    which that reading differs proves that several rows of the table share the key: the database says
    otherwise."""
    if seed.archetype not in ("result_table", "raise_missing"):
        return []
    params = {p.name for p in seed.procedure.params}
    table = main_table(seed.lifted).name
    one_row = _limited_to_one_row(seed.procedure)
    sites = []
    for node in key_comparisons(seed.lifted.trees["postgres"], params):
        column = next(c.name for c in node.find_all(exp.Column) if c.name not in params)
        stated = expression(node)
        sites.append({"words": {"table": table, "column": column}, "stated": stated, "ignored": one_row})
    return sites


def _last_clause(seed: Seed, previous: Seed | None) -> list[dict]:
    """The clause the last ILE round added: the previous round's reference (run with the new signature) is
    the implementation that ignores it."""
    if previous is None or seed.requirement_lines[-1] in previous.requirement_lines:
        return []
    clause = seed.requirement_lines[-1]
    return [{"words": {}, "stated": clause, "ignored": previous_procedure(previous, seed)}]


_NO_MATCH = ERROR_CODES["no_match"]
_GENERIC = ERROR_CODES["generic"]

FACT_KINDS: tuple[FactKind, ...] = (
    FactKind(
        "emptied_first",
        "sweep",
        "Each call first removes every row of `{table}`, then inserts its rows: `{table}` holds only the latest "
        "call's rows.",
        "whether the rows that earlier calls put into `{table}` are kept",
        "inserts",
        "first applies the {term} sweep to `{table}`, then inserts",
        "Rows that earlier calls inserted into `{table}` stay there; each call only adds its own rows.",
        _document_fact(
            ("result_table", "raise_missing"), "result_table", "first removes every row of `{table}`, then inserts"
        ),
    ),
    FactKind(
        "comparison",
        "test",
        "A row qualifies only when {stated}.",
        "how {left} is compared with {right}",
        "{left} is compared with {right} (the requirement does not say how)",
        "{left} passes the {term} test against {right}",
        "A row qualifies only when {other_words}.",
        _comparisons,
    ),
    FactKind(
        "selection_label",
        "label",
        "The label written into review_status is 'selected'.",
        "which label is written into review_status",
        "to the selection label",
        "to the {term} label",
        "The label written into review_status is 'flagged'.",
        _document_fact(("status_update",), "status_update", "to 'selected'"),
    ),
    FactKind(
        "counter_step",
        "tally",
        f"Each call adds 1 to {COUNT_COLUMN} on every row it selects.",
        f"how {COUNT_COLUMN} changes on a row a call selects",
        f"updates {COUNT_COLUMN}",
        f"applies the {{term}} tally to {COUNT_COLUMN}",
        f"Each call adds 2 to {COUNT_COLUMN} on every row it selects.",
        _counter_step,
    ),
    FactKind(
        "error_code",
        "code",
        f"A key that matches nothing raises SQLSTATE '{_NO_MATCH['postgres'].reported}' in PostgreSQL and "
        f"RAISE_APPLICATION_ERROR({_NO_MATCH['oracle'].raised}, <message>) in Oracle.",
        "which error code a key that matches nothing raises",
        "(with an error code the requirement does not give)",
        "(with the {term} code)",
        f"A key that matches nothing raises the generic error: SQLSTATE '{_GENERIC['postgres'].reported}' in "
        f"PostgreSQL, RAISE_APPLICATION_ERROR({_GENERIC['oracle'].raised}, <message>) in Oracle.",
        _document_fact(("raise_missing",), "raise_missing", DOCUMENT_FACTS["raise_missing"].stated),
    ),
    FactKind(
        "log_kept",
        "ledger",
        "`{table}` is a log: earlier rows are never changed or removed.",
        "what happens to the rows earlier calls appended to `{table}`",
        "",
        "`{table}` is kept as the {term} ledger.",
        "Each call first removes the rows that earlier calls appended to `{table}`.",
        _document_fact(("summary_row",), "summary_row", DOCUMENT_FACTS["summary_row"].stated),
    ),
    FactKind(
        "unique_key",
        "key",
        "Several rows of `{table}` share a value of `{column}`: a call keeps every row that qualifies.",
        "whether a value of `{column}` identifies a single row of `{table}`",
        "",
        "",
        "In `{table}`, `{column}` identifies a single row: no two rows share a value of `{column}`.",
        _unique_key,
        ("env_contradiction",),
    ),
    FactKind(
        "ile_clause",
        "rule",
        "{stated}",
        "which further business rule the procedure applies",
        "One more business rule applies, which this requirement does not state.",
        "",
        "",
        _last_clause,
        ("mask",),
    ),
)


def facts_of(seed: Seed, previous: Seed | None = None) -> list[Fact]:
    """Every fact of the catalogue the seed's requirement states, in catalogue order; `previous` is the
    previous ILE round's seed when the seed is an enhanced one."""
    text = "\n".join(seed.requirement_lines)
    out = []
    for kind in FACT_KINDS:
        sites = [s for s in kind.find(seed, previous) if s["stated"] in text]
        for n, site in enumerate(sites, start=1):
            fact_id = kind.kind if len(sites) == 1 else f"{kind.kind}:{n}"
            ignored = site["ignored"]
            out.append(Fact(fact_id, kind, site["words"], site["stated"], ignored, site.get("opposite", ignored)))
    return out
