"""A test block condensed for the grammar: each repeated case reduced to its two assignments.

A test block (plbench.mbpp.artifacts.TaskEmitter.test_block_statements) runs one case per
nested block, every one the same text but for its case number and two expressions:

      BEGIN
        v_expected := <expected literal>;
        v_actual := <call with the case's literals>;
        IF ... PLBENCH_CASE <n> PASS ... END IF;
      EXCEPTION WHEN OTHERS THEN ... PLBENCH_CASE <n> ERROR ...
      END;

The grammar is context-free, so once the first case parses, a later case with the same text
around its expressions parses exactly when its two assignments do in the same place. Such a case
keeps only its assignment lines (every other line blanked, so lines and columns stay those of
the block as shipped); a case whose surrounding text differs stays whole. On MBPP+ blocks the
surrounding text is about two thirds of the bytes (bench/oracle_grammar.py).

An assignment of such a case is blanked too when an earlier case's same assignment has its shape: the same
text once every string literal reads 'x' and every number's digits read 0. The parser sees a literal's kind,
not its value, so the two are one sequence of tokens and parse alike; the one kept is the first, at its own
place. Most MBPP+ cases differ only in their values. The literal scan does not read q-quoted literals or
quoted names (one may hold a quote): a block holding the first keeps every assignment, as does an assignment
holding the second.
"""

from __future__ import annotations

import re

CASE_OPEN, CASE_CLOSE = "  BEGIN", "  END;"
ASSIGNMENTS = ("    v_expected := ", "    v_actual := ")
AFTER_ASSIGNMENTS = "    IF "
_CASE_NUMBER = re.compile(r"PLBENCH_CASE \d+ ")
_STRING = re.compile(r"'(?:[^']|'')*'")  # from outside a literal, with '' inside it
_DIGITS = re.compile(r"\b\d+")  # a number's digit runs, not an identifier's (v_1)
_Q_QUOTE = re.compile(r"(?<![\w$#])n?q'", re.IGNORECASE)


def _code_starts(lines: list[str]) -> list[bool]:
    """Whether each line starts outside a string literal ('' inside a literal toggles twice)."""
    starts, inside = [], False
    for line in lines:
        starts.append(not inside)
        inside ^= line.count("'") % 2 == 1
    return starts


def _cases(lines: list[str], code: list[bool]) -> list[tuple[int, int, int, int, int]]:
    """(open, expected, actual, if, close) line indexes of every case block of the harness shape."""
    found, i = [], 0
    marks = [line if starts else None for line, starts in zip(lines, code)]
    while i < len(lines):
        if marks[i] != CASE_OPEN:
            i += 1
            continue
        nxt = [j for j in range(i + 1, len(lines)) if marks[j] is not None]
        close = next((j for j in nxt if marks[j] == CASE_CLOSE), None)
        heads = [next((j for j in nxt if marks[j].startswith(h)), None) for h in (*ASSIGNMENTS, AFTER_ASSIGNMENTS)]
        if close is None or None in heads or not i + 1 == heads[0] < heads[1] < heads[2] < close:
            return found  # not the harness shape from here on: the rest stays as it is
        found.append((i, heads[0], heads[1], heads[2], close))
        i = close + 1
    return found


def condense(text: str) -> str:
    """The block with every case after the first, when its surrounding text repeats the first's,
    reduced to its assignment lines; the same number of lines, each at its place."""
    if "--" in text or "/*" in text:  # a comment could hide a quote from the literal scan
        return text
    lines = text.split("\n")
    cases = _cases(lines, _code_starts(lines))
    if len(cases) < 2:
        return text

    def frame(case) -> str:
        start, expected, actual, after, close = case
        return _CASE_NUMBER.sub("PLBENCH_CASE n ", "\n".join(lines[start:expected] + lines[after : close + 1]))

    first = frame(cases[0])
    shaped = not _Q_QUOTE.search(text)
    shapes: set[str] = set()  # the assignments' shapes seen so far
    out = list(lines)
    for n, case in enumerate(cases):
        if n and frame(case) != first:
            continue
        start, expected, actual, after, close = case
        if n:
            out[start:expected] = [""] * (expected - start)
            out[after : close + 1] = [""] * (close + 1 - after)
        for a, b in (expected, actual), (actual, after):
            shape = _shape("\n".join(lines[a:b])) if shaped else None
            if shape in shapes:
                out[a:b] = [""] * (b - a)
            elif shape is not None:
                shapes.add(shape)
    return "\n".join(out)


def _shape(assignment: str) -> str | None:
    """The assignment's tokens as the grammar reads them: literals by kind, not by value; None when it holds a
    quoted name, whose quotes the literal scan could misread."""
    shape = _DIGITS.sub("0", _STRING.sub("'x'", assignment))
    return None if '"' in shape else shape
