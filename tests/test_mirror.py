"""The full build on the shared raw mirror (runs only when PLBENCH_RAW_DIR names it).

This is the tier that checks the numbers the project promises on the real data:
retention per subset and dialect, replay passing for every released task, every
mutant killed, and counts that reconcile.
"""

import os

import pytest

from tests.conftest import RAW

pytestmark = [
    pytest.mark.mirror,
    pytest.mark.skipif(not RAW, reason="PLBENCH_RAW_DIR is not set: the full raw mirror is not available"),
]


@pytest.fixture(scope="module")
def manifest(mirror_build):
    """The manifest of the session's mirror build (tests/conftest.py), started when the session began."""
    return mirror_build.manifest()


def test_every_input_is_released_or_rejected(manifest):
    assert manifest["subsets"]["mbpp"]["input"] == 974 and manifest["subsets"]["mbpp_plus"]["input"] == 399
    for counts in manifest["subsets"].values():
        assert counts["reconciles"] == {"oracle": True, "postgres": True}


@pytest.mark.parametrize("subset, floor", [("mbpp", 950), ("mbpp_plus", 390)])
def test_retention_reaches_the_promised_floor_in_both_dialects(manifest, subset, floor):
    released = manifest["subsets"][subset]["released"]
    assert released["postgres"] >= floor and released["oracle"] >= floor, released


def test_mbpp_ile_reaches_its_floor_with_every_round_proven_by_execution(manifest):
    released = manifest["subsets"]["mbpp_ile"]["released"]
    assert released["postgres"] >= 300 and released["oracle"] >= 300, released
    operator = manifest["operators"]["ile_mbpp"]
    assert operator["accepted"] >= released["postgres"] and operator["by_proposer"] == {
        "deterministic": operator["proposals"]
    }


@pytest.mark.parametrize("subset", ["mbpp", "mbpp_plus", "mbpp_ile"])
def test_postgres_replay_passes_and_kills_every_mutant(manifest, subset):
    postgres = manifest["validation"][subset]["postgres"]
    assert postgres["replay"]["ran"] and postgres["replay"]["failed"] == 0
    assert postgres["replay"]["passed"] == manifest["subsets"][subset]["released"]["postgres"]
    assert postgres["mutants"]["killed"] == postgres["mutants"]["total"] >= 3 * postgres["replay"]["passed"]
    assert manifest["validation"][subset]["oracle"]["replay"]["ran"] is bool(os.environ.get("PLBENCH_ORACLE_DSN"))


@pytest.mark.parametrize("subset", ["mbpp", "mbpp_plus", "mbpp_ile"])
def test_every_test_value_round_trips_through_postgres(manifest, subset):
    trip = manifest["validation"][subset]["postgres"]["roundtrip"]
    assert trip["ran"] and trip["values"] == trip["equal"] > 0, trip["tasks_with_mismatches"][:10]


def test_every_spider1_database_present_loads_and_the_missing_ones_are_named(manifest):
    spider1 = manifest["normalization"]["spider1"]
    assert spider1["databases"] == 166 and spider1["loaded"] == {"postgres": 163}
    assert set(spider1["failed"]) == {"baseball_1", "soccer_1", "wta_1"}
    assert spider1["oracle"]["emitted"] == 163 and spider1["oracle"]["static_problems"] == 0


def test_spider1_dev_gold_queries_are_equivalent_on_postgres(manifest):
    dev = manifest["normalization"]["spider1"]["gold_equivalence"]["postgres"]
    assert dev["total"] == 972 and dev["identical"] / dev["total"] >= 0.99, dev["mismatch"]


def test_spider_plsql_releases_the_promised_number_of_validated_tasks(manifest):
    counts = manifest["subsets"]["spider_plsql"]
    assert counts["input"] == 1034 and counts["rejected"]["database_missing"] == 62
    # The 49 dev questions whose gold result is empty: a block printing nothing would pass them (release gate).
    trivial = counts["rejected_by_dialect"]["postgres"]["trivial_candidate_passes"]
    assert trivial == 49 and counts["rejected_by_dialect"]["oracle"]["trivial_candidate_passes"] == 49
    assert counts["released"]["postgres"] >= 965 - trivial, counts
    assert (
        manifest["validation"]["spider_plsql"]["postgres"]["replay"]["failed"]
        == 1034 - 62 - trivial - counts["released"]["postgres"]
    )
    assert manifest["validation"]["spider_plsql"]["oracle"]["replay"]["ran"] is False


