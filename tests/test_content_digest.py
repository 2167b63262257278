"""A stage value's content digest (its data version): equal content, equal digest; anything else differs."""

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from plbench.content_digest import content_digest


@dataclass
class Stage:
    items: list
    by_name: dict
    seconds: float = 0.0
    tags: set = field(default_factory=set)


def test_measurements_insertion_order_and_set_order_are_not_content():
    a = Stage([1, "x"], {"a": 1, "b": 2}, seconds=1.5, tags={"p", "q"})
    b = Stage([1, "x"], {"b": 2, "a": 1}, seconds=99.0, tags={"q", "p"})
    assert content_digest(a) == content_digest(b)


def test_every_difference_in_content_changes_the_digest():
    base = Stage([1, "x"], {"a": 1})
    variants = [
        Stage([1, "x", None], {"a": 1}),
        Stage(["x", 1], {"a": 1}),  # list order is content
        Stage([1, "x"], {"a": 2}),
        Stage([1, "x"], {"a": 1}, tags={"t"}),
        Stage([True, "x"], {"a": 1}),  # 1, True, 1.0 and "1" are different values
        Stage([1.0, "x"], {"a": 1}),
        Stage(["1", "x"], {"a": 1}),
        Stage([(1,), "x"], {"a": 1}),
        Stage([Path("x"), "x"], {"a": 1}),
    ]
    digests = {content_digest(v) for v in variants}
    assert content_digest(base) not in digests and len(digests) == len(variants)
    assert content_digest(["ab", "c"]) != content_digest(["a", "bc"])  # strings are length-prefixed


def test_the_digest_is_the_same_in_another_process_with_another_hash_seed():
    code = "from plbench.content_digest import content_digest; print(content_digest({'k': {'a', 'b', 'c'}}))"
    seen = {
        subprocess.run(
            [sys.executable, "-c", code], env={"PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert seen == {content_digest({"k": {"a", "b", "c"}}) + "\n"}


def test_a_value_without_a_content_rule_is_refused_by_type():
    with pytest.raises(TypeError, match="no content rule for a list_iterator"):
        content_digest({"a": [iter([1])]})


@dataclass
class Cached:
    value: int
    rendered: dict = field(default_factory=dict, compare=False)  # a cache: not what the value equals by


def test_a_field_left_out_of_equality_is_not_content():
    assert content_digest(Cached(1)) == content_digest(Cached(1, {"oracle": "text"}))
    assert content_digest(Cached(1)) != content_digest(Cached(2))


def test_statements_digest_their_trees_whether_stored_or_not():
    import pickle

    import sqlglot

    from plbench.procedures.model import Sql

    def statement(text: str) -> Sql:
        return Sql("update", {d: sqlglot.parse_one(text, dialect=d) for d in ("oracle", "postgres")})

    fresh = statement("UPDATE t SET a = 1 WHERE b = 2")
    stored = pickle.loads(pickle.dumps(fresh))  # its trees kept pickled, not loaded
    loaded = pickle.loads(pickle.dumps(fresh))
    assert loaded.render("postgres") == "UPDATE t SET a = 1 WHERE b = 2;" and loaded.trees.loaded
    digests = {content_digest(s) for s in (fresh, stored, loaded)}
    assert len(digests) == 1 and not stored.trees.loaded  # digesting loads no tree
    assert content_digest(statement("UPDATE t SET a = 1 WHERE b = 3")) not in digests


def test_a_bare_tree_is_content_node_by_node_however_deep():
    import sqlglot

    def tree(text: str):
        return {"where": sqlglot.parse_one(text, read="postgres")}

    for text, spaced in (
        ("a = 1 AND b = 2", "a = 1   AND  b = 2"),
        ("CAST(a AS DECIMAL(10, 2))", "CAST(a AS DECIMAL(10,2))"),
    ):
        assert content_digest(tree(text)) == content_digest(tree(spaced))  # spacing is no content
    variants = [tree(t) for t in ("a = 1 AND b = 2", "a = 1 AND b = 3", "a = 1 OR b = 2", "a = 1 AND c = 2")]
    assert len({content_digest(v) for v in variants}) == len(variants)
    deep = " AND ".join(f"c{n} = {n}" for n in range(3000))  # deeper than the interpreter's recursion limit
    assert content_digest(tree(deep)) != content_digest(tree(deep.replace("c2999 = 2999", "c2999 = 0")))


def test_database_values_are_content_with_their_type_and_scale():
    import datetime
    from decimal import Decimal
    from uuid import UUID

    values = [
        Decimal("1.5"),
        Decimal("1.50"),  # the scale a column gave it
        1.5,
        datetime.date(2024, 1, 2),
        datetime.datetime(2024, 1, 2),
        datetime.time(1, 2),
        datetime.timedelta(days=1),
        UUID(int=1),
    ]
    assert len({content_digest(v) for v in values}) == len(values)
    assert content_digest([Decimal("1.5")]) == content_digest([Decimal("1.5")])


def test_dicts_of_any_keys_are_content_whatever_their_order():
    assert content_digest({2: "b", 1: "a"}) == content_digest({1: "a", 2: "b"})
    assert content_digest({("k", 1): 1, "k": 2}) == content_digest({"k": 2, ("k", 1): 1})
    assert len({content_digest(d) for d in ({1: "a"}, {"1": "a"}, {"a": 1}, {(1,): "a"})}) == 4
