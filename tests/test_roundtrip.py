"""Value round trip through a real PostgreSQL: literal → identity function → to_jsonb → decode."""

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plbench.dialects.postgres import PostgresDialect
from plbench.typed_json import decode
from plbench.types import FLOAT, INT, STR, PyType
from plbench.validation.roundtrip import roundtrip_task
from tests.helpers import typed_task


def test_decode_follows_the_declared_type():
    assert decode([{"items": [1, 2]}, {"items": []}], PyType.list_of(PyType.list_of(INT))) == [[1, 2], []]
    assert decode({"f1": 1, "f2": "a"}, PyType("record", (INT, STR))) == (1, "a")
    assert decode([{"k": "a", "v": 1.5}], PyType("dict", (STR, FLOAT))) == {"a": 1.5}
    assert decode({"tag": "str", "int_v": None, "str_v": "x"}, PyType("variant", (INT, STR))) == "x"
    assert math.isinf(decode("Infinity", FLOAT)) and decode([3, 1], PyType("tuple_seq", (INT,))) == (3, 1)


def test_every_value_of_a_rich_task_comes_back_equal(pg_engine):
    task = typed_task(
        ["m", "d", "x"],
        [
            (([[1, 2], []], {"a": 1.5}, (1, "it's")), [1, "a", 2.5]),
            (([], {}, (2, None)), []),
        ],
    )
    result = roundtrip_task(pg_engine, task)
    assert (result.values, result.equal, result.mismatches, result.error) == (8, 8, (), "")


def test_a_lossy_literal_is_reported_as_a_mismatch(pg_engine, monkeypatch):
    original = PostgresDialect.literal

    def lossy(self, value, t, env, top=True):
        if t.kind == "float" and value is not None:
            return f"{float(value):.3g}::double precision"
        return original(self, value, t, env, top)

    monkeypatch.setattr(PostgresDialect, "literal", lossy)
    result = roundtrip_task(pg_engine, typed_task(["r"], [((2.0,), 3.14159265), ((1.0,), 1.0)]))
    assert result.values == 4 and result.equal == 3
    assert result.mismatches == ("case 1 expected value: sent 3.14159265, got 3.14",)


SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        SCALARS,
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5),
        st.lists(
            st.lists(
                st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=5),
                max_size=3,
            ),
            max_size=3,
        ),
        st.tuples(
            st.integers(-1000, 1000),
            st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8),
            st.floats(allow_nan=False),
        ),
        st.dictionaries(
            st.text(alphabet="abc", max_size=3), st.floats(allow_nan=False, allow_infinity=False), max_size=4
        ),
        st.sets(st.integers(-50, 50), max_size=5),
    )
)
def test_random_literals_round_trip_on_postgres(pg_engine, value):
    result = roundtrip_task(pg_engine, typed_task(["x"], [((value,), 1)]))
    assert result.error == "" and result.mismatches == (), result
