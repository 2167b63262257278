"""The two proposers of ILE rounds behind one interface: rule templates, or a model.

`DeterministicProposer` fills the rule templates of `plbench.operators.rules` from the task's own
data, in an order seeded by the task id, so an offline build makes the same tasks every time.
`LLMProposer` asks an OpenAI-compatible model (`plbench.llm`, answers cached by request hash) for a
JSON object `{"clause", "code"}` and repairs from the diagnostics when the code does not run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from plbench import values
from plbench.diagnostics import not_unicode
from plbench.operators import rules
from plbench.operators.framework import DETERMINISTIC, Proposal, ProposalError
from plbench.operators.ile import IleState
from plbench.operators.inputs import task_rng

EXTRA_INPUTS = 3  # inputs a parameter rule adds (None or empty versions of the task's own inputs)


def _previous_name(state: IleState) -> str:
    entry = state.task.entry_point
    return f"{entry}_round{state.round}" if state.round else f"{entry}_base"


def _extra_inputs(template: rules.RuleTemplate, state: IleState, param: int | None) -> list[tuple[str, tuple]]:
    """The inputs that exercise the rule, each from one of the task's own inputs."""
    own = [c for c in state.cases if c.origin in state.own_origins][:EXTRA_INPUTS]
    if template.extra_inputs == "param_none":
        variants = [c.args[:param] + (None,) + c.args[param + 1 :] for c in own]
    elif template.extra_inputs == "param_empty":
        variants = [c.args[:param] + (type(c.args[param])(),) + c.args[param + 1 :] for c in own]
    else:
        return []
    distinct = list({values.dumps(list(v)): v for v in variants}.values())  # replacing one argument may coincide
    return [(f"round{state.round + 1}[{i}]", args) for i, args in enumerate(distinct)]


def _limits(outputs: list) -> list:
    """Limits cycling through the distinct outputs from the largest down: some results capped, some not."""
    distinct = sorted(set(outputs), reverse=True)
    return [rules.nice(distinct[i % len(distinct)]) for i in range(len(outputs))]


def template_proposal(template: rules.RuleTemplate, state: IleState, param: int | None) -> Proposal | None:
    """The template filled in for this state, or None when the task's data gives no constant."""
    args = [c.args for c in state.cases]
    outputs = [c.expected for c in state.cases]
    value = rules.choose_value(template, state.signature, args, outputs, param)
    if value is None:
        return None
    text = rules.fill(template, state.params, value, param)
    entry, previous = state.task.entry_point, _previous_name(state)
    code = rules.rename_function(state.code, entry, previous).rstrip() + "\n\n\n"
    code += f"# Rule {state.round + 1}: {text.clause}\n"
    code += rules.wrapper(entry, previous, text.params, state.params, text.body)
    inputs = [(c.origin, c.args) for c in state.cases]
    if template.extra_inputs == "limit":
        inputs = [(o, a + (limit,)) for (o, a), limit in zip(inputs, _limits(outputs))]
    return Proposal(
        template.rule_id, text.clause, code, text.params, tuple(inputs + _extra_inputs(template, state, param))
    )


class DeterministicProposer:
    name = DETERMINISTIC

    def __init__(self, templates: tuple[rules.RuleTemplate, ...] = rules.TEMPLATES):
        self.templates = templates

    def proposals(self, state: IleState) -> Iterator[Proposal]:
        order = list(self.templates)
        task_rng(state.task.task_id, "rules").shuffle(order)
        for template in order:
            if template.rule_id in state.rules:
                continue
            for param in rules.applicable_params(template, state.signature):
                proposal = template_proposal(template, state, param)
                if proposal is not None:
                    yield proposal
                    break

    def repair(self, state: IleState, proposal: Proposal, diagnostics: str) -> Proposal | None:
        return None  # templates are tested; a rejected one is recorded, the next one tried


SYSTEM = (
    "You add one business rule to a Python function. Reply with one JSON object and nothing else: "
    '{"clause": "<one sentence stating the new rule to the user>", "code": "<the complete new Python code>"}. '
    "The code must define the function {entry}({params}) with exactly these parameters, keep its "
    "behaviour except where the rule applies, and change the result for some of the inputs shown."
)


def ask_json(client, messages: list[dict], fields: tuple[str, ...]) -> tuple[dict, str]:
    """The model's answer as a JSON object with these non-empty string fields, and its text; ProposalError
    when the endpoint fails (after the client's retries) or the answer is not that object."""
    import openai

    try:
        answer = client.complete(messages)
    except openai.APIError as exc:
        raise ProposalError("endpoint_error", f"{type(exc).__name__}: {exc}") from exc
    try:
        parsed = json.loads(answer)
    except json.JSONDecodeError as exc:
        raise ProposalError("answer_not_json", f"{exc.msg}: {answer[:200]!r}") from exc
    if not (isinstance(parsed, dict) and all(isinstance(parsed.get(k), str) and parsed[k] for k in fields)):
        raise ProposalError("answer_missing_fields", f"expected {{{', '.join(fields)}}} strings: {answer[:200]!r}")
    if why := next(filter(None, (not_unicode(parsed[k]) for k in fields)), None):
        raise ProposalError("answer_not_unicode", f"{why}: {answer[:200]!r}")
    return parsed, answer


class ChatProposer:
    """A model's proposer: one proposal per round from `_messages(state)`, and repairs that send the
    diagnostics back in the same conversation. Subclasses say what to ask and how to read the answer."""

    def __init__(self, client):
        self.client = client
        self.name = f"llm:{client.settings.model}"

    def _messages(self, state) -> list[dict]:
        raise NotImplementedError

    def _ask(self, messages: list[dict], state, attempt: int) -> Proposal:
        raise NotImplementedError

    def proposals(self, state) -> Iterator[Proposal]:
        yield self._ask(self._messages(state), state, 1)

    feedback = "The code failed: {diagnostics}\nReply with the corrected JSON object only."

    def repair(self, state, proposal: Proposal, diagnostics: str) -> Proposal:
        feedback = {"role": "user", "content": self.feedback.format(diagnostics=diagnostics)}
        return self._ask(list(proposal.conversation) + [feedback], state, proposal.attempt + 1)


class LLMProposer(ChatProposer):
    """One proposal per round from a model; up to two repairs from the sandbox diagnostics."""

    def _messages(self, state: IleState) -> list[dict]:
        entry = state.task.entry_point
        examples = "\n".join(f"{entry}{c.args!r} -> {c.expected!r}" for c in state.cases[:6])
        user = (
            f"Requirement:\n{state.text()}\n\nCurrent code:\n```python\n{state.code}\n```\n\n"
            f"Inputs and current outputs:\n{examples}"
        )
        system = SYSTEM.replace("{entry}", entry).replace("{params}", ", ".join(state.params))
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _ask(self, messages: list[dict], state: IleState, attempt: int) -> Proposal:
        parsed, answer = ask_json(self.client, messages, ("clause", "code"))
        inputs = tuple((c.origin, c.args) for c in state.cases)
        conversation = (*messages, {"role": "assistant", "content": answer})
        return Proposal("llm", parsed["clause"].strip(), parsed["code"], state.params, inputs, attempt, conversation)
