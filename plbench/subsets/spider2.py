"""Spider 2.0-Lite as a subset: blocks over a Spider 2.0-Lite question's gold, with the official result.

The stages are in plbench.spider (stages, spider2, spider2_tasks, spider2_rows). Only sample rows of
the source databases exist, so the rows are `not_run`; the expected output is the official result
CSV, and the trivial candidates (plbench.grading.trivial) print nothing, or only its first row.
"""

from __future__ import annotations

from plbench.subsets.spider_plsql import SpiderSubset


class Spider2Subset(SpiderSubset):
    name = "spider2"
    source_dataset = "xlang-ai/Spider2 (Spider 2.0-Lite)"
    licence = "MIT"
    summary = (
        "blocks over a Spider 2.0-Lite question's gold SQL transpiled to the dialect, with the tables and "
        "columns it reads and the official result file as the expected output"
    )
    raw_asset, tasks_asset = "spider2_lite_raw", "spider2_tasks"


SUBSET = Spider2Subset()
