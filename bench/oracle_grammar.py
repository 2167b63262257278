"""The Oracle grammar check's cost on a release, and the choices it rests on, measured in one run.

    python bench/oracle_grammar.py --release releases/<version> [--sample-kb 400] [--skip-full]

Prints, for the release's Oracle statements (plbench.dialects.oracle_syntax.release_statements):
1. the volume as shipped and after the gate's rewrites (tables set apart from their names, gold
   queries wrapped, identical texts once);
2. on one sample of MBPP+ test blocks and database DDL, the parser's throughput with the
   package's generated parser as shipped (`--plain`), with the token constants folded (the
   default), LL prediction only (`--ll`) against SLL first with LL on error (the default), and V8's
   default heap against the parser's NODE_FLAGS (a larger young generation);
3. every statement of the release parsed with 1 worker, then 2 workers with an empty verdict
   cache, then again with that cache: wall seconds and the parser processes' CPU seconds,
   against the build budget (the whole rebuild within 4 minutes).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plbench.dialects.oracle_grammar import NODE_FLAGS, TOOL_DIR, check_statements, node_executable  # noqa: E402
from plbench.dialects.oracle_syntax import release_statements  # noqa: E402


def records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    frame = pd.read_parquet(path)
    return [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in frame.to_dict("records")
    ]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sample(statements: dict, kinds: tuple[str, ...], budget: int) -> dict[str, str]:
    """The first statements of these kinds (in id order) up to `budget` characters."""
    chosen, size = {}, 0
    for key in sorted(statements):
        s = statements[key]
        if s.kind in kinds and size < budget:
            chosen[key] = s.text
            size += len(s.text)
    return chosen


def run_tool(texts: dict[str, str], flags: list[str], node_flags=NODE_FLAGS) -> tuple[float, float, int]:
    """Wall and CPU seconds of one parser process over the texts, and how many failed."""
    requests = "".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in texts.items())
    cpu, start = children_cpu(), time.perf_counter()
    command = [node_executable(), *node_flags, "parse.js", *flags]
    done = subprocess.run(command, input=requests, capture_output=True, text=True, cwd=TOOL_DIR)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return wall, children_cpu() - cpu, done.stdout.count('"ok":false')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--release", type=Path, required=True)
    parser.add_argument("--sample-kb", type=int, default=400)
    parser.add_argument("--skip-full", action="store_true")
    args = parser.parse_args()
    rows = [SimpleNamespace(**r) for r in records(args.release / "tasks.parquet")]
    dbs = records(args.release / "databases.parquet")
    gold = records(args.release / "gold_queries.parquet")
    statements = release_statements(rows, dbs, gold)
    oracle = [r for r in rows if r.dialect == "oracle"]
    columns = ("setup_sql", "scaffold", "test_block", "reference_code")
    shipped = sum(len(getattr(r, c) or "") for r in oracle for c in columns)
    shipped += sum(len(d["ddl"]) for d in dbs if d["dialect"] == "oracle") + sum(
        len(g["oracle_sql"] or "") for g in gold
    )
    distinct = {s.text for s in statements.values()}
    print(
        f"release {args.release}: {len(oracle)} Oracle task rows, {len(dbs) // 2} databases, {len(gold)} gold queries"
    )
    print(f"  Oracle text shipped {shipped / 1e6:.1f} MB; statements after rewrites {len(statements)}, ", end="")
    print(f"{sum(len(s.text) for s in statements.values()) / 1e6:.1f} MB; distinct {len(distinct)}, ", end="")
    print(f"{sum(map(len, distinct)) / 1e6:.1f} MB")
    for kind in sorted({s.kind for s in statements.values()}):
        texts = {s.text for s in statements.values() if s.kind == kind}
        print(f"    {kind:14} {sum(1 for s in statements.values() if s.kind == kind):6} statements, ", end="")
        print(f"{sum(map(len, texts)) / 1e6:6.2f} MB distinct")

    budget = args.sample_kb * 1000
    texts = sample(statements, ("test_block",), budget // 2) | sample(statements, ("database_ddl",), budget // 2)
    size = sum(map(len, texts.values())) / 1e3
    print(f"\nsample: {len(texts)} statements, {size:.0f} KB (MBPP+/MBPP test blocks and database DDL), one process")
    for label, flags, node_flags in [
        ("as shipped (--plain), SLL then LL", ["--plain"], NODE_FLAGS),
        ("folded, LL only (--ll)", ["--ll"], NODE_FLAGS),
        ("folded, SLL then LL, V8 default heap", [], ()),
        ("folded, SLL then LL (default)", [], NODE_FLAGS),
    ]:
        wall, cpu, failed = run_tool(texts, flags, node_flags)
        print(f"  {label:36} wall {wall:7.1f} s  cpu {cpu:7.1f} s  {size / cpu:6.0f} KB/cpu-s  failed {failed}")

    if args.skip_full:
        return
    print("\nthe whole release (every Oracle statement, allowed constructs rewritten, identical texts once)")
    with tempfile.TemporaryDirectory() as cache:
        for workers, cache_dir, label in [(1, None, "no cache"), (2, cache, "cache cold"), (2, cache, "cache warm")]:
            cpu, start = children_cpu(), time.perf_counter()
            check = check_statements({k: s.text for k, s in statements.items()}, workers=workers, cache_dir=cache_dir)
            wall = time.perf_counter() - start
            used = children_cpu() - cpu
            print(f"  workers {workers}, {label}: wall {wall:6.1f} s  parser cpu {used:6.1f} s  ", end="")
            print(f"parsed now {check.parsed_now}  failed {len(check.failed())} of {len(statements)}")
    print("  (build budget: 240 s for the whole rebuild; on a loaded machine wall > cpu / workers)")


if __name__ == "__main__":
    main()