def test_every_spider2_lite_description_loads_on_postgres(manifest):
    lite = manifest["normalization"]["spider2_lite"]
    assert lite["databases"] == 162 and lite["failed"] == {} and lite["loaded"] == {"postgres": 162}


def test_spider2_records_reconcile_and_say_validation_did_not_run(manifest):
    counts = manifest["subsets"]["spider2"]
    assert counts["input"] == 547 and counts["rejected"]["no_gold_sql"] == 297
    assert counts["released"]["postgres"] >= 240 and counts["reconciles"] == {"oracle": True, "postgres": True}
    assert manifest["validation"]["spider2"]["postgres"]["replay"]["ran"] is False


def test_every_release_table_passes_its_quality_suite(manifest):
    assert all(suite["success"] for suite in manifest["quality"].values()), manifest["quality"]


# Procedures: the default build takes PLBENCH_PROCEDURE_DATABASES=10 databases (build time). On those ten
# `python bench/procedures_sample.py --databases 10` measured 121 seeds over 9 databases (academic is too
# large to copy per run), per dialect 121 tasks in A1-A4, B1, B3, B4 and C2 (PostgreSQL only), 93 in A5 and
# C1, 26 in B2 (at most 4 timed seeds a database), every mutant killed. The floors below sit just under
# those; the issue's figures need every database.
PROCEDURE_FLOORS = {"a5": 85, "c1": 85, "b2": 20}  # scenario -> tasks per dialect; the others 110


def test_procedure_seeds_and_scenarios_reach_the_capped_build_floors(manifest):
    section = manifest["procedures"]
    assert section["databases"] == {"taking_part": 10, "left_out": 153}  # of the 163 present (3 are missing)
    assert section["seeds"]["validated"] >= 110 and section["seeds"]["databases"] >= 9, section["seeds"]
    released = manifest["subsets"]["procedures"]["released"]
    assert released["postgres"] >= 10 * 85 and released["oracle"] >= 9 * 85, released
    for key, scenario in section["scenarios"].items():
        assert scenario["released"] >= PROCEDURE_FLOORS.get(key.split("/")[0], 110), (key, scenario)
        assert scenario["kill_rate"] >= 0.95 and scenario["trivial_candidates_passed"] == 0, (key, scenario)
        assert scenario["determinism_checked"] == scenario["released"] and scenario["reconciles"], (key, scenario)


def test_no_released_procedure_task_is_passed_by_a_trivial_candidate_or_fails_the_grammar(manifest):
    gate = manifest["trivial_candidates"]["procedures"]
    assert gate["ran"] and all(
        c["passed"] == [] and c["ran"] == group["tasks"]
        for group in gate["groups"].values()
        for c in group["candidates"].values()
    )
    subset = manifest["subsets"]["procedures"]
    assert "trivial_candidate_passes" not in subset["rejected_by_dialect"]["postgres"]
    # The grammar gate rejects an Oracle row whose text fails to parse: every released row parses, and none fails
    # (the names a procedure creates are spelt by the DDL's rule: on main 18 rows named a column date unquoted)
    grammar = manifest["oracle_syntax"]["by_subset"]["procedures"]
    assert all(kind["failed"] == 0 for kind in grammar.values()), grammar
    assert grammar["reference"]["parsed"] == subset["released"]["oracle"], grammar
    assert subset["rejected_by_dialect"]["oracle"].get("oracle_syntax", 0) == grammar["reference"]["failed"]
    replay = manifest["validation"]["procedures"]
    assert replay["postgres"]["replay"]["failed"] == 0 and replay["oracle"]["replay"]["ran"] is False


@pytest.mark.xfail(
    strict=True,
    reason="not reached by the default build (10 databases): measured 121 seeds over 9 databases, 22-121 tasks "
    "per scenario and dialect; the issue asks >= 1000 seeds over >= 120 databases and >= 150 per scenario, which "
    "needs PLBENCH_PROCEDURE_DATABASES=0: bench/procedures_sample.py --every 1 on all 163 gave 1885 seeds over 150 "
    "databases and 408-1885 tasks per scenario and dialect, its procedures in 8.7 min of a quiet machine (2 workers)",
)
def test_procedures_reach_the_issues_figures(manifest):
    section = manifest["procedures"]
    assert section["seeds"]["validated"] >= 1000 and section["seeds"]["databases"] >= 120
    assert all(s["released"] >= 150 for s in section["scenarios"].values())
