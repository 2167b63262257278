"""How a release loads with common tools: per-subset files and the dataset card's `configs`.

Hugging Face `datasets` reads the card's YAML `configs`, each selecting data files; a config
cannot filter rows, so every subset also gets a file of its own (the rows of tasks.parquet,
which stays whole).
"""

from __future__ import annotations

import pyarrow as pa

from plbench.taskrow import TASK_SCHEMA


def subset_file(subset: str) -> str:
    return f"subsets/{subset}.parquet"


def subset_tables(task_rows: list[dict]) -> dict[str, tuple[list[dict], pa.Schema]]:
    """The rows of tasks.parquet again, one file per subset: a dataset loader's config selects
    files, not rows, so each subset's config needs a file of its own."""
    per_subset: dict[str, list[dict]] = {}
    for row in task_rows:
        per_subset.setdefault(row["subset"], []).append(row)
    return {subset_file(name): (rows, TASK_SCHEMA) for name, rows in sorted(per_subset.items())}


def _released_subsets(manifest: dict) -> list[str]:
    return [name for name, counts in manifest["subsets"].items() if sum(counts["released"].values())]


def config_lines(manifest: dict) -> list[str]:
    """`configs` of the card's front matter: every task as `default`, and one config per released subset."""
    configs = [("default", "tasks.parquet")] + [(s, subset_file(s)) for s in _released_subsets(manifest)]
    lines = ["configs:"]
    for name, path in configs:
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {path}"]
    return lines


def loading_lines(manifest: dict) -> list[str]:
    subset = next(iter(_released_subsets(manifest)), "mbpp")
    return [
        "## Loading",
        "",
        "With the folder's path (`default` is every task; one config per subset: "
        f"{', '.join(f'`{s}`' for s in _released_subsets(manifest)) or 'none'}):",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'release = "releases/{manifest["version"]}"  # this folder',
        'tasks = load_dataset(release, split="test")',
        f'{subset} = load_dataset(release, "{subset}", split="test")',
        "",
        "import pandas as pd",
        "",
        f'{subset}_frame = pd.read_parquet(f"{{release}}/{subset_file(subset)}")',
        "",
        "import duckdb",
        "",
        "duckdb.sql(f\"SELECT subset, dialect, count(*) FROM '{release}/tasks.parquet' GROUP BY ALL\").show()",
        "```",
        "",
    ]
