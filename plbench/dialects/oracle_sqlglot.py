"""sqlglot's Oracle dialect as plbench writes Oracle 19c: `plbenchoracle` (plbench.dialects.oracle names it)."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.oracle import Oracle
from sqlglot.tokens import TokenType

PLAIN_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_$#]*$")  # a name Oracle takes unquoted


class PlbenchOracle(Oracle):
    """sqlglot's Oracle with two rules of Oracle 19c its generator does not follow; sqlglot registers
    it by its class name (`plbenchoracle`), so `read=` / `dialect=` take that name:

    - EXCEPT is `MINUS` (19c has no EXCEPT);
    - an unquoted name that is no plain Oracle identifier (`_sum`, starting with `_`) is written as
      Oracle would fold it, quoted (`"_SUM"`), as the normalized schemas name such columns
      (plbench.normalize.typemap), so every spelling of the name in a query reaches the same column.

    The rules sit on the dialect, around the generator, not in a subclass of it: compiled sqlglot
    (`sqlglotc`) lets no Python class inherit from its generators.
    """

    def generate(self, expression: exp.Expr, copy: bool = True, **opts) -> str:
        if any(_folds(i) for i in expression.find_all(exp.Identifier)):  # on a copy: the caller's tree keeps its names
            expression = expression.copy()
            for ident in [i for i in expression.find_all(exp.Identifier) if _folds(i)]:
                ident.replace(exp.to_identifier(ident.name.upper(), quoted=True))
            copy = False
        return _minus(self, super().generate(expression, copy=copy, **opts))


def _folds(ident: exp.Identifier) -> bool:
    """Whether Oracle folds the name to upper case and needs it quoted: unquoted and no plain identifier."""
    return bool(ident.name) and not ident.quoted and not PLAIN_IDENTIFIER.match(ident.name)


def _minus(dialect: Oracle, text: str) -> str:
    """`text` with each EXCEPT keyword (not one in a string or a quoted name) written MINUS."""
    if "EXCEPT" not in text.upper():
        return text
    for token in reversed(dialect.tokenize(text)):
        if token.token_type == TokenType.EXCEPT:
            text = text[: token.start] + "MINUS" + text[token.end + 1 :]
    return text
