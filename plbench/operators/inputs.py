"""Generated inputs: type-aware mutation of a task's own inputs, as EvalPlus does.

Each new argument tuple comes from one of the task's inputs by mutating one argument by its type
(ints stepped and set to boundary values, strings edited, lists grown, shrunk or element-mutated,
tuples of fixed length mutated position by position, dicts and sets edited, nested values
recursively). The random source is seeded by the task id, so a rebuild generates the same inputs.
A generated input is kept only when it fits the task's signature and the reference, run in the
sandbox, returns a value of the signature's return type for it.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from plbench import values
from plbench.mbpp.pytypes import Signature, conforms
from plbench.sandbox import SandboxLimits, SandboxResult
from plbench.types import PyType

# Small steps only: a reference that loops `range(n)` must stay fast on a mutated n.
INT_BOUNDARIES = (0, 1, -1, 2, 10, 100)
FLOAT_BOUNDARIES = (0.0, 1.0, -1.0, 0.5, 2.5)
MAX_INT = 10**6
MAX_LEN = 40
# Generated inputs run with a short budget: an input the reference needs a second of CPU for is
# dropped, and after 3 such the task's other inputs are not run (a count, not a time: stable under load).
GENERATION_LIMITS = SandboxLimits(cpu_seconds=30, wall_seconds=60.0, case_seconds=1.0, max_case_timeouts=3)


def task_rng(task_id: str, purpose: str) -> random.Random:
    seed = int.from_bytes(hashlib.sha256(f"{purpose}:{task_id}".encode()).digest()[:8], "big")
    return random.Random(seed)


def _mutate_int(value: int, rng: random.Random) -> int:
    step = rng.choice(("inc", "dec", "neg", "double", "boundary"))
    new = {
        "inc": value + rng.choice((1, 2, 3)),
        "dec": value - rng.choice((1, 2, 3)),
        "neg": -value,
        "double": value * 2,
        "boundary": rng.choice(INT_BOUNDARIES),
    }[step]
    return new if abs(new) <= MAX_INT else value - 1


def _mutate_float(value: float, rng: random.Random) -> float:
    step = rng.choice(("inc", "dec", "neg", "scale", "boundary"))
    return {
        "inc": value + rng.choice((0.5, 1.0, 1.5)),
        "dec": value - rng.choice((0.5, 1.0, 1.5)),
        "neg": -value,
        "scale": value * 2,
        "boundary": rng.choice(FLOAT_BOUNDARIES),
    }[step]


def _mutate_str(value: str, rng: random.Random) -> str:
    alphabet = value or "ab1 "
    pos = rng.randrange(len(value) + 1)
    step = rng.choice(("insert", "delete", "swapcase", "duplicate", "empty", "reverse"))
    if step == "insert" or not value:
        return value[:pos] + rng.choice(alphabet) + value[pos:]
    if step == "delete":
        return value[: min(pos, len(value) - 1)] + value[min(pos, len(value) - 1) + 1 :]
    if step == "swapcase":
        return value.swapcase()
    if step == "duplicate":
        return (value + value)[:MAX_LEN]
    return "" if step == "empty" else value[::-1]


def _mutate_sequence(items: list, elem: PyType, rng: random.Random) -> list:
    step = rng.choice(("append", "remove", "element", "duplicate", "empty", "reverse"))
    if not items:
        return [_seed_value(elem, rng)]
    i = rng.randrange(len(items))
    if step == "append" and len(items) < MAX_LEN:
        return items + [mutate(items[i], elem, rng)]
    if step == "remove":
        return items[:i] + items[i + 1 :]
    if step == "duplicate" and len(items) < MAX_LEN:
        return items[: i + 1] + items[i:]
    if step == "empty":
        return []
    if step == "reverse":
        return items[::-1]
    return items[:i] + [mutate(items[i], elem, rng)] + items[i + 1 :]


def _seed_value(t: PyType, rng: random.Random) -> Any:
    """A value of type t for an empty collection's first element."""
    scalar = {"int": lambda: rng.choice(INT_BOUNDARIES), "float": lambda: rng.choice(FLOAT_BOUNDARIES)}
    if t.kind in scalar:
        return scalar[t.kind]()
    if t.kind == "str":
        return rng.choice(("a", "ab", "Z"))
    if t.kind == "bool":
        return rng.random() < 0.5
    if t.kind == "list":
        return [_seed_value(t.elem, rng)]
    if t.kind == "tuple_seq":
        return (_seed_value(t.elem, rng),)
    if t.kind == "record":
        return tuple(_seed_value(a, rng) for a in t.args)
    return rng.choice(INT_BOUNDARIES)


