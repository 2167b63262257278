"""The Interactive protocol (issue 11 §6, ProcArena Table 2): a solver writes a procedure for a task whose
requirement hides facts (the ledger of `plbench.operators.perturbations`), asking a simulated user and
probing a scratch copy of the database within a budget. `protocol` holds the actions and their costs,
`user` the simulated user, `environment` the actions' effects, `episode` the loop and its record."""
