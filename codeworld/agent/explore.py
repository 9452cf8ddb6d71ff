"""Exploration where the model is silent: plan to an action never tried in the agent's situation.

A model learned from the data predicts nothing about what the data never showed (opening the
fridge the agent never stood at), so when its planner reaches no reward, optimism has nothing to
plan toward. The exploration bonus gives it a target: the nearest state (under the model) from
which an action would be taken in a *situation* of the agent never recorded with that action.

The situation is what the action touches, read off the data without naming anything: the values
of the leaves of the state that the most actions change (the agent's own: where it stands, what it
holds, which way it faces), lists of cells or objects left out. A pair (action, situation) is
*seen* once a recorded transition took that action there.
"""

from __future__ import annotations

import json
from typing import Any

from codeworld.worlds.objects.ops import _load, bfs_plan
from codeworld.worlds.objects.rules import is_collection, leaves_of
from codeworld.worlds.objects.states import normalize_state

Path = tuple[str, ...]


def situation_paths(data: list[dict]) -> list[Path]:
    """The leaves that the most actions change (at least half as many actions as the leaf that
    the most change), lists of cells or objects left out; [] with no change recorded."""
    every = leaves_of([t["state"] for t in data] + [t["next_state"] for t in data])
    actions: dict[Path, set[int]] = {}
    for t, before, after in zip(data, every, every[len(data):]):
        for path in set(before) | set(after):
            a, b = before.get(path), after.get(path)
            if a != b and not is_collection(a) and not is_collection(b):
                actions.setdefault(path, set()).add(int(t["action"]))
    if not actions:
        return []
    most = max(len(v) for v in actions.values())
    return sorted(p for p, v in actions.items() if 2 * len(v) >= most)


def situation(state: Any, paths: list[Path]) -> str:
    """The agent's situation in ``state``: the values at ``paths`` (None where it has none)."""
    values, state = [], normalize_state(state)
    for path in paths:
        value = state
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        values.append(value)
    return json.dumps(values, sort_keys=True)


def seen_pairs(data: list[dict], paths: list[Path]) -> list[list]:
    """The (action, situation) pairs the data has, as JSON-ready pairs."""
    seen = {(int(t["action"]), situation(t["state"], paths)) for t in data}
    return [[a, s] for a, s in sorted(seen)]


def unseen_target(paths: list, seen: list):
    """The planner's target (see `codeworld.worlds.objects.ops.bfs_plan`): in a state, the
    lowest action never recorded in the agent's situation there, else None."""
    known = {(int(a), s) for a, s in seen}
    paths = [tuple(p) for p in paths]

    def target(state: dict, n_actions: int) -> int | None:
        where = situation(state, paths)
        return next((a for a in range(n_actions) if (a, where) not in known), None)

    return target


def op_plan_explore(ctx, source: str, state: dict, mission: str, n_actions: int,
                    paths: list, seen: list, max_nodes: int = 20000, max_depth: int = 100) -> dict:
    """A plan to reward under the model (`bfs_plan`); where there is none, a plan to an action
    never tried in the agent's situation (``explore`` True in the answer). Runs in the sandbox worker."""
    functions = _load(ctx, source)
    plan = bfs_plan(functions, state, mission, n_actions, max_nodes, max_depth)
    if plan["found"] or not paths:
        return plan
    target = unseen_target(paths, seen)
    plan = bfs_plan(functions, state, mission, n_actions, max_nodes, max_depth,
                    target=lambda s: target(s, n_actions))
    return {**plan, "explore": True}
