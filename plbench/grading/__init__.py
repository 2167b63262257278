"""Grading candidates: a verdict from a channel the candidate can neither write nor read.

- Function tasks (MBPP, MBPP+; plbench.grading.functions): the grader calls the candidate once per
  case from the client (`pg_catalog.to_jsonb(<schema>.<function>(<argument literals>))` on
  PostgreSQL), decodes the result by the declared type and compares it in Python with the one
  comparison rule (plbench.compare). The expected values never enter the candidate's session, so no
  statement it runs can read them (`current_query()`, `V$SQL`), and no operator, cast or function it
  creates takes part in the comparison. What it prints (NOTICE, DBMS_OUTPUT) is not looked at.
- Block tasks (Spider; plbench.grading.blocks): the output lines are the answer. The grader runs the
  block in a session that reads the task's database and compares the lines it printed with the
  expected lines in Python (in order or as a multiset). A block can only print its own lines; the
  expected lines are in the release, not in the database.

The released `test_block` stays the user-facing harness (replay validation proves it can fail); the
grader does not run it.
"""
