"""Task-sharded stages as graph-backed assets: `<asset>_shards` splits the tasks (plbench.shards), one
`<asset>_shard` step per shard does the stage's work, `<asset>_merge` puts the parts back together and is
what materializes the asset. A shard holds its part (the test cases' problems, a few MB) or names it only
(replay's: each shard step reads `mbpp_tasks` itself, rather than a stored copy of its part of 28-30 MB).

Dynamic mapping rather than partitions: every shard is a step of the same run, so `plbench build` stays one
run while a multiprocess, celery or Kubernetes executor runs the shards on its workers side by side; and a
Dagster job cannot hold assets of two partitions definitions (the databases' already is one). The op names
carry the asset's, since a job's ops need unique names; the CLI's stage lines group the steps by asset
(pipelines.stages.step_stage).
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

from plbench.shards import Shard


def shard_outputs(context: dg.OpExecutionContext, shards: list[Shard], output: str = "result") -> Iterator:
    """The shards as the dynamic output `output`, after logging how many for the stage line's bar."""
    context.log.info(f"progress 0/{len(shards)} shards")
    for shard in shards:
        yield dg.DynamicOutput(shard, mapping_key=f"shard_{shard.index}", output_name=output)