def mutate(value: Any, t: PyType, rng: random.Random) -> Any:
    """One type-aware mutation of value, whose declared type is t (nested values recursively)."""
    if value is None:
        return _seed_value(t, rng)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return _mutate_int(value, rng)
    if isinstance(value, float):
        return _mutate_float(value, rng)
    if isinstance(value, str):
        return _mutate_str(value, rng)
    elem = t.elem if t.kind in ("list", "tuple_seq", "set") and t.args else PyType("unknown")
    if isinstance(value, list):
        return _mutate_sequence(value, elem, rng)
    if isinstance(value, tuple) and t.kind == "record":
        i = rng.randrange(len(value)) if value else 0
        return value[:i] + (mutate(value[i], t.args[i], rng),) + value[i + 1 :] if value else value
    if isinstance(value, tuple):
        return tuple(_mutate_sequence(list(value), elem, rng))
    if isinstance(value, (set, frozenset)):
        return type(value)(_mutate_sequence(sorted(value, key=repr), elem, rng))
    if isinstance(value, dict):
        return _mutate_dict(value, t, rng)
    return value


def _mutate_dict(value: dict, t: PyType, rng: random.Random) -> dict:
    key_t, val_t = t.args if t.kind == "dict" and len(t.args) == 2 else (PyType("unknown"),) * 2
    if not value:
        return value
    key = rng.choice(sorted(value, key=repr))
    step = rng.choice(("value", "remove", "add"))
    if step == "remove":
        return {k: v for k, v in value.items() if k != key}
    if step == "add":
        return {**value, mutate(key, key_t, rng): mutate(value[key], val_t, rng)}
    return {**value, key: mutate(value[key], val_t, rng)}


def mutated_inputs(task_id: str, signature: Signature, seeds: list[tuple], count: int) -> list[tuple]:
    """Up to `count` distinct argument tuples, each a seed with one argument mutated, fitting the
    signature's parameter types and differing from every seed."""
    rng = task_rng(task_id, "inputs")
    types = [t for _, t in signature.params]
    seen = {values.dumps(list(s)) for s in seeds}
    out: list[tuple] = []
    for attempt in range(count * 8):
        if len(out) >= count or not seeds or not types:
            break
        seed = seeds[attempt % len(seeds)]
        i = rng.randrange(len(types))
        args = seed[:i] + (mutate(seed[i], types[i], rng),) + seed[i + 1 :]
        key = _key(args)
        if key is None or key in seen or not all(conforms(v, t) for v, t in zip(args, types)):
            continue
        seen.add(key)
        out.append(args)
    return out


def _key(args: tuple) -> str | None:
    try:
        return values.dumps(list(args))
    except (TypeError, ValueError):  # a value the tagged JSON cannot hold (NaN from a mutation, say)
        return None


@dataclass(frozen=True)
class GeneratedCase:
    args: tuple
    output: Any


def accepted_outputs(
    inputs: list[tuple], result: SandboxResult, returns: PyType | None
) -> tuple[list[GeneratedCase], str]:
    """The inputs the reference accepted, with its outputs (of the return type when one is given);
    and a summary of the others."""
    if result.status != "ok":
        return [], f"reference {result.status}: {result.detail}"[:300]
    kept, refused = [], Counter()
    for args, outcome in zip(inputs, result.cases):
        if outcome.status != "ok":
            refused[outcome.status] += 1
        elif returns is not None and not conforms(outcome.value, returns):
            refused["off_signature_output"] += 1
        else:
            kept.append(GeneratedCase(args, outcome.value))
    return kept, ", ".join(f"{k}: {v}" for k, v in sorted(refused.items()))
