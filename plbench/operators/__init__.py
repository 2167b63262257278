"""Execution-gated construction operators (issue 11): a proposer suggests a change to a validated
task, the operator's gates accept it only when execution proves it, and every proposal is recorded
with its verdict. `framework` holds what every operator shares; `ile` is Iterative Logic
Enhancement on MBPP; `inputs` generates inputs by type-aware mutation."""
