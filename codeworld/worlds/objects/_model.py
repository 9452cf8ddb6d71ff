"""The agent's world-model contract, and the checks on it that run in the parent (no execution).

A WorldCoder model is a module with two pure functions over JSON-ready states::

    def transition(state, action):
        return next_state

    def reward(state, action, next_state, mission):
        return reward, done

``state`` is a dict as the environment gives it (see `codeworld.agent._sokoban` and
`codeworld.agent._minigrid_env`), ``action`` an int, ``mission`` a sentence. ``reward`` is 1.0 on
the step that completes the mission. The program is untrusted: it is only ever executed inside a
sandbox worker, by the ops in `codeworld.worlds.objects._ops`.

States are compared after `codeworld.worlds.objects._states.normalize_state`, which sorts lists of
cells and lists of objects, so that a program is not wrong merely for listing the same objects in
another order.
"""

from __future__ import annotations

import ast

from codeworld.worlds.objects._states import FUNCTIONS as REQUIRED_FUNCTIONS


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
