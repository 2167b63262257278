"""Failure taxonomy: engine diagnostics mapped onto the paper's categories, as a table.

- wrong_logic_or_output: the code ran and printed wrong answers (FAIL verdicts, or runtime
  errors raised while computing a case);
- invalid_artifact: malformed, incomplete or non-executable code (syntax errors, invalid objects);
- interface_or_grounding: the code does not match the contract (missing entry point, wrong
  signature, unknown objects or columns);
- reference_error: the harness or the task's own setup failed; excluded from model scores.
"""

from __future__ import annotations

WRONG_LOGIC = "wrong_logic_or_output"
INVALID_ARTIFACT = "invalid_artifact"
INTERFACE = "interface_or_grounding"
REFERENCE_ERROR = "reference_error"

# Diagnostic code (PostgreSQL SQLSTATE, Oracle ORA-/PLS-) → category.
CATEGORY_BY_CODE: dict[str, str] = {
    # PostgreSQL
    "42601": INVALID_ARTIFACT,  # syntax_error
    "42P13": INVALID_ARTIFACT,  # invalid_function_definition
    "42P16": INVALID_ARTIFACT,  # invalid_table_definition
    "0A000": INVALID_ARTIFACT,  # feature_not_supported
    "42883": INTERFACE,  # undefined_function
    "42P01": INTERFACE,  # undefined_table
    "42703": INTERFACE,  # undefined_column
    "42704": INTERFACE,  # undefined_object (e.g. a type)
    "42804": INTERFACE,  # datatype_mismatch (return type differs from the signature)
    "42725": INTERFACE,  # ambiguous_function
    "42723": INTERFACE,  # duplicate_function
    # Oracle
    "PLS-00103": INVALID_ARTIFACT,  # encountered the symbol ... (syntax)
    "PLS-00905": INVALID_ARTIFACT,  # object is invalid
    "ORA-24344": INVALID_ARTIFACT,  # success with compilation error
    "ORA-00900": INVALID_ARTIFACT,  # invalid SQL statement
    "PLS-00201": INTERFACE,  # identifier must be declared
    "PLS-00306": INTERFACE,  # wrong number or types of arguments
    "ORA-00904": INTERFACE,  # invalid identifier
    "ORA-00942": INTERFACE,  # table or view does not exist
    "ORA-06550": INVALID_ARTIFACT,  # PL/SQL compilation error (when no PLS code follows)
}


def category_of(code: str | None) -> str:
    """The category of a failure to install the candidate; unknown codes count as invalid artifacts."""
    return CATEGORY_BY_CODE.get(code or "", INVALID_ARTIFACT)


def case_error_category(message: str) -> str:
    """The category of an ERROR verdict, from the diagnostic the test block printed.

    A case that raised while running is wrong logic, unless its code says the
    candidate's interface is off (calling something that does not exist).
    """
    code = message.split(":", 1)[0].strip()
    return INTERFACE if CATEGORY_BY_CODE.get(code) == INTERFACE else WRONG_LOGIC


def not_unicode(text: str) -> str | None:
    """Why `text` is not Unicode text, or None: a lone surrogate, which a JSON `\\u` escape can spell (in a
    solutions file, or a model's JSON answer) but no UTF-8 bytes can."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"not Unicode text ({exc.reason}: {exc.object[exc.start]!r} at character {exc.start})"
    return None
