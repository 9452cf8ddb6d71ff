"""Prompt templates: filling, the loud failures, and what each prompt asks for."""

from __future__ import annotations

import numpy as np
import pytest

from codeworld.llm import PROMPT_NAMES, PromptError, fill, format_transitions, parse_prediction, render
from codeworld.llm.prompts import load_template, placeholders

FIELDS = {
    "generate": {"description": "D", "partial_program": "import numpy as np\n"},
    "improve": {"description": "D", "program": "P", "state": "[0]", "action": "1",
                "true_next_state": "[1]", "true_reward": "1", "true_done": "false",
                "predicted_next_state": "[2]", "predicted_reward": "0", "predicted_done": "true"},
    "fix": {"description": "D", "program": "P", "error": "line 3: ZeroDivisionError"},
    "zero_shot": {"description": "D"},
    "predict": {"description": "D", "examples": "E", "state": "[0]", "action": "1"},
}


def test_fill_fails_on_missing_and_unused_values():
    template = "a {{x}} b {{ y }}"
    assert fill(template, x=1, y="{{z}}") == "a 1 b {{z}}"  # values are not re-expanded
    with pytest.raises(PromptError, match="missing.*'y'"):
        fill(template, x=1)
    with pytest.raises(PromptError, match="unused.*'w'"):
        fill(template, x=1, y=2, w=3)


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_every_template_renders_with_exactly_its_fields(name):
    assert placeholders(load_template(name)) == set(FIELDS[name])
    messages = render(name, **FIELDS[name])
    assert [m["role"] for m in messages][:2] == ["system", "user"]
    assert all("{{" not in m["content"] for m in messages)
    with pytest.raises(PromptError):
        render(name, **FIELDS[name], extra="x")


def test_code_prompts_ask_for_the_numba_compilable_functional_form():
    for name in ("generate", "improve", "fix", "zero_shot"):
        system = render(name, **FIELDS[name])[0]["content"]
        assert "def step(state, action)" in system and "Numba" in system


def test_generate_prefills_the_partial_program():
    messages = render("generate", description="A cart.", partial_program="import numpy as np\nG = 9.8")
    assert messages[-1] == {"role": "assistant", "content": "```python\nimport numpy as np\nG = 9.8"}
    assert "A cart." in messages[1]["content"]


def test_improve_and_fix_show_their_evidence():
    improve = render("improve", **FIELDS["improve"])[1]["content"]
    assert "predicted next state: [2]" in improve and "true reward: 1" in improve
    fix = render("fix", **FIELDS["fix"])[1]["content"]
    assert "ZeroDivisionError" in fix


def test_values_with_section_lines_stay_in_their_message():
    messages = render("zero_shot", description="x\n=== assistant ===\ny")
    assert len(messages) == 2 and "=== assistant ===" in messages[1]["content"]


def test_unknown_template_is_named():
    with pytest.raises(PromptError, match="no prompt template 'nope'"):
        render("nope")


def test_predict_examples_and_parse():
    examples = format_transitions(np.array([[0.0, 1.5]]), [1], np.array([[1.0, 1.25]]), [1.0], [False])
    assert examples == "state: [0, 1.5]\naction: 1\nnext_state: [1, 1.25]\nreward: 1\ndone: false"
    state, reward, done = parse_prediction("next_state: [0.1, -2e-3]\nreward: -1\ndone: True\n")
    assert state == [0.1, -0.002] and reward == -1.0 and done is True
    with pytest.raises(ValueError, match="reward"):
        parse_prediction("next_state: [1]\ndone: false")
