"""The manifest section of the procedures subset, per scenario and dialect, and the floors it must meet.

Per scenario and dialect: input (validated seeds), released, rejected by reason (the seed-level
rejections are reported once, under `seeds`), mutants killed / total, and the trivial-candidate and
determinism results (a seed a trivial candidate passes, or whose reference is not deterministic, never
reaches a scenario: `seeds` says how many were stopped; per scenario, the released tasks a trivial
candidate passed and those whose determinism was checked). The release gate then runs the trivial
candidates again on every released row (manifest `trivial_candidates.procedures`).
"""

from __future__ import annotations

from collections import Counter

from plbench.procedures.build import DatabaseProcedures
from plbench.procedures.scenarios import ADAPTERS
from plbench.procedures.scenarios.c2 import TARGET

MIN_KILL_RATE = 0.95
DIALECTS_OF = {"c2": (TARGET,)}  # scenarios released in one dialect only


def summarize(databases: list[DatabaseProcedures], dialects: tuple[str, ...]) -> dict:
    seeds = [v for db in databases for v in db.seeds.seeds]
    seed_rejections = Counter(r.reason_code for db in databases for r in db.seeds.rejections)
    out = {
        "seeds": {
            "validated": len(seeds),
            "databases": sum(1 for db in databases if db.seeds.seeds),
            "rejected": dict(sorted(seed_rejections.items())),
            "trivial_candidate_passes": seed_rejections.get("trivial_candidate_passes", 0),
            "nondeterministic": seed_rejections.get("nondeterministic", 0),
        },
        "scenarios": {},
    }
    tasks = [t for db in databases for t in db.tasks]
    trivial = {v.seed.seed_id: v.strength.trivial_passed for v in seeds}
    rejections = [r for db in databases for r in db.rejections]
    for scenario in ADAPTERS:
        for target in DIALECTS_OF.get(scenario, dialects):
            mine = [t for t in tasks if (t.scenario, t.dialect) == (scenario, target)]
            stage = f"scenario_{scenario}"
            refused = Counter(r.reason_code for r in rejections if r.stage == stage)
            total, killed = sum(t.mutants_total for t in mine), sum(t.mutants_killed for t in mine)
            out["scenarios"][f"{scenario}/{target}"] = {
                "input": len(seeds),
                "released": len(mine),
                "rejected": dict(sorted(refused.items())),
                "mutants_total": total,
                "mutants_killed": killed,
                "kill_rate": round(killed / total, 4) if total else None,
                "trivial_candidates_passed": sum(1 for t in mine if trivial[t.seed_id]),
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
