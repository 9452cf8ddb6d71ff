"""The agent's world-model contract, and the checks on it that run in the parent (no execution).

A WorldCoder model is a module with two pure functions over JSON-ready states::

    def transition(state, action):
        return next_state

    def reward(state, action, next_state, mission):
        return reward, done

``state`` is a dict as the environment gives it (see `codeworld.agent.sokoban` and
`codeworld.agent.minigrid_env`), ``action`` an int, ``mission`` a sentence. ``reward`` is 1.0 on
the step that completes the mission. The program is untrusted: it is only ever executed inside a
sandbox worker, by the ops in `codeworld.agent.ops`.

States are compared after `normalize_state`, which sorts lists of cells and lists of objects, so
that a program is not wrong merely for listing the same objects in another order.
"""

from __future__ import annotations

import ast
import json
from typing import Any

REQUIRED_FUNCTIONS = ("transition", "reward")


class AgentModelError(ValueError):
    """A program that cannot be an agent model (no parse, or a required function missing)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def check_agent_source(source: str) -> None:
    """Check, without running it, that a program parses and defines the two model functions.

    Raises:
        AgentModelError: with the line of a syntax error, or naming the missing function.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise AgentModelError(f"SyntaxError: {exc.msg} (line {exc.lineno})", exc.lineno) from None
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in REQUIRED_FUNCTIONS if name not in defined]
    if missing:
        raise AgentModelError(
            "the program must define top-level functions transition(state, action) and "
            f"reward(state, action, next_state, mission); missing: {', '.join(missing)}")


def defines_agent_model(source: str) -> bool:
    """Whether a program passes `check_agent_source`."""
    try:
        check_agent_source(source)
    except AgentModelError:
        return False
    return True


def _plain(value: Any) -> Any:
    """JSON-ready copy: tuples become lists, numpy scalars Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "item"):
        return _plain(value.item())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sorted_containers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_containers(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [_sorted_containers(v) for v in value]
        if items and all(isinstance(v, (dict, list)) for v in items):
            items.sort(key=repr)  # dicts were rebuilt with sorted keys: repr is canonical
        return items
    return value


def normalize_state(state: Any) -> Any:
    """The canonical form of a state: plain JSON types, keys and lists of containers sorted.

    Integral floats become ints (``2.0`` and ``2`` are the same cell).
    """
    return _sorted_containers(_plain(state))


def state_key(state: Any) -> str:
    """A hashable, canonical text of a state."""
    return json.dumps(normalize_state(state), sort_keys=True, separators=(",", ":"))


def copy_state(state: Any) -> Any:
    """A deep copy of a JSON-ready state (faster than `copy.deepcopy`)."""
    if isinstance(state, dict):
        return {k: copy_state(v) for k, v in state.items()}
    if isinstance(state, list):
        return [copy_state(v) for v in state]
    return state


def state_diff(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Readable differences between two states, e.g. ``agent.x: 1 -> 2``."""
    a, b = normalize_state(before), normalize_state(after)
    if isinstance(a, dict) and isinstance(b, dict):
        lines = []
        for key in sorted(set(a) | set(b)):
            name = f"{prefix}.{key}" if prefix else key
            if key not in a:
                lines.append(f"{name}: (absent) -> {json.dumps(b[key])}")
            elif key not in b:
                lines.append(f"{name}: {json.dumps(a[key])} -> (absent)")
            else:
                lines += state_diff(a[key], b[key], name)
        return lines
    if a != b:
        return [f"{prefix or 'state'}: {json.dumps(a)} -> {json.dumps(b)}"]
    return []
