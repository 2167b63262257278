"""Generated inputs (type-aware mutation seeded by the task id) and the constant-task augmentation stage."""

from plbench import values
from plbench.config import BuildConfig
from plbench.mbpp.pytypes import conforms
from plbench.mbpp.stages import Ingested, StageOutput
from plbench.operators.constant import augment_constant, is_constant
from plbench.operators.inputs import accepted_outputs, mutate, mutated_inputs, task_rng
from plbench.operators.stages import augment_constant_tasks
from plbench.records import RawProblem
from plbench.sandbox import run_reference
from tests.helpers import typed_task

NESTED = typed_task(
    ("rows", "name", "scale"),
    [(([(1, "a"), (2, "b")], "ab", 1.5), 3), (([(3, "c")], "", 0.5), 1)],
)


def test_generated_inputs_are_deterministic_fit_the_signature_and_are_new():
    seeds = [c.args for c in NESTED.cases]
    first = mutated_inputs(NESTED.task_id, NESTED.signature, seeds, 12)
    assert first == mutated_inputs(NESTED.task_id, NESTED.signature, seeds, 12)
    assert first != mutated_inputs("mbpp/other", NESTED.signature, seeds, 12)
    assert len(first) == 12 and len({values.dumps(list(a)) for a in first}) == 12
    types = [t for _, t in NESTED.signature.params]
    assert all(conforms(v, t) for args in first for v, t in zip(args, types))
    assert not {values.dumps(list(a)) for a in first} & {values.dumps(list(s)) for s in seeds}
    # each generated input changes one argument of a seed
    assert all(
        sum(x != y for x, y in zip(args, min(seeds, key=lambda s: sum(a != b for a, b in zip(args, s))))) == 1
        for args in first
    )


def test_mutation_follows_the_type_recursively():
    rng = task_rng("t", "inputs")
    record = NESTED.signature.params[0][1].elem  # tuple[int, str]: a record keeps its length and types
    for _ in range(50):
        value = mutate((1, "a"), record, rng)
        assert len(value) == 2 and isinstance(value[0], int) and isinstance(value[1], str)
    lists = {len(mutate([1, 2, 3], NESTED.signature.params[0][1], rng)) for _ in range(60)}
    assert {0, 2, 3, 4} <= lists  # emptied, shrunk, element-mutated or reversed, grown
    assert mutate(True, NESTED.signature.returns, rng) is False
    ints = {mutate(5, NESTED.signature.returns, rng) for _ in range(200)}
    assert ints == {2, 3, 4, 6, 7, 8, -5, 10, 0, 1, -1, 100}  # steps of 1-3, negation, doubling, boundaries


def test_an_input_is_kept_only_if_the_reference_accepts_it_with_a_value_of_the_return_type():
    code = "def f(n):\n    if n < 0:\n        raise ValueError(n)\n    return 'big' if n > 5 else n\n"
    inputs = [(1,), (-1,), (9,), (3,)]
    kept, refused = accepted_outputs(inputs, run_reference(code, "f", inputs), NESTED.signature.returns)
    assert [(k.args, k.output) for k in kept] == [((1,), 1), ((3,), 3)]
    assert refused == "error: 1, off_signature_output: 1"


def constant_task(source_id="5"):
    return typed_task(("n", "m"), [((3, 4), 1), ((4, 3), 1), ((5, 5), 1)], entry="f", source_id=source_id)


def test_a_constant_task_gets_cases_a_constant_candidate_fails():
    task = constant_task()
    assert is_constant(task)
    out = augment_constant(task, "def f(n, m):\n    return 1 if n > 2 else 0\n")
    assert out.cases[:3] == task.cases and not is_constant(out)
    added = out.cases[3:]
    assert 1 <= len(added) <= 8 and [c.origin for c in added] == [f"generated[{i}]" for i in range(len(added))]
    assert all(c.expected == (1 if c.args[0] > 2 else 0) for c in added)
    assert added[0].expected == 0  # the cases that differ from the constant come first
    assert "generated inputs added" in out.notes[-1]


def test_a_constant_reference_is_rejected():
    rejection = augment_constant(constant_task(), "def f(n, m):\n    return 1\n")
    assert (rejection.stage, rejection.reason_code) == ("constant_augmentation", "constant_result")
    assert "none changes the output 1" in rejection.detail


def problem(source_id: str, code: str) -> RawProblem:
    return RawProblem("mbpp", source_id, "mbpp/mbpp.jsonl", 1, "Write the function.", None, code)


def test_the_stage_augments_or_rejects_each_constant_task_and_keeps_the_others():
    varied = typed_task(("n",), [((1,), 1), ((2,), 2)], entry="f", source_id="1")
    typed = StageOutput([varied, constant_task("2"), constant_task("3")])
    ingested = Ingested(
        "mbpp",
        [
            problem("1", "def f(n):\n    return n\n"),
            problem("2", "def f(n, m):\n    return n % 2\n"),
            problem("3", "def f(n, m):\n    return 1\n"),
        ],
        [],
        {},
    )
    out = augment_constant_tasks(typed, [ingested], BuildConfig())
    assert out.items[0] is varied and [t.source_id for t in out.items] == ["1", "2"]
    assert not is_constant(out.items[1])
    assert [(r.source_id, r.reason_code) for r in out.rejections] == [("3", "constant_result")]
    assert len(out.items) + len(out.rejections) == len(typed.items)
