"""Exploration where the model is silent: plan to an action never tried in the agent's situation.

A model learned from the data predicts nothing about what the data never showed (opening the
fridge the agent never stood at), so when its planner reaches no reward, optimism has nothing to
plan toward. The exploration bonus gives it a target: the nearest state (under the model) from
which an action would be taken in a *situation* of the agent never recorded with that action.

The situation is what the action touches, read off the data without naming anything: the values
of the leaves of the state that the most actions change (the agent's own: where it stands, what it
holds, which way it faces), lists of cells or objects left out, and the leaves of what the
mission names that an action changed (where the plate lies, whether it is clean), each read
relative to the agent where it holds a place the agent can be at: here, or elsewhere (one
situation wherever else the plate lies, not one per place). A pair (action, situation) is
*seen* once a recorded transition took that action there.

Where the rule model learned a cell in front (a heading, `codeworld.worlds.objects._rules.Space`),
the situation is first read coarser: where the agent stands and faces gives way to what is on the
cell in front (in a list of cells or not; the element of a list of dicts standing there, without
its position), so that "toggle, holding a key, a locked door in front" is one pair wherever the
door is, not one per cell and heading (a room of 16 cells has 64 of those per action, too many to
try in a level's steps before the one that counts). Facing a heading the rule model has no step
for, what is in front is one of the cells no known heading points to, and the situation holds
what is on each (a door east of a corridor one cell wide is met only facing a way the agent never
went). Only when every coarse pair within reach is seen does it plan to a new place and heading.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from codeworld.worlds.objects._ops import _load, bfs_plan
from codeworld.worlds.objects._rules import (JOINT, RuleModel, _is_vector, is_collection,
                                            leaves_of, learn_rules)
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


def _value_at(state: Any, path) -> Any:
    for key in path:
        state = state.get(key) if isinstance(state, dict) else None
    return state


def front_of(model: RuleModel, data: list[dict]) -> dict | None:
    """The cell in front as the rule model learned it, JSON-ready (None: no heading learned):
    ``position`` (the paths of its numbers), ``key`` and ``table`` (the step of each value of
    the key: the heading), ``cells`` (the lists of cells, such as walls) and ``located`` (the
    lists of dicts on cells, with the keys of an element's position)."""
    if not model.space.pointers:
        return None
    pointer = model.space.pointers[0]
    last = pointer.position[-1] if pointer.position else ""
    position = ([list(pointer.position[:-1]) + [k] for k in last[1:].split(JOINT)]
                if last.startswith(JOINT) else [list(pointer.position)])
    states = [t["state"] for t in data[:1] + data[-1:]]
    cells = sorted({path for leaves in leaves_of(states) for path, value in leaves.items()
                    if is_collection(value) and any(_is_vector(v) for v in value)})
    return {"position": position, "key": list(pointer.key),
            "table": [[k, v] for k, v in pointer.table], "cells": [list(c) for c in cells],
            "located": [[list(w.path), list(w.keys)] for w in model.space.located]}


def front_values(state: Any, front: dict) -> list:
    """What is on the cell in front in ``state`` (in its canonical form, `normalize_state`; see
    `front_of`): for each list of cells, whether the cell is in it; for each list of dicts on
    cells, its element there without its position (None: none).

    Facing a heading the table has no step for, the cell in front is one of the steps no other
    heading takes (`open_steps`: as long as theirs, along one axis), so each value is
    ``["?", heading, <the value through each of them>]``: where a locked door may be in front,
    toggling holding the key is a situation of its own; where only walls may be, it is one
    situation wherever the agent stands. Without such steps, the first value is
    ``["?", position, heading]`` (the place and heading stand for what is in front)."""
    numbers = [_value_at(state, p) for p in front["position"]]
    position = numbers[0] if len(numbers) == 1 else numbers
    heading = _value_at(state, front["key"])
    step = next((v for k, v in front["table"] if k == heading), None)
    size = len(front["cells"]) + len(front["located"])
    if size and isinstance(position, list) and step is None and heading is not None:
        candidates = open_steps([v for _, v in front["table"]], len(position))
        if not candidates:
            return [["?", position, heading]] + [None] * (size - 1)
        through = [_on_cell(state, front, position, c) for c in candidates]
        return [["?", heading] + [values[i] for values in through] for i in range(size)]
    if not isinstance(position, list) or step is None or len(step) != len(position):
        return [None] * size
    return _on_cell(state, front, position, step)


def open_steps(steps: list, dimensions: int) -> list[list]:
    """The steps along one axis, as long as the known ``steps`` (all of one length, L1), that
    none of them is ([]: none known, or of several lengths)."""
    lengths = {sum(abs(x) for x in v) for v in steps
               if isinstance(v, list) and len(v) == dimensions and all(isinstance(x, (int, float)) for x in v)}
    if len(lengths) != 1 or 0 in lengths:
        return []
    length = lengths.pop()
    return [v for axis in range(dimensions) for sign in (1, -1)
            for v in [[sign * length if i == axis else 0 for i in range(dimensions)]] if v not in steps]


def _on_cell(state: Any, front: dict, position: list, step: list) -> list:
    """What is on the cell ``position + step`` (`front_values`)."""
    try:
        cell = [a + b for a, b in zip(position, step)]
    except TypeError:
        return [None] * (len(front["cells"]) + len(front["located"]))
    out: list = [cell in (_value_at(state, c) or []) for c in front["cells"]]
    for path, keys in front["located"]:
        here = next((item for item in _value_at(state, path) or [] if isinstance(item, dict)
                     and [item.get(k) for k in keys] == cell), None)
        out.append(None if here is None else {k: v for k, v in here.items() if k not in keys})
    return out


ELSEWHERE = "<elsewhere>"


def situation_values(state: Any, paths: list[Path], front: dict | None = None,
                     own: list[int] | None = None, places: frozenset = frozenset()) -> list:
    """The values at ``paths`` in ``state`` (None where it has none), and with ``front`` what is
    on the cell in front (`front_values`). With ``own`` (the places of the agent's own leaves
    in ``paths``), another leaf holding one of ``places`` (the values the agent's own leaves
    took: where it can stand) is read relative to the agent: ``["=", i]`` where it equals the
    agent's value at ``paths[i]`` (the plate lies where the agent stands), else `ELSEWHERE`
    (wherever else it lies: one situation, not one per place)."""
    state = normalize_state(state)
    values = [_value_at(state, path) for path in paths]
    if own is not None:
        mine = {i: values[i] for i in own if i < len(values)}
        for i, value in enumerate(values):
            if i not in mine and isinstance(value, str) and value in places:
                values[i] = next((["=", j] for j, v in mine.items() if v == value), ELSEWHERE)
    return values + (front_values(state, front) if front else [])


def situation(state: Any, paths: list[Path], front: dict | None = None,
              own: list[int] | None = None, places: frozenset = frozenset()) -> str:
    """The agent's situation in ``state``: the values at ``paths`` (and in front), as a key."""
    return json.dumps(situation_values(state, paths, front, own, places), sort_keys=True)


def seen_pairs(data: list[dict], paths: list[Path], front: dict | None = None,
               own: list[int] | None = None, places: frozenset = frozenset()) -> list[list]:
    """The (action, situation) pairs the data has, as JSON-ready pairs."""
    seen = {(int(t["action"]), situation(t["state"], paths, front, own, places)) for t in data}
    return [[a, s] for a, s in sorted(seen)]


def _names_in(value: Any) -> set[str]:
    """The strings in a value, however deep (what a held or faced object is called)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(_names_in(v) for v in value)) if value else set()
    return set()


def explore_arguments(data: list[dict], mission: str, state: dict,
                      action_names: tuple[str, ...] = ()) -> dict:
    """What `op_plan_explore` needs besides the program (empty: nothing to explore by yet).

    ``seen``: the recorded (action, situation) pairs; with a cell in front learned, ``coarse``
    holds the same for the coarse situation (``paths`` without the position and heading, and
    ``front``, `front_of`). Actions the rule model learned to do the same thing everywhere (no
    condition: going to a place) need no trying in new situations; ``order``: the others in the
    order they are tried, those whose name shares a word with the mission ("take potato"; a
    stem: "wash" for "washed", `_same_word`) first (``named``), then the least recorded;
    ``silent``: the named ones the data never showed changing anything (`_silent`), tried
    before the others.
    ``focus``: the names the mission points at, directly or through the parts of the state it
    names (`codeworld.worlds.objects._states.mission_parts`, read by `_focus_of`: "put a hot
    potato on a table" names the potato, which lies in "fridge 1"), and the values of the
    agent's own leaves it names ("bench 1" where the agent went); situations that hold more of
    them are tried first. ``counted``: the places in ``paths`` of the agent's own leaves
    (`situation_paths` without the focus); ``places``: the strings they took, read relative to
    the agent in the other leaves (`situation_values`).
    """
    own = situation_paths(data)
    if not own:
        return {}
    words = set(re.findall(r"[a-z0-9]+", mission.lower()))
    places = sorted({v for t in data for s in (t["state"], t["next_state"])
                     for n in [normalize_state(s)] for p in own
                     for v in [_value_at(n, p)] if isinstance(v, str)})
    focus = sorted({name for part in mission_parts(mission, state) for name in _focus_of(part)}
                   | {v for v in places if any(_same_word(w, x) for w in words if len(w) >= 3
                                               for x in re.findall(r"[a-z]+", v.lower()))})
    paths = situation_paths(data, set(focus))
    model = learn_rules(data)
    known = sorted(a for a, rules in model.transitions.items()
                   if rules and all(not r.rules and r.default >= 0 for r in rules))
    counts = Counter(int(t["action"]) for t in data)
    n = max([len(action_names)] + [int(t["action"]) + 1 for t in data])

    def named(a: int) -> bool:
        return a < len(action_names) and any(
            _same_word(w, v) for w in words for v in re.findall(r"[a-z0-9]+", action_names[a].lower()))

    order = sorted((a for a in range(n) if a not in known),
                   key=lambda a: (not named(a), counts.get(a, 0), a))
    counted = [i for i, p in enumerate(paths) if p in own]
    where = frozenset(places)
    out = {"paths": paths, "seen": seen_pairs(data, paths, own=counted, places=where),
           "order": order, "focus": focus, "named": [a for a in order if named(a)],
           "counted": counted, "places": places,
           "silent": [a for a in order if named(a) and _silent(a, model, action_names)]}
    front = front_of(model, data)
    if front is not None:
        pose = {tuple(p) for p in front["position"]} | {tuple(front["key"])}
        near = [p for p in paths if p not in pose]
        mine = [i for i, p in enumerate(near) if p in own]
        out["coarse"] = {"paths": near, "front": front,
                         "seen": seen_pairs(data, near, front, mine, where),
                         "counted": mine + list(range(len(near), len(near) + len(front["cells"])
                                                      + len(front["located"])))}
    return out


def _silent(action: int, model: RuleModel, action_names: tuple[str, ...]) -> bool:
    """Whether the data never showed ``action`` change anything, nor any action whose name begins
    with the same word ("go to cabinet 2" where the level has none: going places is known)."""
    def first(a: int) -> str:
        return action_names[a].split()[0] if a < len(action_names) and action_names[a] else ""

    return not model.transitions.get(action) and not any(
        rules and first(a) == first(action) for a, rules in model.transitions.items())


def _same_word(a: str, b: str) -> bool:
    """One word, or one the other begins with where the shorter has four letters or more
    ("wash" in "washed")."""
    short, long = sorted((a, b), key=len)
    return a == b or (len(short) >= 4 and long.startswith(short))


def _focus_of(part: str) -> list[str]:
    """The names one part of the state the mission names points at (`mission_parts`): the key
    that holds it and the strings its value holds, not the keys above it nor the keys within
    (the part "the apple's clean flag", named by "put a clean plate...", points at cleanness,
    not at the apple; the plate's own fields point at the plate and where it lies, not at the
    place of every object)."""
    where, _, value = part.partition(" = ")
    keys = re.findall(r'\["([^"]+)"\]$', where)
    try:
        held = _names_in(json.loads(value))
    except ValueError:  # cut short (`mission_parts` writes at most 200 characters): its values
        held = set(re.findall(r':\s*"([^"]+)"', value))
    return keys + sorted(held)


def _unseen(seen: list, order: list, focus: list | None, least: int,
            counted: list[int] | None = None):
    """A stage of the planner's target (see `codeworld.worlds.objects._ops.bfs_plan`): on the
    values of the agent's situation in a state (`situation_values`, computed once for every
    stage), the first action of ``order`` never recorded in that situation (and, with
    ``focus``, only in a situation where at least ``least`` of its values hold one of those
    names, however deep: a held key's colour, the door in front), else None. With ``counted``
    (the agent's own leaves), the other values count toward ``least`` where the thing is held
    or here as well (``points``)."""
    seen_set = {(int(a), s) for a, s in seen}
    names = set(focus or ())
    mine = None if counted is None else set(counted)

    # a value points at the mission: the agent's own, where it names the focus; another, where
    # it does or where the thing is held (None: in no place) or here (``["=", i]``)
    def points(i: int, v: Any) -> bool:
        if mine is None or i in mine:
            return bool(names & _names_in(v))
        return v is None or (isinstance(v, list) and v[:1] == ["="]) or bool(names & _names_in(v))

    def pick(values: list, where: str | None = None) -> int | None:
        if names and sum(points(i, v) for i, v in enumerate(values)) < least:
            return None
        where = json.dumps(values, sort_keys=True) if where is None else where
        return next((a for a in order if (a, where) not in seen_set), None)

    return pick


def op_plan_explore(ctx, source: str, state: dict, mission: str, n_actions: int, paths: list,
                    seen: list, order: list | None = None, focus: list = (), named: list = (),
                    coarse: dict | None = None, counted: list[int] | None = None,
                    silent: list = (), places: list = (), max_nodes: int = 20000,
                    max_depth: int = 100) -> dict:
    """A plan to reward under the model (`bfs_plan`); where there is none, a plan to an action
    never tried in the agent's situation (``explore`` True in the answer): first a ``silent``
    action (named, never seen doing anything) in a situation the mission points at, then an
    action the mission names there (however far), then any action there, then any action
    anywhere; situations where more of the situation's values hold what the mission
    points at (the key it holds and the door in front) before those with fewer; with
    ``coarse``, over the coarse situations first (what is in front), then over the fine ones.
    Runs in the sandbox worker."""
    functions = _load(ctx, source)
    if not paths:
        return bfs_plan(functions, state, mission, n_actions, max_nodes, max_depth)
    order = list(range(n_actions)) if order is None else order
    views = ([(coarse["paths"], coarse["seen"], coarse["front"], coarse.get("counted"))]
             if coarse else []) + [(paths, seen, None, counted)]
    picks = []  # (view, stage): in the order of their ranks
    for view, (where, tried, front, count) in enumerate(views):
        size = len(where) + (len(front["cells"]) + len(front["located"]) if front else 0)
        stages = ([(list(silent), focus, least) for least in range(size, 0, -1) if focus and silent]
                  + [(actions, focus, least) for least in range(size, 0, -1) if focus
                     for actions in ([list(named)] if named else []) + [order]]
                  + [(order, None, 1)])
        picks += [(view, _unseen(tried, actions, names, least, count))
                  for actions, names, least in stages]
    views = [([tuple(p) for p in where], front,
              None if count is None else [i for i in count if i < len(where)])
             for where, _, front, count in views]
    spots = frozenset(places)

    def ranked(s: dict) -> tuple[int, int] | None:  # the first stage that has a target there
        values = [situation_values(s, where, front, own, spots) for where, front, own in views]
        keys = [json.dumps(v, sort_keys=True) for v in values]
        return next(((rank, action) for rank, action in
                     ((r, pick(values[v], keys[v])) for r, (v, pick) in enumerate(picks))
                     if action is not None), None)

    return bfs_plan(functions, state, mission, n_actions, max_nodes, max_depth, target=ranked,
                    reward_first=True)
