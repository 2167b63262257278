"""The registry of subsets: every subset the release, the quality suites and the graders know.

A subset is a `plbench.subsets.base.Subset` registered here by name. The built-in ones are
registered on import, in release order; a test or a plug-in registers its own with `register`.
"""

from __future__ import annotations

from plbench.subsets.base import Subset, SubsetRelease

SUBSETS: dict[str, Subset] = {}


def register(subset: Subset) -> Subset:
    if subset.name in SUBSETS and SUBSETS[subset.name] is not subset:
        raise ValueError(f"a subset named {subset.name!r} is already registered")
    SUBSETS[subset.name] = subset
    return subset


def subset(name: str) -> Subset:
    if name not in SUBSETS:
        raise KeyError(f"unknown subset {name!r}: registered are {sorted(SUBSETS)}")
    return SUBSETS[name]


def _register_builtins() -> None:
    from plbench.subsets import (
        interactive,
        mbpp,
        mbpp_ile,
        mbpp_plus,
        procedures,
        procedures_ile,
        spider2,
        spider_plsql,
    )

    for module in (mbpp, mbpp_plus, mbpp_ile, spider_plsql, spider2, procedures, interactive):
        register(module.SUBSET)
    for built in procedures_ile.SUBSETS:
        register(built)


_register_builtins()

__all__ = ["SUBSETS", "Subset", "SubsetRelease", "register", "subset"]
