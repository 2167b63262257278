"""Procedural ILE over one loaded database, and the tasks it yields: `procedures_ile` and `multiturn`.

Every validated seed is enhanced (plbench.operators.procedural_ile) in one workspace and its shuffled twin.
- `procedures_ile`: the final round as an A1 task (the numbered requirement with every added clause),
  through A1's acceptance check, per dialect; a seed with no accepted round is rejected with the reasons.
- `multiturn`: the rounds as an episode of 1 + rounds turns (3 to 5): turn 1 asks for the seed's procedure,
  turn k for "update the procedure to also ..." the (k-1)-th clause, each turn with its own reference, setup
  and call suite; an enhanced seed with too few rounds for an episode is rejected as `too_few_turns`.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from plbench.operators.framework import Ledger
from plbench.operators.procedural_ile import SUBSET, EnhancedSeed, ProcEnv, enhance
from plbench.procedures.build import context
from plbench.procedures.parallel import each_database
from plbench.procedures.rows import task_row
from plbench.procedures.scenarios import a1
from plbench.procedures.seeds import ValidatedSeed, workspaces
from plbench.procedures.stages import selected_databases
from plbench.procedures.strength import fails_suite
from plbench.procedures.tasks import AdapterRejected, ScenarioTask, make_task, prompt
from plbench.records import Rejection
from plbench.taskrow import TaskRow

MULTITURN = "multiturn"
MIN_TURNS, MAX_TURNS = 3, 5
# A backend keeps the compiled PL/pgSQL of every procedure it ran, and each rollback walks it: in a mirror build
# the two serving ILE held 36,491 memory contexts. Fresh sessions every few seeds keep it small
# (bench/procedural_ile_sample.py --every 32: ILE 243 -> 85 s, the same output).
SEEDS_PER_SESSION = 8


@dataclass(frozen=True)
class Turn:
    conversation_id: str
    turn_index: int  # 1-based
    turn_count: int
    task: ScenarioTask
    proposer: str


@dataclass
class DatabaseIle:
    """What procedural ILE made of one database's seeds."""

    database: str
    seeds: int = 0  # validated seeds enhanced: each ends in `enhanced` or `rejections`
    enhanced: list[EnhancedSeed] = field(default_factory=list)
    tasks: list[ScenarioTask] = field(default_factory=list)  # procedures_ile
    turns: list[Turn] = field(default_factory=list)  # multiturn
    rejections: list[Rejection] = field(default_factory=list)  # procedures_ile
    multiturn_rejections: list[Rejection] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    reference_failures: dict[str, str] = field(default_factory=dict)  # "<seed id> round <k>" -> where it fails


def round_notes(enhanced: EnhancedSeed) -> tuple[str, ...]:
    """Statements and cyclomatic complexity of every version, the seed first."""
    names = ("seed", *enhanced.rules)
    return tuple(
        f"round {i} ({name}): {v.seed.procedure.statements} statements, cyclomatic {v.seed.procedure.cyclomatic}"
        for i, (name, v) in enumerate(zip(names, enhanced.history))
    )


def ile_tasks(ctx_of, enhanced: EnhancedSeed) -> list[ScenarioTask]:
    """The final round as A1 tasks, one per dialect, each through A1's check."""
    ctx = ctx_of(enhanced.final)
    tasks = a1.build(ctx)
    for task in tasks:
        a1.check(task, ctx)
    notes = (f"ILE rounds: {', '.join(enhanced.rules)} (proposer {enhanced.proposer})", *round_notes(enhanced))
    seed_id = enhanced.history[0].seed.seed_id
    return [replace(t, task_id=f"{SUBSET}/{seed_id}", notes=t.notes + notes) for t in tasks]


def turn_prompt(ctx, dialect: str, index: int, clause: str) -> str:
    ask = f"Update the procedure you wrote in turn {index - 1} so that it also does the following; keep the rest."
    return prompt(ctx, dialect, ask, (clause,), {})


