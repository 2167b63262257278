"""Task shards (plbench.shards, assets/sharded.py): the split and its inverse, the sharded stages merging into
exactly what one pass gives, and a sharded stage's steps shown as one stage line."""

import io
import logging
import re
from dataclasses import replace

import dagster as dg
import pytest

from assets.sharded import shard_outputs
from pipelines.progress import Progress, _EventHandler
from plbench.config import SCALED_TASK_SHARDS, BuildConfig, NotConfigured
from plbench.content_digest import content_digest
from plbench.mbpp.stages import (
    build_tasks,
    extract_test_cases,
    extraction_shards,
    infer_signatures,
    ingest,
    merge_replay,
    merge_test_cases,
    replay_part,
)
from plbench.mbpp.validation_stages import replay_stage
from plbench.sandbox import SandboxLimits
from plbench.shards import Shard, in_order, indexes, interleave, part_of, split
from tests.fixtures import write_mirror


def test_split_deals_the_items_round_robin_and_interleave_undoes_it():
    assert split(list("abcdefg"), 3) == [["a", "d", "g"], ["b", "e"], ["c", "f"]]
    assert split(list("ab"), 8) == [["a"], ["b"]]  # never an empty shard when there are items
    assert split([], 4) == [[]]  # one empty shard: the stage still runs, on nothing
    assert split(list("abc"), 0) == [["a", "b", "c"]]
    for n in range(1, 9):
        assert interleave(split(list(range(23)), n)) == list(range(23))
        assert interleave([part_of(list(range(5)), shard) for shard in indexes(n)]) == list(range(5))
    assert indexes(3) == [Shard(0, 3, None), Shard(1, 3, None), Shard(2, 3, None)] and indexes(0) == [Shard(0, 1, None)]
    assert [part_of(list("abcde"), s) for s in indexes(3)] == [["a", "d"], ["b", "e"], ["c"]]


def test_in_order_puts_the_parts_by_index_and_refuses_a_missing_or_repeated_shard():
    assert in_order([Shard(2, 3, "c"), Shard(0, 3, "a"), Shard(1, 3, "b")]) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="expected each of 0..n-1 once"):
        in_order([Shard(0, 3, "a"), Shard(2, 3, "c")])
    with pytest.raises(ValueError, match="expected each of 0..n-1 once"):
        in_order([Shard(0, 2, "a"), Shard(0, 2, "a")])


def test_the_shard_count_is_one_in_process_and_scaled_on_other_executors(monkeypatch):
    assert BuildConfig().shard_count == 1
    assert BuildConfig(executor="celery").shard_count == BuildConfig(executor="k8s").shard_count == SCALED_TASK_SHARDS
    assert BuildConfig(executor="multiprocess", task_shards=3).shard_count == 3
    monkeypatch.setenv("PLBENCH_TASK_SHARDS", "5")
    assert BuildConfig.from_env().shard_count == 5
    with pytest.raises(ValueError, match="task_shards must be 0"):
        _ = BuildConfig(task_shards=-1).shard_count


@pytest.fixture(scope="module")
def mbpp_inputs(tmp_path_factory):
    """MBPP and MBPP+ of the miniature mirror (tests/fixtures.py), a looping reference among them."""
    root = tmp_path_factory.mktemp("mirror")
    config = BuildConfig(
        raw_dir=root,
        cache_dir=tmp_path_factory.mktemp("cache"),
        catalog=write_mirror(root),
        sandbox=SandboxLimits(cpu_seconds=5, wall_seconds=15, case_seconds=1),
    )
    return config, [ingest(config, "mbpp"), ingest(config, "mbpp_plus")]


def _sharded_test_cases(config, ingested, shards: int):
    parts = extraction_shards(ingested, shards)
    assert len(parts) == shards
    return merge_test_cases(ingested, [Shard(s.index, s.count, extract_test_cases(s.part, config)) for s in parts])


def test_test_cases_in_any_number_of_shards_merge_into_one_passs_value(mbpp_inputs):
    config, ingested = mbpp_inputs
    whole = extract_test_cases(ingested, config)
    one, three = _sharded_test_cases(config, ingested, 1), _sharded_test_cases(config, ingested, 3)
    assert content_digest(one) == content_digest(three)  # the data version: same for any number of shards
    assert one.items == three.items == whole.items
    assert {r.subset for r in three.rejections} == {"mbpp", "mbpp_plus"}  # both subsets were split
    assert sorted(map(repr, three.rejections)) == sorted(map(repr, whole.rejections))
    order = [(p.subset, p.source_id) for i in ingested for p in i.problems]
    positions = [order.index((r.subset, r.source_id)) for r in three.rejections]
    assert positions == sorted(positions)  # in the problems' order


