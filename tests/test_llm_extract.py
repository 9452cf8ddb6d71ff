"""Taking programs out of awkward completions."""

from __future__ import annotations

import ast

import pytest

from codeworld.llm import CodeExtractionError, extract_code, extract_program
from codeworld.llm._extract import defines_world_model

STEP = "import numpy as np\n\ndef step(state, action):\n    return state.copy(), 1.0, False"
FENCE = "`" * 3


def test_prose_around_a_fenced_block():
    text = f"Here is the model:\n\n{FENCE}python\n{STEP}\n{FENCE}\n\nIt keeps the state unchanged."
    assert extract_code(text) == STEP


@pytest.mark.parametrize("opening", [f"{FENCE}python", f"{FENCE}py", f"{FENCE}Python3", FENCE,
                                     "~~~python", f"{FENCE}{{.python}}", "````python", f"  {FENCE}python "])
def test_fence_variants(opening):
    closing = opening.strip().rstrip("{}.pythonPy3 ")
    text = f"Answer:\n{opening}\n{STEP}\n{closing}\nDone."
    assert extract_code(text) == STEP


def test_unfenced_code_with_prose_before_and_after():
    text = f"Sure, the world model follows.\n{STEP}\n\nThis returns a reward of 1 per step."
    program = extract_program(text)
    assert program.source == STEP and not program.fenced and program.defines_model


def test_bare_code():
    assert extract_code(STEP + "\n") == STEP


def test_truncated_block_keeps_the_complete_part():
    text = (f"{FENCE}python\nimport numpy as np\n\nGRAVITY = 9.8\n\ndef step(state, action):\n"
            "    x = state[0]\n    v = state[1] + GRAVITY *")
    program = extract_program(text)
    assert program.trimmed and program.defines_model
    assert program.source.endswith("x = state[0]")
    ast.parse(program.source)


def test_two_blocks_the_one_defining_step_wins():
    usage = "env_state = np.zeros(4)\nprint(step(env_state, 0))"
    text = (f"{FENCE}python\n{STEP}\n{FENCE}\nUse it like this:\n{FENCE}python\n{usage}\n{FENCE}")
    assert extract_code(text) == STEP
    helpers = "def clip(x, lo, hi):\n    return min(max(x, lo), hi)"
    text = f"{FENCE}python\n{helpers}\n{FENCE}\nand\n{FENCE}python\n{STEP}\n{FENCE}"
    assert extract_code(text) == STEP


def test_class_environment_counts_as_the_model():
    cls = ("class Environment:\n    def set_state(self, state):\n        self.s = state\n"
           "    def step(self, action):\n        return self.s, 0.0, False")
    text = f"{FENCE}python\nx = 1\n{FENCE}\n{FENCE}python\n{cls}\n{FENCE}"
    assert extract_code(text) == cls


def test_of_two_models_the_later_revision_wins():
    revised = STEP.replace("1.0", "2.0")
    text = f"{FENCE}python\n{STEP}\n{FENCE}\nActually, better:\n{FENCE}python\n{revised}\n{FENCE}"
    assert extract_code(text) == revised


def test_non_python_blocks_are_ignored():
    text = f"{FENCE}bash\npip install numpy\n{FENCE}\n{FENCE}python\n{STEP}\n{FENCE}"
    assert extract_code(text) == STEP


def test_prefill_continuation():
    prefill = f"{FENCE}python\nimport numpy as np\n\ndef step(state, action):\n"
    text = f"    return state.copy(), 1.0, False\n{FENCE}\nThat is all."
    assert extract_code(text, prefill=prefill) == STEP


def test_prefill_ignored_by_the_backend_falls_back_to_its_own_block():
    prefill = f"{FENCE}python\nimport numpy as np\n"
    text = f"Here is the full program:\n{FENCE}python\n{STEP}\n{FENCE}"
    assert extract_code(text, prefill=prefill) == STEP


@pytest.mark.parametrize("text", ["", "I cannot help with that.", "The answer is 42.",
                                  f"{FENCE}python\n{FENCE}", "Hello world"])
def test_no_code_raises(text):
    with pytest.raises(CodeExtractionError):
        extract_code(text)


def test_defines_world_model():
    assert defines_world_model(STEP)
    assert not defines_world_model("def helper(x):\n    return x")
    assert not defines_world_model("def step(:")