def episode(ctx_of, enhanced: EnhancedSeed) -> list[Turn]:
    """One turn per version (the seed, then each round), in every dialect the final round has."""
    seed_id = enhanced.history[0].seed.seed_id
    conversation = f"{MULTITURN}/{seed_id}"
    count = len(enhanced.history)
    turns = []
    for index, version in enumerate(enhanced.history, start=1):
        ctx = ctx_of(version)
        for target in enhanced.final.seed.dialects:
            if index == 1:
                text = prompt(ctx, target, "Write the procedure.", version.seed.requirement_lines, {})
            else:
                text = turn_prompt(ctx, target, index, enhanced.clauses[index - 2])
            task = make_task(ctx, "a1" if index == 1 else MULTITURN, target, text, {})
            task = replace(task, task_id=f"{conversation}/turn{index}")
            turns.append(Turn(conversation, index, count, task, enhanced.proposer))
    return turns


@dataclass
class ProceduralIle:
    """Procedural ILE over the databases that have validated seeds, as many as the cap takes (the procedural_ile
    asset)."""

    databases: list[DatabaseIle] = field(default_factory=list)
    executed: tuple[str, ...] = ()  # dialects whose references ran
    engine_version: str | None = None
    rounds: int = 0  # the configured maximum
    seconds: float = 0.0
    left_out: list[str] = field(default_factory=list)  # databases with seeds beyond the configured cap

    @property
    def ledger(self) -> Ledger:
        out = Ledger()
        for db in self.databases:
            out.extend(db.ledger)
        return out


def build_ile(
    seeds: dict, databases_of: Callable, engine, proposer, rounds: int, judge=None, workers: int = 1, cap: int = 0
) -> ProceduralIle:
    """ILE on the validated seeds of the databases that have some (`seeds`: name -> DatabaseSeeds;
    `databases_of(name)`: its NormalizedDatabases in PostgreSQL and Oracle), `cap` of them spread over the name
    order (0: every one), in PostgreSQL, `workers` databases side by side (the proposers and the judge keep no
    state between proposals, so the output is the same for any number)."""
    start = time.perf_counter()
    names, left_out = selected_databases([name for name, db in seeds.items() if db.seeds], cap)
    out = ProceduralIle(executed=(engine.dialect,), engine_version=engine.version(), rounds=rounds, left_out=left_out)

    def enhanced(name: str) -> DatabaseIle:
        pg_db, oracle_db = databases_of(name)
        return database_ile(engine, pg_db, oracle_db, seeds[name].seeds, proposer, rounds, judge)

    out.databases = each_database(enhanced, names, workers)
    out.seconds = time.perf_counter() - start
    return out


def summary(stage: ProceduralIle) -> dict:
    """The manifest section: seeds enhanced, accepted rounds per seed, and per round the mean statements and
    cyclomatic complexity of the references (round 0: the seeds), against ProcArena's 32.1 and 18.6."""
    enhanced = [e for db in stage.databases for e in db.enhanced]
    per_round: dict[int, list] = defaultdict(list)
    for e in enhanced:
        for i, version in enumerate(e.history):
            per_round[i].append(version.seed.procedure)
    return {
        "databases": {"taking_part": len(stage.databases), "left_out": len(stage.left_out)},
        "seeds": sum(db.seeds for db in stage.databases),
        "enhanced": len(enhanced),
        "max_rounds": stage.rounds,
        "rounds": dict(sorted(Counter(e.rounds for e in enhanced).items())),
        "episodes": len({t.conversation_id for db in stage.databases for t in db.turns}),
        "per_round": {
            str(i): {
                "references": len(procs),
                "statements_mean": round(sum(p.statements for p in procs) / len(procs), 2),
                "cyclomatic_mean": round(sum(p.cyclomatic for p in procs) / len(procs), 2),
            }
            for i, procs in sorted(per_round.items())
        },
    }


def database_ile(
    engine, pg_db, oracle_db, validated: list[ValidatedSeed], proposer, rounds: int, judge=None
) -> DatabaseIle:
    """ILE on every validated seed of one loaded database, and its procedures_ile and multiturn tasks."""
    out = DatabaseIle(pg_db.name, len(validated))
    for start in range(0, len(validated), SEEDS_PER_SESSION):
        _enhance_in_fresh_sessions(
            out, engine, pg_db, oracle_db, validated[start : start + SEEDS_PER_SESSION], proposer, rounds, judge
        )
    return out


