"""Prompt templates: filling, the loud failures, and what each prompt asks for."""

from __future__ import annotations

import numpy as np
import pytest

from codeworld.llm._prompts import (
    PromptError,
    fill,
    format_transitions,
    load_template,
    parse_prediction,
    placeholders,
)
from codeworld.worlds.cwmb._cwmb import PROMPT_DIR, PROMPT_NAMES
from codeworld.worlds.cwmb._cwmb import render_cwmb as render

FIELDS = {
    "generate": {"description": "D", "form": "F", "partial_program": "import numpy as np\n"},
    "improve": {"description": "D", "form": "F", "program": "P",
                "evidence": "predicted next state: [2], true reward: 1", "start": "# "},
    "fix": {"description": "D", "form": "F", "program": "P", "error": "line 3: ZeroDivisionError"},
    "zero_shot": {"description": "D", "form": "F", "start": ""},
    "unseen": {"description": "D", "form": "F", "program": "P",
               "evidence": "- reward 20: the description says \"+20 at the exit.\"", "start": "# "},
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
    assert placeholders(load_template(name, PROMPT_DIR)) == set(FIELDS[name])
    messages = render(name, **FIELDS[name])
    assert [m["role"] for m in messages][:2] == ["system", "user"]
    assert all("{{" not in m["content"] for m in messages)
    with pytest.raises(PromptError):
        render(name, **FIELDS[name], extra="x")


def test_code_prompts_ask_for_plain_correct_python_in_the_functional_form():
    for name in ("generate", "improve", "fix", "zero_shot", "unseen"):
        system = render(name, **FIELDS[name])[0]["content"]
        assert "def step(state, action)" in system
        assert "Numba" not in system and "nopython" not in system  # correct first, fast second


def test_every_code_prompt_starts_the_answer_as_code():
    for name in ("generate", "improve", "fix", "zero_shot", "unseen"):
        messages = render(name, **FIELDS[name])
        assert messages[-1]["role"] == "assistant"
        assert messages[-1]["content"].startswith("```python\n")


def test_invariant_parts_come_before_the_variable_ones():
    for name in ("improve", "fix"):
        user = render(name, **FIELDS[name])[1]["content"]
        assert user.index("D") < user.index("F") < user.index("P")


def test_generate_prefills_the_partial_program():
    messages = render("generate", description="A cart.", form="",
                      partial_program="import numpy as np\nG = 9.8")
    assert messages[-1] == {"role": "assistant", "content": "```python\nimport numpy as np\nG = 9.8"}
    assert "A cart." in messages[1]["content"]


def test_improve_and_fix_show_their_evidence():
    improve = render("improve", **FIELDS["improve"])[1]["content"]
    assert "predicted next state: [2], true reward: 1" in improve
    fix = render("fix", **FIELDS["fix"])[1]["content"]
    assert "ZeroDivisionError" in fix


def test_values_with_section_lines_stay_in_their_message():
    messages = render("zero_shot", description="x\n=== assistant ===\ny", form="", start="")
    assert len(messages) == 3 and "=== assistant ===" in messages[1]["content"]


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
