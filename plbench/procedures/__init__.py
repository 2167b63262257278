"""Procedural tasks (ProcArena's core): stored procedures that change database state, graded after every call.

Seeds are lifted from Spider 1.0 gold queries (`lift`, `archetypes`), rendered per dialect from one
procedure model (`model`, `dialect_text`), run from one initial state in an isolated workspace
(`workspace`), turned into call suites (`suites`), attacked by mutants (`mutants`) and graded
(`grade`). Scenario adapters (`scenarios/`) turn a validated seed into one task each.
"""
