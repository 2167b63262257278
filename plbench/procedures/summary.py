"""The manifest section of the procedures subset, per scenario and dialect, and the floors it must meet.

Per scenario and dialect: input (validated seeds), released, rejected by reason (the seed-level
rejections are reported once, under `seeds`), whether input = released + rejected, mutants killed / total,
and the trivial-candidate and determinism results (a seed a trivial candidate passes, or whose reference
is not deterministic, never reaches a scenario: `seeds` says how many were stopped; per scenario, the
released tasks a trivial candidate passed and those whose determinism was checked). `summarize` counts what
the build made; `recount` counts what the release keeps, once its gates (the trivial candidates run again on
every row, the Oracle grammar) have moved rows to the rejections (manifest `trivial_candidates.procedures`,
`oracle_syntax`).
"""

from __future__ import annotations

from collections import Counter

from plbench.procedures.build import DatabaseProcedures
from plbench.procedures.scenarios import ADAPTERS
from plbench.procedures.scenarios.c2 import TARGET
from plbench.taskrow import by_dialect

MIN_KILL_RATE = 0.95
DIALECTS_OF = {"c2": (TARGET,)}  # scenarios released in one dialect only
TRIVIAL_PASSES = "trivial_candidate_passes"  # the reason a seed, or at the release gate a row, is rejected with


def summarize(databases: list[DatabaseProcedures], dialects: tuple[str, ...]) -> dict:
    """The section on what the build made: every scenario task, and the adapters' rejections."""
    seeds = [v for db in databases for v in db.seeds.seeds]
    seed_rejections = Counter(r.reason_code for db in databases for r in db.seeds.rejections)
    tasks = [t for db in databases for t in db.tasks]
    trivial = {v.seed.seed_id for v in seeds if v.strength.trivial_passed}
    rejections = [r for db in databases for r in db.rejections]
    return {
        "seeds": {
            "validated": len(seeds),
            "databases": sum(1 for db in databases if db.seeds.seeds),
            "rejected": dict(sorted(seed_rejections.items())),
            "trivial_candidate_passes": seed_rejections.get(TRIVIAL_PASSES, 0),
            "nondeterministic": seed_rejections.get("nondeterministic", 0),
        },
        "scenarios": scenario_counts(
            len(seeds), tasks, rejections, dialects, {t.source_id for t in tasks if t.seed_id in trivial}
        ),
    }


def recount(section: dict, rows: list, rejections: list, dialects: tuple[str, ...]) -> dict:
    """The section on what the release keeps: per scenario and dialect its rows (TaskRow) and every rejection
    of its inputs, the adapters', `not_in_dialect` and the release gates' alike."""
    trivial = {r.source_id for r in rejections if r.reason_code == TRIVIAL_PASSES}
    counts = scenario_counts(section["seeds"]["validated"], rows, rejections, dialects, trivial)
    return {**section, "scenarios": counts}


def scenario_counts(validated: int, tasks: list, rejections: list, dialects: tuple[str, ...], trivial: set) -> dict:
    """Per scenario and dialect, over `tasks` (ScenarioTasks or TaskRows: scenario, dialect, source_id and
    mutant counts) and the rejections of the (scenario, seed) inputs (source id `<scenario>/<seed id>`; one
    without a dialect counts in each); `trivial`: source ids a trivial candidate passed."""
    out = {}
    for scenario in ADAPTERS:
        made = by_dialect(t for t in tasks if t.scenario == scenario)
        inputs_refused = by_dialect(r for r in rejections if r.source_id.split("/", 1)[0] == scenario)
        for target in DIALECTS_OF.get(scenario, dialects):
            mine = made[target]
            refused = Counter(r.reason_code for r in inputs_refused[None] + inputs_refused[target])
            total, killed = sum(t.mutants_total for t in mine), sum(t.mutants_killed for t in mine)
            out[f"{scenario}/{target}"] = {
                "input": validated,
                "released": len(mine),
                "rejected": dict(sorted(refused.items())),
                "reconciles": validated == len(mine) + sum(refused.values()),
                "mutants_total": total,
                "mutants_killed": killed,
                "kill_rate": round(killed / total, 4) if total else None,
                "trivial_candidates_passed": sum(1 for t in mine if t.source_id in trivial),
                "determinism_checked": len(mine),  # two fresh runs and a shuffled copy agreed
            }
    return out


def below_floor(section: dict) -> list[str]:
    """Scenarios whose mutant kill rate is under MIN_KILL_RATE (the blocking check's findings)."""
    return [
        f"{key}: {value['kill_rate']:.1%} of mutants killed"
        for key, value in section["scenarios"].items()
        if value["kill_rate"] is not None and value["kill_rate"] < MIN_KILL_RATE
    ]
