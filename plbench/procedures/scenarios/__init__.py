"""Scenario adapters, one module each: `build(ctx)` makes a seed's tasks, `check(task, ctx)` is its acceptance check."""

from plbench.procedures.scenarios import a1, a2, a3, a4, a5, b1, b3, b4, c1, c2

ADAPTERS = {module.SCENARIO: module for module in (a1, b1, b3, b4, c1, c2, a3, a4, a5, a2)}
