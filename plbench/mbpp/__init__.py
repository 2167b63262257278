"""MBPP / MBPP+ → PL/SQL conversion: test extraction, typing, task artifacts."""