def test_replay_in_shards_merges_into_one_passs_report(mbpp_inputs, pg_engine):
    config, ingested = mbpp_inputs
    tasks = build_tasks(infer_signatures(extract_test_cases(ingested, config), ingested))
    whole = replay_stage(tasks, pg_engine, workers=2)
    parts = [replay_part(tasks, "postgres", shard) for shard in indexes(4)]
    assert [len(p.items) for p in parts] == [len(p) for p in split(whole.results, 4)]
    assert whole.tasks == len(whole.results) == sum(a.dialect == "postgres" for a in tasks.items) > 4
    reports = [Shard(i, 4, replay_stage(part, pg_engine, 1)) for i, part in enumerate(parts)]
    merged = merge_replay(reports[::-1])  # in whichever order the steps finished
    assert [r.task_id for r in merged.results] == [r.task_id for r in whole.results]
    assert content_digest(merged) == content_digest(whole) and merged.engine == whole.engine
    assert {r.status for r in merged.results} >= {"passed"}


def test_more_shards_than_tasks_leave_the_last_ones_empty_and_merge_all_the_same(mbpp_inputs):
    config, ingested = mbpp_inputs
    tasks = build_tasks(infer_signatures(extract_test_cases(ingested, config), ingested))
    oracle = NotConfigured("no Oracle here", "oracle")
    whole = replay_stage(tasks, oracle, workers=1)
    count = sum(a.dialect == "oracle" for a in tasks.items)
    parts = [replace(s, part=replay_stage(replay_part(tasks, "oracle", s), oracle, 1)) for s in indexes(count + 3)]
    assert [p.part.tasks for p in parts] == [1] * count + [0] * 3
    assert merge_replay(parts) == whole and whole.tasks == count > 0 and not whole.ran


def test_replay_shards_on_different_engines_are_refused(mbpp_inputs, pg_engine):
    config, ingested = mbpp_inputs
    tasks = build_tasks(infer_signatures(extract_test_cases(ingested, config), ingested))
    first, second = (replay_stage(replay_part(tasks, "postgres", s), pg_engine, 1) for s in indexes(2))
    second.engine = "PostgreSQL 0.0"
    with pytest.raises(ValueError, match="ran on different engines"):
        merge_replay([Shard(0, 2, first), Shard(1, 2, second)])


def test_a_sharded_stage_is_one_stage_line_counting_its_shards():
    """A real Dagster run of a graph-backed asset split by `shard_outputs`, through the CLI's stage lines."""
    stream = io.StringIO()

    @dg.logger
    def to_stream(_init_context) -> logging.Logger:
        logger = logging.Logger("test.progress", level=logging.DEBUG)
        logger.addHandler(_EventHandler(Progress(stream, tty=True)))
        return logger

    @dg.op(out=dg.DynamicOut(Shard))
    def squares_shards(context: dg.OpExecutionContext):
        yield from shard_outputs(context, [Shard(i, 3, part) for i, part in enumerate(split([1, 2, 3, 4, 5], 3))])

    @dg.op
    def squares_shard(shard: Shard) -> Shard:
        return Shard(shard.index, shard.count, [n * n for n in shard.part])

    @dg.op
    def squares_merge(context: dg.OpExecutionContext, shards: list[Shard]) -> list[int]:
        context.add_output_metadata({"count_in": 5, "count_out": 5})
        return interleave(in_order(shards))

    @dg.graph_asset
    def squares() -> list[int]:
        return squares_merge(squares_shards().map(squares_shard).collect())

    defs = dg.Definitions(
        assets=[squares], jobs=[dg.define_asset_job("sq", selection=[squares])], loggers={"to_stream": to_stream}
    )
    result = defs.resolve_job_def("sq").execute_in_process(run_config={"loggers": {"to_stream": {}}})
    assert result.success and result.output_for_node("squares") == [1, 4, 9, 16, 25]
    lines = stream.getvalue()
    for done in (1, 2, 3):
        assert f"\r\033[K  squares [{'#' * (8 * done)}{'-' * (24 - 8 * done)}] {done}/3 shards" in lines
    assert re.search(r"\r\033\[K✓ squares: 3 shards, 5 in, 5 out, [0-9.]+ s\n$", lines)
    assert "squares." not in lines  # no step of it gets a line of its own


def test_a_stages_seconds_add_its_steps_even_when_another_stages_steps_ran_between():
    from types import SimpleNamespace

    from pipelines.stages import seconds_by_stage

    steps = [
        SimpleNamespace(step_key=key, start_time=start, end_time=end)
        for key, start, end in [
            ("replay_validation_oracle.replay_validation_oracle_shards", 0.0, 1.0),
            ("replay_validation_postgres.replay_validation_postgres_shards", 1.0, 2.0),
            ("replay_validation_postgres.replay_validation_postgres_shard[shard_0]", 2.0, 40.0),
            ("replay_validation_oracle.replay_validation_oracle_shard[shard_0]", 40.0, 40.5),
            ("replay_validation_oracle.replay_validation_oracle_merge", 40.5, 41.0),
            ("release", 41.0, None),  # not finished: not counted
        ]
    ]
    assert seconds_by_stage(steps) == {"replay_validation_oracle": 2.0, "replay_validation_postgres": 39.0}
