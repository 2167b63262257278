"""Which assets a `plbench build` must run, from what the Dagster instance recorded: the rest are fresh
and their stored values are reused, so a build in which nothing changed runs nothing.

An asset is fresh when its latest materialization
- carries the code version the definitions give it now (its code, and the settings it reads),
- was made from the data versions its upstream assets hold now (each asset's data version is its
  value's content digest: assets/versions.py), or, for an upstream partitioned by database (whose
  325 partitions Dagster does not track one by one), after each of its partitions' latest values, or
  before values of the same content (each partition's content digest, in its metadata: assets/spider.py),
- passed its blocking checks, and the files it names (path metadata) still exist;
and every upstream asset is fresh. For a partitioned asset, every registered partition must be.

What depends on an outdated asset waits (`Plan.waiting`) unless it is outdated itself: a build runs what is
outdated now (`Plan.run_now`), then plans again, so an asset whose upstream values came out as they were
(a fix that changed no output, a settings change that left the raw files' content as it was) is not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_TAG,
    get_input_data_version_tag,
)

from assets.spider import PARTITION_DIGEST


@dataclass
class Recorded:
    """What the instance holds of an asset's latest materialization (of each partition, if partitioned)."""

    code_versions: set[str | None]
    first_storage_id: int  # the oldest of the partitions' latest materializations
    last_storage_id: int  # the newest
    input_versions: list[dict[str, str]] = field(default_factory=list)  # per record: tag -> data version
    data_version: str | None = None
    paths: list[str] = field(default_factory=list)
    partitions: dict[str, tuple[int, str | None]] = field(default_factory=dict)  # key -> (storage id, digest)


NO_PARTITIONS = Recorded(set(), 0, 0)  # a partitioned asset when no partition is registered


def _recorded(record, tag_keys: list[str]) -> tuple[dict[str, str], list[str]]:
    materialization = record.asset_materialization
    tags = materialization.tags or {}
    paths = [v.value for v in materialization.metadata.values() if isinstance(v, dg.PathMetadataValue)]
    return {t: tags.get(t) for t in [CODE_VERSION_TAG, DATA_VERSION_TAG, *tag_keys]}, paths


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey, tag_keys: list[str]) -> Recorded | None:
    records = instance.fetch_materializations(key, limit=1).records
    if not records:
        return None
    tags, paths = _recorded(records[0], tag_keys)
    storage_id = records[0].storage_id
    return Recorded({tags[CODE_VERSION_TAG]}, storage_id, storage_id, [tags], tags[DATA_VERSION_TAG], paths)


def _latest_partitions(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    partitions: list[str],
    tag_keys: list[str],
    before: int | None = None,
) -> Recorded | None:
    """Each partition's latest materialization (before storage id `before`, if given), newest records first (a
    build writes them all at once); None when a partition has none."""
    if not partitions:
        return NO_PARTITIONS
    latest = {}  # partition -> its newest record
    cursor = None
    while len(latest) < len(partitions):
        page = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=partitions, before_storage_id=before),
            limit=len(partitions),
            cursor=cursor,
        )
        for record in page.records:
            latest.setdefault(record.partition_key, record)
        if not page.has_more:
            break
        cursor = page.cursor
    if len(latest) < len(partitions):
        return None
    tags = [_recorded(record, tag_keys)[0] for record in latest.values()]
    storage_ids = [record.storage_id for record in latest.values()]
    return Recorded(
        {t[CODE_VERSION_TAG] for t in tags},
        min(storage_ids),
        max(storage_ids),
        tags,
        partitions={k: (record.storage_id, _digest(record)) for k, record in latest.items()},
    )


def _digest(record) -> str | None:
    digest = record.asset_materialization.metadata.get(PARTITION_DIGEST)
    return digest and digest.value


def _same_content_since(instance: dg.DagsterInstance, key: dg.AssetKey, theirs: Recorded, since: int) -> bool:
    """Whether each partition materialized after storage id `since` holds what it held then (equal content
    digests; a partition without one, or new since, counts as changed)."""
    again = {k: digest for k, (storage_id, digest) in theirs.partitions.items() if storage_id > since}
    before = _latest_partitions(instance, key, sorted(again), [], before=since)
    return before is not None and all(
        digest is not None and before.partitions[k][1] == digest for k, digest in again.items()
    )


def _checks_passed(instance: dg.DagsterInstance, node, recorded: Recorded) -> bool:
    keys = list(node.check_keys)
    if not keys:
        return True
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    for key in keys:
        record = latest.get(key)
        evaluation = record.event.asset_check_evaluation if record and record.event else None
        target = evaluation.target_materialization_data if evaluation else None
        if not evaluation or not evaluation.passed or not target or target.storage_id != recorded.last_storage_id:
            return False
    return True


@dataclass
class Plan:
    """What a build must run: `run_now`, outdated whatever its upstream values come to, upstream first; and
    `waiting`, what depends on those and is fresh if their new values are the ones it was made from."""

    run_now: list[dg.AssetKey]
    waiting: list[dg.AssetKey]

    @property
    def outdated(self) -> list[dg.AssetKey]:
        """Every asset not fresh now, upstream first; empty when every stored value is fresh."""
        return self.run_now + self.waiting


def build_plan(
    defs: dg.Definitions, instance: dg.DagsterInstance, partitions: list[str], settled: frozenset = frozenset()
) -> Plan:
    """Plan a build from what the instance recorded. `settled`: assets this build ran already, fresh from
    now on even if a check of theirs failed, so that no asset runs twice in one build."""
    graph = defs.resolve_asset_graph()
    recorded: dict[dg.AssetKey, Recorded | None] = {}
    plan = Plan([], [])
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        parents = [p for p in node.parent_keys if graph.has(p) and graph.get(p).is_materializable]
        tag_keys = [get_input_data_version_tag(p) for p in parents if not graph.get(p).is_partitioned]
        recorded[key] = (
            _latest_partitions(instance, key, partitions, tag_keys)
            if node.is_partitioned
            else _latest(instance, key, tag_keys)
        )
        if key in settled or recorded[key] is NO_PARTITIONS:  # no Spider subset: no database stage to build
            continue
        if any(p in plan.waiting for p in parents):
            plan.waiting.append(key)
        elif not _fresh(instance, graph, node, [p for p in parents if p not in plan.run_now], recorded):
            plan.run_now.append(key)
        elif any(p in plan.run_now for p in parents):
            plan.waiting.append(key)
    return plan


def _fresh(instance, graph, node, parents, recorded) -> bool:
    """Whether `node` is fresh as far as its code, checks, files and the values of `parents` (those of its
    upstream assets that will not run) go."""
    mine = recorded[node.key]
    if mine is None or mine.code_versions != {node.code_version}:
        return False
    if not _checks_passed(instance, node, mine):
        return False
    for parent in parents:
        theirs = recorded[parent]
        if graph.get(parent).is_partitioned:
            if theirs.last_storage_id > mine.first_storage_id and not _same_content_since(
                instance, parent, theirs, mine.first_storage_id
            ):
                return False
        elif any(r[get_input_data_version_tag(parent)] != theirs.data_version for r in mine.input_versions):
            return False
    return all(Path(p).exists() for p in mine.paths)