def _enhance_in_fresh_sessions(
    out: DatabaseIle, engine, pg_db, oracle_db, validated: list[ValidatedSeed], proposer, rounds: int, judge
) -> None:
    executed = frozenset({engine.dialect})
    with workspaces(engine, pg_db) as (workspace, shuffled):
        env = ProcEnv(workspace, shuffled, pg_db, oracle_db, judge)

        def ctx_of(version: ValidatedSeed):
            return context(version, pg_db, oracle_db, workspace, executed)

        for seed in validated:
            result = enhance(seed, env, proposer, rounds, out.ledger)
            if isinstance(result, Rejection):
                out.rejections.append(result)
                continue
            out.enhanced.append(result)
            _check_references(out, env, result)
            _add_tasks(out, ctx_of, result)


def _check_references(out: DatabaseIle, env: ProcEnv, enhanced: EnhancedSeed) -> None:
    """Every round's reference, run again, reproduces its own call suite (the build's check; the verdict is
    kept with the version's, for the contradiction gate of an Interactive variant of it, which asks it)."""
    for k, version in enumerate(enhanced.history[1:], start=1):
        reference = version.seed.procedure.render("postgres")
        version.strength.verdicts[reference] = fails_suite(env.workspace, version.seed, version.suite, reference)
        if why := version.strength.verdicts[reference]:
            out.reference_failures[f"{version.seed.seed_id} round {k}"] = why


def _add_tasks(out: DatabaseIle, ctx_of, enhanced: EnhancedSeed) -> None:
    seed_id = enhanced.history[0].seed.seed_id
    try:
        out.tasks += ile_tasks(ctx_of, enhanced)
    except AdapterRejected as exc:
        out.rejections.append(Rejection(SUBSET, seed_id, "scenario_a1", f"a1_{exc.check}", exc.detail[:1000]))
    turns = len(enhanced.history)
    if not MIN_TURNS <= turns <= MAX_TURNS:
        reason = "too_few_turns" if turns < MIN_TURNS else "too_many_turns"
        detail = (
            f"{turns} turns (the seed and {enhanced.rounds} accepted rounds); an episode has {MIN_TURNS} to {MAX_TURNS}"
        )
        out.multiturn_rejections += _turn_rejections(seed_id, turns, reason, detail)
        return
    try:
        out.turns += episode(ctx_of, enhanced)
    except AdapterRejected as exc:
        out.multiturn_rejections += _turn_rejections(seed_id, turns, f"turn_{exc.check}", exc.detail)


def _turn_rejections(seed_id: str, turns: int, reason: str, detail: str) -> list[Rejection]:
    """One rejection per turn: a turn is multiturn's input record (input = turns released + rejected)."""
    return [Rejection(MULTITURN, f"{seed_id}/turn{k}", "episode", reason, detail[:1000]) for k in range(1, turns + 1)]


def ile_rows(databases: list[DatabaseIle], engine_version: str | None) -> list[TaskRow]:
    """procedures_ile rows: procedures rows that also carry proposer, ile_rounds and the per-round metrics."""
    rows = []
    for db in databases:
        enhanced = {e.history[0].seed.seed_id: e for e in db.enhanced}
        for task in db.tasks:
            e = enhanced[task.seed_id]  # every round keeps the seed's id
            row = task_row(task, engine_version)
            rows.append(row.with_(subset=SUBSET, source_id=task.seed_id, proposer=e.proposer, ile_rounds=e.rounds))
    return rows


def multiturn_rows(databases: list[DatabaseIle], engine_version: str | None) -> list[TaskRow]:
    """multiturn rows: one per turn and dialect, with conversation_id, turn_index and turn_count."""
    return [
        task_row(t.task, engine_version).with_(
            subset=MULTITURN,
            source_id=f"{t.task.seed_id}/turn{t.turn_index}",
            conversation_id=t.conversation_id,
            turn_index=t.turn_index,
            turn_count=t.turn_count,
            turns=t.turn_count,
            proposer=t.proposer,
        )
        for db in databases
        for t in db.turns
    ]
