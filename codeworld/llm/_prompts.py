"""Prompt templates and the one function that fills them (the templates live beside the code that
uses them: the world-model prompts in ``codeworld/worlds/cwmb/prompts/``, the agent's in
``codeworld/worlds/objects/prompts/``, APPS's in ``codeworld/worlds/apps/prompts/``).

A template file has sections that become chat messages, each opened by a line
``=== system ===``, ``=== user ===`` or ``=== assistant ===``; a final assistant section is a
prefill the model continues. ``{{name}}`` is a placeholder and ``{{> file}}`` includes another
template file (without sections) verbatim. `fill` fails on a placeholder left without a value and
on a value that no placeholder uses, so a renamed field cannot silently drop out of a prompt.

The world-model templates (`codeworld.worlds.cwmb._cwmb.PROMPT_DIR`):

* ``generate`` (description, partial_program): continue a partial program (GIF-MCTS generate);
* ``improve`` (description, form, program, evidence, start): correct what the program gets
  wrong (`evidence`: one mispredicted transition, the error summary, or a request aimed at one
  component); `start` begins the answer;
* ``fix`` (description, program, error): repair a program that raised;
* ``zero_shot`` (description): write the program from scratch;
* ``predict`` (description, examples, state, action): the LLM as the world model; parse its
  answer with `parse_prediction`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_INCLUDE = re.compile(r"\{\{>\s*([A-Za-z_]\w*)\s*\}\}")
_SECTION = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)


class PromptError(ValueError):
    """A template and its values do not match, or a template is malformed."""


def load_template(name: str, directory: Path) -> str:
    """The text of template ``name`` with its includes expanded.

    Args:
        name: the template's file name without ``.txt``.
        directory: where the templates are (each user of templates keeps them beside its code:
            ``codeworld/worlds/cwmb/prompts``, ``codeworld/worlds/objects/prompts`` ...).

    Raises:
        PromptError: no such template (the message lists those that exist).
    """
    path = directory / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.stem for p in directory.glob("*.txt"))
        raise PromptError(f"no prompt template {name!r}; templates: {', '.join(known)}")
    text = path.read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: load_template(m.group(1), directory).rstrip("\n"), text)


def placeholders(template: str) -> set[str]:
    """The placeholder names in a template."""
    return set(_PLACEHOLDER.findall(template))


def fill(template: str, **values: object) -> str:
    """Replaces every ``{{name}}`` in ``template`` with ``str(values[name])``.

    Values are inserted verbatim (braces in code are safe) and are not searched for further
    placeholders.

    Raises:
        PromptError: a placeholder has no value, or a value has no placeholder.
    """
    wanted = placeholders(template)
    missing = sorted(wanted - set(values))
    unused = sorted(set(values) - wanted)
    if missing or unused:
        parts = []
        if missing:
            parts.append(f"missing value(s) for {missing}")
        if unused:
            parts.append(f"unused value(s) {unused}")
        raise PromptError("prompt template mismatch: " + "; ".join(parts))
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def split_sections(text: str) -> list[dict]:
    """Turns a filled template into chat messages (see the module docstring)."""
    marks = list(_SECTION.finditer(text))
    if not marks:
        raise PromptError("a prompt template needs at least one '=== user ===' section")
    if text[:marks[0].start()].strip():
        raise PromptError("text before the first section of a prompt template")
    messages = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() + 1:end]
        role = mark.group(1)
        # A prefill keeps its trailing spaces but not the newline that ends the file.
        body = body[:-1] if role == "assistant" and body.endswith("\n") else body.strip("\n")
        messages.append({"role": role, "content": body})
    for message in messages[:-1]:
        if message["role"] == "assistant":
            raise PromptError("only the last section of a prompt template may be the assistant's")
    return messages


def render(name: str, directory: Path, **values: object) -> list[dict]:
    """The chat messages of template ``name`` (in `directory`, see `load_template`) filled with ``values``.

    Raises:
        PromptError: unknown template, or values that do not match its placeholders.
    """
    template = load_template(name, directory)
    fill(template, **values)  # checks the values against the whole template
    # Fill each section separately, so that a value containing a section line stays inside it.
    messages = split_sections(template)
    for message in messages:
        names = placeholders(message["content"])
        message["content"] = fill(message["content"], **{k: values[k] for k in names})
    return messages


def format_number(value: float) -> str:
    """A number as the prompts show it: integers without a decimal point, floats with up to
    8 significant digits."""
    value = float(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.8g}"


def format_vector(values: Iterable[float]) -> str:
    """``[1, 0.5, -2]``: a state or continuous action as the prompts show it."""
    return "[" + ", ".join(format_number(v) for v in values) + "]"


def format_value(value: object) -> str:
    """A state, action, reward or done flag as the prompts show it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return format_vector(value)
    if isinstance(value, (int, float)):
        return format_number(value)
    return str(value)


def format_transitions(states, actions, next_states, rewards, dones) -> str:
    """Recorded transitions as the ``predict`` prompt's examples, one block per transition."""
    blocks = []
    for s, a, s2, r, d in zip(states, actions, next_states, rewards, dones):
        blocks.append(f"state: {format_value(s)}\naction: {format_value(a)}\n"
                      f"next_state: {format_value(s2)}\nreward: {format_value(r)}\n"
                      f"done: {format_value(bool(d))}")
    return "\n\n".join(blocks)


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"


def parse_prediction(text: str) -> tuple[list[float], float, bool]:
    """Reads the answer to a ``predict`` prompt.

    Returns:
        (next_state, reward, done).

    Raises:
        ValueError: the answer lacks one of the three lines or has unreadable numbers.
    """
    found = {}
    for key in ("next_state", "reward", "done"):
        match = re.search(rf"^\W*{key}\W*[:=]\s*(.+)$", text, re.MULTILINE | re.IGNORECASE)
        if not match:
            raise ValueError(f"the prediction has no '{key}:' line")
        found[key] = match.group(1).strip()
    state = [float(x) for x in re.findall(_NUMBER, found["next_state"])]
    if not state:
        raise ValueError(f"no numbers in next_state: {found['next_state']!r}")
    reward_numbers = re.findall(_NUMBER, found["reward"])
    if not reward_numbers:
        raise ValueError(f"no number in reward: {found['reward']!r}")
    done_word = found["done"].strip().strip("`*.").lower()
    if done_word.startswith(("true", "yes", "1")):
        done = True
    elif done_word.startswith(("false", "no", "0")):
        done = False
    else:
        raise ValueError(f"done is neither true nor false: {found['done']!r}")
    return state, float(reward_numbers[0]), done
