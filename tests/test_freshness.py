"""Build planning (pipelines/freshness.py) on a three-asset chain a -> b -> c whose data versions are their
values: what a build runs now, and what waits on it and runs only if its value changed."""

import dagster as dg

from pipelines.freshness import build_plan


def _chain(a_code: str, a_value: int) -> list[dg.AssetsDefinition]:
    @dg.asset(code_version=a_code)
    def a() -> dg.Output[int]:
        return dg.Output(a_value, data_version=dg.DataVersion(str(a_value)))

    @dg.asset(code_version="1")
    def b(a: int) -> dg.Output[int]:
        return dg.Output(a + 1, data_version=dg.DataVersion(str(a + 1)))

    @dg.asset(code_version="1")
    def c(b: int) -> dg.Output[int]:
        return dg.Output(b * 2, data_version=dg.DataVersion(str(b * 2)))

    return [a, b, c]


def test_what_waits_on_a_rerun_stage_runs_only_if_the_stage_s_value_changed(tmp_path):
    instance = dg.DagsterInstance.ephemeral(tempdir=str(tmp_path))

    def plan(assets, settled=frozenset()) -> tuple[list[str], list[str]]:
        planned = build_plan(dg.Definitions(assets=assets), instance, [], settled)
        return [k.to_user_string() for k in planned.run_now], [k.to_user_string() for k in planned.waiting]

    first = _chain("1", 1)
    assert plan(first) == (["a", "b", "c"], [])  # nothing stored: all of it, in one run
    assert dg.materialize(first, instance=instance).success
    assert plan(first) == ([], [])
    recoded = _chain("2", 1)  # a's code moved, not its value
    assert plan(recoded) == (["a"], ["b", "c"])
    assert dg.materialize(recoded, instance=instance, selection=["a"]).success
    assert plan(recoded) == ([], [])  # a came out as it was: b and c stay as they are
    changed = _chain("3", 5)
    assert dg.materialize(changed, instance=instance, selection=["a"]).success
    assert plan(changed) == (["b"], ["c"])
    assert plan(changed, frozenset({dg.AssetKey("b")})) == ([], [])  # what a build ran already runs no more
    assert dg.materialize(changed, instance=instance, selection=["b"]).success
    assert plan(changed) == (["c"], [])
