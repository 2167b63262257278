"""Sqlglot trees that a stored stage value keeps pickled until one is read.

Seeds, procedures and their statements hold one sqlglot tree per dialect, and the procedure stages store
them (procedures_tasks, procedures_ile_tasks, interactive_tasks, ...). Unpickling rebuilds every tree node by
node in sqlglot's serde: 2.3 s of loading procedures_ile_tasks, 5 s of interactive_tasks. A stage that reads
them back mostly renders and grades: each statement keeps the texts it rendered, so it seldom needs a tree.
A class lists its tree fields in TREE_FIELDS; each is pickled as one blob and rebuilt on its first read.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator, Mapping
from typing import ClassVar


class StoredTrees(Mapping):
    """dialect -> sqlglot tree, loaded from `blob` (the pickled dict) on the first read of a tree."""

    __slots__ = ("_dialects", "_blob", "_trees")

    def __init__(self, dialects: tuple[str, ...], blob: bytes):
        self._dialects, self._blob, self._trees = dialects, blob, None

    @classmethod
    def of(cls, trees: Mapping) -> StoredTrees:
        if isinstance(trees, StoredTrees):
            return trees
        return cls(tuple(trees), pickle.dumps(dict(trees), protocol=pickle.HIGHEST_PROTOCOL))

    @property
    def loaded(self) -> bool:
        return self._trees is not None

    def _load(self) -> dict:
        if self._trees is None:
            self._trees, self._blob = pickle.loads(self._blob), None
        return self._trees

    def __getitem__(self, dialect: str):
        return self._load()[dialect]

    def __iter__(self) -> Iterator[str]:  # the dialects need no tree
        return iter(self._dialects)

    def __len__(self) -> int:
        return len(self._dialects)

    def __contains__(self, dialect: object) -> bool:
        return dialect in self._dialects

    def __reduce__(self):
        # trees are never edited once a statement holds them, so a loaded one pickles as it loaded
        blob = self._blob if self._trees is None else pickle.dumps(self._trees, protocol=pickle.HIGHEST_PROTOCOL)
        return StoredTrees, (self._dialects, blob)

    def __content__(self) -> tuple:
        """The dialects and the trees' pickled bytes (plbench.content_digest): equal trees pickle alike."""
        return self.__reduce__()[1]

    def __repr__(self) -> str:
        return f"StoredTrees({', '.join(self._dialects)}{'' if self.loaded else ', not loaded'})"


class TreesStoredApart:
    """Mixin for a frozen dataclass whose TREE_FIELDS hold dialect -> tree mappings: pickled as StoredTrees."""

    TREE_FIELDS: ClassVar[tuple[str, ...]] = ("trees",)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in self.TREE_FIELDS:
            state[name] = StoredTrees.of(state[name])
        return state

    def __content__(self) -> dict:
        """The fields equality compares, each tree field as it is stored (plbench.content_digest)."""
        state = self.__getstate__()
        return {f.name: state[f.name] for f in dataclasses.fields(self) if f.compare}
