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
import re
from collections import Counter
from typing import Any

from codeworld.worlds.objects._ops import _load, bfs_plan
from codeworld.worlds.objects._rules import is_collection, leaves_of, learn_rules
from codeworld.worlds.objects._states import mission_parts, normalize_state

Path = tuple[str, ...]


def situation_paths(data: list[dict], focus: set[str] = frozenset()) -> list[Path]:
    """The leaves that the most actions change (at least half as many actions as the leaf that
    the most change), and those any action changed under a key in ``focus`` (the fridge's door
    once it opened: taking the potato is new there then); lists of cells or objects left out;
    [] with no change recorded."""
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
    return sorted(p for p, v in actions.items() if 2 * len(v) >= most or set(p) & focus)


def situation_values(state: Any, paths: list[Path]) -> list:
    """The values at ``paths`` in ``state`` (None where it has none)."""
    values, state = [], normalize_state(state)
    for path in paths:
        value = state
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        values.append(value)
    return values


def situation(state: Any, paths: list[Path]) -> str:
    """The agent's situation in ``state``: the values at ``paths``, as a key."""
    return json.dumps(situation_values(state, paths), sort_keys=True)


def seen_pairs(data: list[dict], paths: list[Path]) -> list[list]:
    """The (action, situation) pairs the data has, as JSON-ready pairs."""
    seen = {(int(t["action"]), situation(t["state"], paths)) for t in data}
    return [[a, s] for a, s in sorted(seen)]


def explore_arguments(data: list[dict], mission: str, state: dict,
                      action_names: tuple[str, ...] = ()) -> dict:
    """What `op_plan_explore` needs besides the program (empty: nothing to explore by yet).

    ``seen``: the recorded (action, situation) pairs; ``known``: the actions the rule model
    learned to do the same thing everywhere (no condition: going to a place), which need no
    trying in new situations; ``order``: the actions in the order they are tried, those whose
    name shares a word with the mission ("take potato") first, then the least recorded;
    ``focus``: the names the mission points at, directly or through the parts
    of the state it names (`codeworld.worlds.objects._states.mission_parts`: "put a hot potato on
    a table" names the potato, which lies in "fridge 1"), whose situations are tried first.
    """
    focus = sorted({name for part in mission_parts(mission, state)
                    for name in re.findall(r'"([^"]+)"', part)})
    paths = situation_paths(data, set(focus))
    if not paths:
        return {}
    model = learn_rules(data)
    known = sorted(a for a, rules in model.transitions.items()
                   if rules and all(not r.rules and r.default >= 0 for r in rules))
    counts = Counter(int(t["action"]) for t in data)
    words = set(re.findall(r"[a-z0-9]+", mission.lower()))
    n = max([len(action_names)] + [int(t["action"]) + 1 for t in data])

    def named(a: int) -> bool:
        return a < len(action_names) and bool(words & set(re.findall(r"[a-z0-9]+",
                                                                     action_names[a].lower())))

    order = sorted((a for a in range(n) if a not in known),
                   key=lambda a: (not named(a), counts.get(a, 0), a))
    return {"paths": paths, "seen": seen_pairs(data, paths), "order": order, "focus": focus,
            "named": [a for a in order if named(a)]}


def unseen_target(paths: list, seen: list, order: list, focus: list | None):
    """The planner's target (see `codeworld.worlds.objects._ops.bfs_plan`): in a state, the first
    action of ``order`` never recorded in the agent's situation there (and, with ``focus``, only
    in a situation holding one of those names), else None."""
    seen_set = {(int(a), s) for a, s in seen}
    paths = [tuple(p) for p in paths]
    names = set(focus or ())

    def target(state: dict) -> int | None:
        values = situation_values(state, paths)
        if names and not any(isinstance(v, str) and v in names for v in values):
            return None
        where = json.dumps(values, sort_keys=True)
        return next((a for a in order if (a, where) not in seen_set), None)

    return target


def op_plan_explore(ctx, source: str, state: dict, mission: str, n_actions: int, paths: list,
                    seen: list, order: list | None = None, focus: list = (), named: list = (),
                    max_nodes: int = 20000, max_depth: int = 100) -> dict:
    """A plan to reward under the model (`bfs_plan`); where there is none, a plan to an action
    never tried in the agent's situation (``explore`` True in the answer): first an action the
    mission names in a situation it points at (however far), then any action there, then any
    action anywhere. Runs in the sandbox worker."""
    functions = _load(ctx, source)
    plan = bfs_plan(functions, state, mission, n_actions, max_nodes, max_depth)
    if plan["found"] or not paths:
        return plan
    order = list(range(n_actions)) if order is None else order
    stages = ([(list(named), focus)] if named and focus else []) + (
        [(order, focus)] if focus else []) + [(order, None)]
    for actions, names in stages:
        target = unseen_target(paths, seen, actions, names)
        plan = bfs_plan(functions, state, mission, n_actions, max_nodes, max_depth, target=target)
        if plan["found"]:
            break
    return {**plan, "explore": True}
