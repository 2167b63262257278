"""Seconds a fresh interpreter takes to load the Dagster definitions (what every `plbench` command and
every stage rerun pays before anything runs), this checkout's code against a baseline revision's.

    PYTHONPATH=. python bench/definitions_load.py [--baseline main] [--rounds 5]

Each round runs `import pipelines.definitions` once per revision in a new process (bench/revisions.py),
rounds alternating which goes first, and prints the wall seconds of the import, of which the seconds
`assets.versions.code_version` took (the code versions: each asset's source closure, parsed and hashed).
Every asset's code version must equal the baseline's (the two trees' library files are the same unless
the change is to them: then this reports DIFFERENT).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def child(out: Path) -> None:
    """One load with the code on PYTHONPATH."""
    start = time.perf_counter()
    import assets.versions as versions

    spent, inner = [0.0], versions.code_version

    def timed(*modules: str) -> str:
        began = time.perf_counter()
        try:
            return inner(*modules)
        finally:
            spent[0] += time.perf_counter() - began

    versions.code_version = timed  # before the modules that import it by name are imported
    import pipelines.definitions

    wall = time.perf_counter() - start
    graph = pipelines.definitions.defs.resolve_asset_graph()
    # `<code>-<settings>`: the settings name this tree's folders, so only the code part can be compared
    code = {k.to_user_string(): graph.get(k).code_version.rsplit("-", 1)[0] for k in graph.get_all_asset_keys()}
    out.write_bytes(pickle.dumps({"run": (wall, spent[0]), "code_versions": code}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return

    from bench.revisions import OUT, revision_runs
    from plbench.config import BuildConfig

    runs: dict[str, list] = {args.baseline: [], "this checkout": []}
    versions = {}
    for r, label, got, _ in revision_runs(
        args.baseline, args.rounds, HERE, ["--child", OUT], BuildConfig().pg_data_dir
    ):
        runs[label].append(got["run"])
        versions[label] = got["code_versions"]
        print(f"round {r} {label:14s} {got['run'][0]:5.2f} s load, of which code versions {got['run'][1]:5.2f} s")
    for label, done in runs.items():
        print(
            f"{label:14s} median {statistics.median(d[0] for d in done):5.2f} s load, "
            f"code versions {statistics.median(d[1] for d in done):5.2f} s"
        )
    same = versions[args.baseline] == versions["this checkout"]
    print(f"{len(versions['this checkout'])} assets' code versions " + ("equal" if same else "DIFFERENT"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
