"""The simulated user of an Interactive episode: it answers only from the task's hidden-fact ledger.

It holds nothing but the ledger's keys and answers (every answer passed the perturbation gate that
refuses code), so it can never reveal code, the reference or an execution result. Matching is lexical
and deterministic, so an episode replays exactly: a question reveals the entries whose key words it
covers (at least `MATCH_SHARE` of them, and two when the key has two); a selector's options are
scored against each entry's answer, less their likeness to the reading the entry rejects (a
contradiction's added statement), and the best option above zero is the one the user means, else
"none of these" (index 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from plbench.interactive.protocol import NONE_OF_THESE

MATCH_SHARE = 0.5
STEM = 5
NO_ANSWER = "I can only tell you what the requirement means to say; I have nothing to add on that."
_STOP = frozenset(
    "a an and are as at be by do does each for from has how in is it its of on or that the this to what when "
    "which who why will with should would must can could there their them they was were".split()
)


def words(text: str) -> frozenset[str]:
    """The content words of a text, cut to their first `STEM` letters ("raises", "raised" -> "raise")."""
    found = re.findall(r"[a-z0-9_']+", text.lower())
    return frozenset(w[:STEM] for w in found if w not in _STOP and len(w) > 1)


def _share(part: frozenset, whole: frozenset) -> float:
    return len(part & whole) / len(part) if part else 0.0


def covers(question: frozenset, key: frozenset) -> bool:
    """The question names `MATCH_SHARE` of the key's words, and two of them when the key has two."""
    shared = len(question & key)
    return bool(key) and shared >= min(2, len(key)) and shared >= MATCH_SHARE * len(key)


@dataclass
class SimulatedUser:
    ledger: list[dict]  # {id, op, key, answer, ...}; `wrong`: the reading a contradiction rejects
    revealed: dict[str, tuple[int, str]] = field(default_factory=dict)  # entry id -> (step, via)

    def _reveal(self, entry: dict, step: int, via: str) -> None:
        self.revealed.setdefault(entry["id"], (step, via))

    def ask_user(self, question: str, step: int) -> tuple[str, list[str]]:
        """(answer, ids of the entries it reveals)."""
        asked = words(question)
        matched = [e for e in self.ledger if covers(asked, words(e["key"]))]
        for entry in matched:
            self._reveal(entry, step, "ask_user")
        return (" ".join(e["answer"] for e in matched) or NO_ANSWER), [e["id"] for e in matched]

    def ask_selector(self, options: list[str], step: int) -> tuple[int, list[str], str | None]:
        """(index of the intended option, the options as shown with "none of these" first, entry id)."""
        shown = [NONE_OF_THESE, *options]
        best = (0.0, 0, None)
        for entry in self.ledger:
            answer, wrong = words(entry["answer"]), words(entry.get("wrong", ""))
            for index, option in enumerate(options, start=1):
                said = words(option)
                if _share(said, answer) < MATCH_SHARE:
                    continue
                score = _share(said, answer) - _share(said, wrong)
                if score > best[0]:
                    best = (score, index, entry)
        _, index, entry = best
        if entry is None:
            return 0, shown, None
        self._reveal(entry, step, "ask_selector")
        return index, shown, entry["id"]
