"""The type model of benchmark values: `PyType`, a small immutable tree (shared by the MBPP
inference in `plbench.mbpp.pytypes` and the dialects that spell each type in SQL)."""

from __future__ import annotations

from dataclasses import dataclass

SCALARS = ("int", "float", "str", "bool")


@dataclass(frozen=True)
class PyType:
    # int float str bool | none unknown tuple (inference only) | list tuple_seq set dict record variant json
    kind: str
    args: tuple[PyType, ...] = ()
    nullable: bool = False

    # ---- constructors -------------------------------------------------
    @staticmethod
    def scalar(kind: str) -> PyType:
        return PyType(kind)

    @staticmethod
    def list_of(elem: PyType) -> PyType:
        return PyType("list", (elem,))

    # ---- queries ------------------------------------------------------
    @property
    def elem(self) -> PyType:
        return self.args[0]

    @property
    def is_scalar(self) -> bool:
        return self.kind in SCALARS

    @property
    def is_collection(self) -> bool:
        """Ordered or unordered sequences: emitted as a collection type / array."""
        return self.kind in ("list", "tuple_seq", "set", "dict")

    @property
    def is_ordered(self) -> bool:
        """Collections whose element order is part of Python equality."""
        return self.kind in ("list", "tuple_seq")

    def walk(self):
        """This type and every type nested in it, children first."""
        for arg in self.args:
            yield from arg.walk()
        yield self

    def with_nullable(self, nullable: bool = True) -> PyType:
        return PyType(self.kind, self.args, nullable)

    def describe(self) -> str:
        """Python-style spelling, e.g. list[tuple[int, str]] | None."""
        if self.kind == "list":
            text = f"list[{self.elem.describe()}]"
        elif self.kind == "tuple_seq":
            text = f"tuple[{self.elem.describe()}, ...]"
        elif self.kind == "set":
            text = f"set[{self.elem.describe()}]"
        elif self.kind == "dict":
            text = f"dict[{self.args[0].describe()}, {self.args[1].describe()}]"
        elif self.kind == "record":
            text = "tuple[" + ", ".join(a.describe() for a in self.args) + "]"
        elif self.kind == "variant":
            text = "Union[" + ", ".join(a.describe() for a in self.args) + "]"
        elif self.kind == "json":
            text = "JSON"
        else:
            text = {"none": "None"}.get(self.kind, self.kind)
        return f"{text} | None" if self.nullable and self.kind != "none" else text


INT, FLOAT, STR, BOOL = (PyType(k) for k in SCALARS)
NONE = PyType("none", nullable=True)
UNKNOWN = PyType("unknown")
JSON = PyType("json")
