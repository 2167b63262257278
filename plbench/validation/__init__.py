"""Execution validation: replay of the emitted harness, mutation checks."""
