"""The rule model: a world-model program written by the machine from recorded transitions.

From transitions of object states (``{state, action, next_state, reward, done, mission}``, as the
WorldCoder agent records them), `rule_program` learns, for each action and each leaf of the
state that the action ever changed:

* **the change**, one of: keep the value, set it to a constant, copy another leaf, add a
  constant (a number or a vector), add another leaf (move by a vector the state holds), move by
  the vector a table keyed by another leaf gives (a *heading*: the step "forward" takes for each
  value of a direction; a direction never moved in takes the step to the one cell an action
  facing it changed, `touched_steps`: the door opened facing east, where the agent could not
  go before), and for a list: remove, insert or move by a vector the element equal to
  a leaf (or a leaf plus a vector the action moves things by); for a list of dicts that stand on
  cells (their position keys named like a position's): remove the element on a cell the state
  points at (a position plus its heading's step: the cell in front), or change some of its
  fields (set them, negate a boolean), or add a dict leaf there (what is put down); a leaf can
  become that element, without its position (what is picked up); the entries of a dict that
  an action changes one at a time, always the one at the key a string leaf holds (the open flag
  of the place the agent is at, the place of the object it holds), are one leaf read and
  written at that key (``open[at]``, `_keyed`);
* **the condition** under which each change happens, as a decision list (of single tests, or
  pairs of them where no single test is pure) over features computed from the state before the
  step: a leaf's value, the equality of two leaves, a vector plus another equal to a third, a
  leaf (plus a vector the action moves things by) being in a list, a leaf read at the key
  another holds where some action changes it there (``open[at]``: "put" works where the place
  the agent is at is open, learned for places never put into); of the cell in front: being
  in a list of cells, holding an element of a list of dicts, that element's fields' values and
  their equality with the same field of a leaf that is a dict (the color of what is carried).

Where actions each move things by one vector (up, down, left, right), an action may take the
rules another learned, with its own step written in place of the other's, where they are right
on at least as many of its own transitions and on more of all of them (`_borrow`): a push the
data showed going up but never right. Given the actions' names, an action whose name begins as
another's and names another thing ("take potato", "take apple"; "go to drawer 1", "go to
cabinet 1") may take that one's rules with the thing's name written as its own, under a test
that the state names it (`_analogous`): where they are right on at least as many of its own
transitions (an action never recorded is the explorer's to try).

The reward and done are learned the same way over the state after the step, once a recorded
step got reward (per mission where one mission's successes contradict another's steps:
`_mission_rewards`); before that the program's ``reward`` says no step completes a mission (the
LLM writes it from the mission: `RewardPrompts`). The result is an ordinary program of the
object world's contract (``transition``, ``reward``): the agent checks it in the sandbox like any
other, and puts it in REx's pool. Nothing here names a level, a family or a kind of object:
leaves, changes and features are read off the data.

A leaf is a value reached through dict keys (``agent.x``, ``objects.apple 1.in``); lists stay
whole: a list of at most 4 numbers is a *vector*, any other list a *collection* (of cells, of
objects); a key whose value is a dict in some states and not in others is one leaf. Numbers of
one dict that one action changes (a position kept as ``x`` and ``y``) are also read as one vector
(a *joint* leaf), so that a move is learned as a vector and blocked by what is in that cell; so
is a number an action changes with its siblings that, with it, are the numbers every element of a
list of dicts has (an ``x`` that changed while ``y`` did not yet, where the things on cells stand on
``x`` and ``y``): a few moves along one row do not make a rule on the values of ``x``.
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from codeworld.synthesis._repairs import merge_into_parent
from codeworld.synthesis.types import Request
from codeworld.worlds.objects._states import FUNCTIONS, normalize_state

if TYPE_CHECKING:
    from codeworld.worlds.objects._prompting import PromptContext

Path = tuple[str, ...]

# the longest decision list of one change (past it, the rest of the rows take the majority)
MAX_RULES = 8
# a leaf whose value took more distinct values than this is not tested value by value
MAX_VALUES = 12


# ------------------------------------------------------------------------- leaves and kinds


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_vector(value: Any) -> bool:
    return isinstance(value, list) and 1 <= len(value) <= 4 and all(_number(v) for v in value)


def _dict_paths(states: list[dict]) -> set[Path]:
    """The paths whose value is a non-empty dict in every state that has them (walked into)."""
    seen: dict[Path, bool] = {}

    def walk(value: Any, path: Path) -> None:
        is_dict = isinstance(value, dict) and bool(value)
        seen[path] = seen.get(path, True) and is_dict
        if is_dict:
            for key, item in value.items():
                walk(item, path + (key,))

    for state in states:
        walk(state, ())
    return {p for p, always in seen.items() if always}


def _leaves(state: Any, dicts: set[Path], path: Path = ()) -> dict[Path, Any]:
    if path in dicts and isinstance(state, dict):
        out: dict[Path, Any] = {}
        for key, value in state.items():
            out.update(_leaves(value, dicts, path + (key,)))
        return out
    return {path: state}


def leaves_of(states: list[dict]) -> list[dict[Path, Any]]:
    """Each state's leaves (path of keys -> value), the paths walked the same way in all."""
    states = [normalize_state(s) for s in states]
    dicts = _dict_paths(states)
    return [_leaves(s, dicts) for s in states]


def is_collection(value: Any) -> bool:
    """A list that is not a vector (of cells, of objects, of names)."""
    return isinstance(value, list) and not _is_vector(value)


def _kind(values: list[Any]) -> str:
    """``number``, ``vector``, ``collection`` or ``value`` (anything else, compared whole)."""
    present = [v for v in values if v is not None]
    if present and all(_number(v) for v in present):
        return "number"
    if present and all(_is_vector(v) for v in present) and len({len(v) for v in present}) == 1:
        return "vector"
    if present and all(isinstance(v, list) for v in present):
        return "collection"
    return "value"


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [x + y for x, y in zip(a, b)]
    if _number(a) and _number(b):
        return a + b
    return None


def _sub(a: Any, b: Any) -> Any:
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [x - y for x, y in zip(a, b)]
    if _number(a) and _number(b):
        return a - b
    return None


def _scale(k: int, d: Any) -> Any:
    return [k * v for v in d] if isinstance(d, list) else k * d


def _canon(value: Any) -> Any:
    return normalize_state(value)


def _path_code(path: Path) -> str:
    return ", ".join(repr(k) for k in path)


# the last key of a joint leaf (numbers of one dict read as a vector, such as a position kept as
# "x" and "y"): a character no key of a JSON state has in practice, then the numbers' keys
JOINT = "\x00"


def _parts(path: Path) -> list[Path] | None:
    """The paths of a joint leaf's numbers; None for an ordinary leaf."""
    if not path or not path[-1].startswith(JOINT):
        return None
    return [path[:-1] + (key,) for key in path[-1][1:].split(JOINT)]


class KeyOf(str):
    """A key of a path that is the value of a leaf of the state before the step (the open flag
    of the place the agent is at, ``open[at]``): its code reads that leaf (`_keyed`)."""

    leaf: Path

    def __new__(cls, leaf: Path) -> KeyOf:
        key = super().__new__(cls, "[" + ".".join(leaf) + "]")
        key.leaf = leaf
        return key

    def __repr__(self) -> str:
        return _get_code(self.leaf)


def _get_code(path: Path, name: str = "state") -> str:
    parts = _parts(path)
    if parts is not None:
        return "[" + ", ".join(_get_code(p, name) for p in parts) + "]"
    return f"_get({name}, {_path_code(path)})" if path else name


def _joints(befores: list[dict], afters: list[dict], actions: list[int], kinds: dict[Path, str]
            ) -> list[Path]:
    """The joint leaves: the numbers of one dict that one action changes (in one step or in
    different ones), such as a position kept as "x" and "y" that a move forward changes, with
    their siblings that the things on cells also have (`_placed`)."""
    changed: dict[tuple[int, Path], set[str]] = defaultdict(set)
    for before, after, action in zip(befores, afters, actions):
        for path, value in after.items():
            if path and kinds.get(path) == "number" and before.get(path) != value:
                changed[(action, path[:-1])].add(path[-1])
    groups = {(parent, tuple(sorted(keys | _placed(parent, keys, befores, kinds))))
              for (_, parent), keys in changed.items()}
    return sorted(parent + (JOINT + JOINT.join(keys),) for parent, keys in groups if len(keys) > 1)


def _placed(parent: Path, keys: set[str], rows: list[dict], kinds: dict[Path, str]) -> set[str]:
    """The number keys of ``parent`` that are, with ``keys``, the number keys of every element
    of a list of dicts (things on cells): a position the data shows moving along one axis only
    (an "x" that changed while "y" did not yet) is still read as a position."""
    numbers = {p[-1] for p, k in kinds.items() if k == "number" and p[:-1] == parent}
    out: set[str] = set()
    for path, kind in kinds.items():
        items = [item for r in rows for item in (r.get(path) or [])] if kind == "collection" else []
        if not items or not all(isinstance(item, dict) for item in items):
            continue
        placed = set.intersection(*({k for k, v in item.items() if _number(v)} for item in items))
        if keys <= placed & numbers:
            out |= placed & numbers
    return out


def _with_joints(leaves: dict[Path, Any], joints: list[Path]) -> dict[Path, Any]:
    out = dict(leaves)
    for joint in joints:
        out[joint] = [leaves.get(p) for p in _parts(joint)]
    return out


def _literal(value: Any) -> str:
    return repr(value)


# --------------------------------------------------------------- the generated program's helpers

# what the rule model's ``reward`` says where no recorded step completed the mission: the
# first line of it before any step got reward, and the last where other missions' did
_UNREWARDED = "no recorded step has completed"
NO_REWARD_YET = f"    # {_UNREWARDED} a mission yet\n"
NO_REWARD_HERE = f"    # {_UNREWARDED} any other mission yet\n"


def written_reward(program: str) -> bool:
    """Whether a program's ``reward`` is not one of the rule model's that leave a mission without
    reward (the LLM wrote it)."""
    return f"# {_UNREWARDED} " not in _function(program, "reward")


HELPERS = '''\
import copy
import marshal


def _copy(state):
    """A deep copy of a state of plain values (in C; each list and dict its own)."""
    try:
        return marshal.loads(marshal.dumps(state, 2))
    except ValueError:
        return copy.deepcopy(state)


def _get(state, *path):
    """The value at a path of keys; None where the state has no such key."""
    for key in path:
        if not isinstance(state, dict) or key not in state:
            return None
        state = state[key]
    return state


def _put(state, value, *path):
    """Set the value at a path of keys the state has."""
    for key in path[:-1]:
        if not isinstance(state, dict) or key not in state:
            return
        state = state[key]
    if isinstance(state, dict) and path[-1] in state:
        state[path[-1]] = value


def _put_each(state, values, paths):
    """Set each path of keys to the value in the same place of ``values`` (nothing with None:
    a heading whose step the data has not shown yet moves nothing, not an error)."""
    for value, path in zip(values or (), paths):
        _put(state, value, *path)


def _add(a, b):
    """A number plus a number, or a vector plus a vector (lists of numbers)."""
    if isinstance(a, list) and isinstance(b, list):
        return [x + y for x, y in zip(a, b)]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    return None


def _in(item, items):
    return isinstance(items, list) and item in items


def _same(a, b):
    """Equal, with lists of cells or objects compared in any order."""
    if (isinstance(a, list) and isinstance(b, list)
            and all(isinstance(x, (list, dict)) for x in a + b)):
        return sorted(map(repr, a)) == sorted(map(repr, b))
    return a == b


def _without(items, item):
    out = list(items or [])
    if item in out:
        out.remove(item)
    return out


def _with(items, item):
    return list(items or []) + [item]


def _moved(items, item, delta):
    return [_add(x, delta) if x == item else x for x in (items or [])]


def _ahead(position, table, key):
    """The cell ``table[key]`` away from ``position`` (None where the table has no such key)."""
    step = table.get(key)
    return None if step is None else _add(position, step)


def _on(item, keys, cell):
    return (isinstance(item, dict) and cell is not None
            and [item.get(k) for k in keys] == list(cell))


def _at(items, keys, cell):
    """The element of ``items`` (dicts) that stands on ``cell`` (its values at ``keys``)."""
    return next((item for item in items or [] if _on(item, keys, cell)), None)


def _bare(item, keys):
    """An element without its position (what leaves the grid when it is picked up)."""
    return None if not isinstance(item, dict) else {k: v for k, v in item.items() if k not in keys}


def _changed_at(items, keys, cell, sets, flips):
    """``items`` with the element on ``cell`` given the values ``sets`` and its booleans at
    ``flips`` negated."""
    return [{**item, **sets, **{k: not item.get(k) for k in flips}} if _on(item, keys, cell)
            else item for item in items or []]


def _put_down(items, item, keys, cell):
    """``items`` with ``item`` (a dict) added, standing on ``cell`` (unchanged without one)."""
    if not isinstance(item, dict) or cell is None:
        return list(items or [])
    return list(items or []) + [{**item, **dict(zip(keys, cell))}]


def _eq(a, b):
    return a is not None and a == b


def _names(state, text):
    """Whether ``text`` is a key or a value anywhere in the state."""
    if isinstance(state, dict):
        return any(k == text or _names(v, text) for k, v in state.items())
    if isinstance(state, list):
        return any(_names(v, text) for v in state)
    return state == text
'''

# the helpers, run here too: what a change or a feature computes is what its code computes
_HELP: dict[str, Any] = {}
exec(compile(HELPERS, "<rule model helpers>", "exec"), _HELP)  # noqa: S102 - our own code


# ------------------------------------------------------------------- headings and cells in front


@dataclass(frozen=True)
class Pointer:
    """A cell the state points at: a position plus the step a table keyed by another leaf gives
    (the cell in front of the agent: where "forward" would take it), learned from the data."""

    position: Path
    key: Path
    table: tuple[tuple[Any, Any], ...]  # (value of the key leaf, step), sorted

    def code(self, name: str = "state") -> str:
        table = "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in self.table) + "}"
        return f"_ahead({_get_code(self.position, name)}, {table}, {_get_code(self.key, name)})"

    def __call__(self, leaves: dict) -> Any:
        return _HELP["_ahead"](leaves.get(self.position), dict(self.table), leaves.get(self.key))


@dataclass(frozen=True)
class Located:
    """A list of dicts whose elements stand on cells: the keys of an element's position."""

    path: Path
    keys: tuple[str, ...]

    def at_code(self, pointer: Pointer, name: str = "state") -> str:
        return f"_at({_get_code(self.path, name)}, {self.keys!r}, {pointer.code(name)})"

    def at(self, leaves: dict, pointer: Pointer) -> Any:
        return _HELP["_at"](leaves.get(self.path), self.keys, pointer(leaves))


@dataclass(frozen=True)
class Space:
    """What the data shows of cells: the pointers (cells in front) and the lists of dicts on
    cells (`headings`, `located`)."""

    pointers: tuple[Pointer, ...] = ()
    located: tuple[Located, ...] = ()


def headings(befores: list[dict], afters: list[dict], kinds: dict[Path, str]) -> list[Pointer]:
    """The vectors that every change of theirs moves by a step a number leaf determines (a
    position moved by the step of its direction): over every action's rows, each value of the
    number leaf goes with one step, and at least two steps differ."""
    out = []
    numbers = [p for p, k in sorted(kinds.items()) if k == "number"]
    for position, kind in sorted(kinds.items()):
        if kind != "vector":
            continue
        parts = _parts(position) or []
        for key in numbers:
            if key in parts:
                continue
            table: dict[Any, Any] = {}
            for before, after in zip(befores, afters):
                step = _sub(after.get(position), before.get(position))
                if step is None or not any(step):
                    continue
                value = before.get(key)
                if table.setdefault(value, step) != step:
                    table = {}
                    break
            if len({_key(v) for v in table.values()}) >= 2 and None not in table:
                out.append(Pointer(position, key, tuple(sorted(table.items()))))
    return out


def touched_steps(befores: list[dict], afters: list[dict], pointers: list[Pointer],
                  where: list[Located]) -> list[Pointer]:
    """The pointers with the steps of directions never moved in, read off the cell an action
    touched: where, facing such a direction, a step changed the elements of a list of dicts on
    one cell only (picked one up, put one down, opened it), that cell less the position is the
    direction's step, where every such step for that direction agrees, has the size of the
    steps moved (the sum of their sizes along each axis) and is no other direction's. A door
    is opened facing where the agent could never go before it was open."""
    out = []
    for pointer in pointers:
        table = dict(pointer.table)
        sizes = {sum(abs(v) for v in step) for step in table.values()}
        known = {_key(k) for k in table}
        found: dict[Any, list] = {}
        for before, after in zip(befores, afters) if len(sizes) == 1 else ():
            value, position = before.get(pointer.key), before.get(pointer.position)
            if value is None or _key(value) in known or not _is_vector(position):
                continue
            cells = set()
            for w in where:
                if before.get(w.path) == after.get(w.path):
                    continue
                old = {_key(_canon(i)): i for i in before.get(w.path) or [] if isinstance(i, dict)}
                new = {_key(_canon(i)): i for i in after.get(w.path) or [] if isinstance(i, dict)}
                cells |= {_key([item.get(k) for k in w.keys])
                          for k, item in (*old.items(), *new.items()) if (k in old) != (k in new)}
            if len(cells) == 1:
                found.setdefault(value, []).append(_sub(json.loads(cells.pop()), position))
        for value, steps in found.items():
            step = steps[0]
            if (step is not None and all(s == step for s in steps)
                    and sum(abs(v) for v in step) in sizes and step not in table.values()):
                table[value] = step
        out.append(Pointer(pointer.position, pointer.key, tuple(sorted(table.items())))
                   if len(table) > len(pointer.table) else pointer)
    return out


def located(rows: list[dict], kinds: dict[Path, str], pointers: list[Pointer]) -> list[Located]:
    """The lists of dicts whose every element has a number at each key of a pointer's position
    (``x`` and ``y`` of the agent's joint position: the elements' ``x`` and ``y``)."""
    out = []
    for path, kind in sorted(kinds.items()):
        if kind != "collection":
            continue
        items = [item for r in rows for item in (r.get(path) or [])]
        if not items or not all(isinstance(item, dict) for item in items):
            continue
        for keys in dict.fromkeys(tuple(p[-1] for p in _parts(q.position) or [q.position])
                                  for q in pointers):
            if all(all(_number(item.get(k)) for k in keys) for item in items):
                out.append(Located(path, keys))
    return out


def _space_features(rows: list[dict], kinds: dict[Path, str], name: str, space: Space
                    ) -> list[Feature]:
    """Tests on the cells in front: in a list of cells; holding an element of a list of dicts;
    that element's fields' values, and their equality with a dict leaf's same field."""
    out = []
    dict_leaves = [p for p, k in sorted(kinds.items()) if k == "value"
                   and any(isinstance(r.get(p), dict) for r in rows)]
    for pointer in space.pointers:
        here = pointer.code(name)
        for c, kind in sorted(kinds.items()):
            if kind == "collection" and any(_is_vector(v) for r in rows for v in r.get(c) or []):
                out.append(Feature(f"_in({here}, {_get_code(c, name)})",
                                   lambda r, c=c, p=pointer: _in_list(p(r), r.get(c))))
        for where in space.located:
            at = where.at_code(pointer, name)
            out.append(Feature(f"{at} is not None",
                               lambda r, w=where, p=pointer: w.at(r, p) is not None))
            found = [w for w in (where.at(r, pointer) for r in rows) if isinstance(w, dict)]
            fields = sorted({f for item in found for f in item} - set(where.keys))
            for f in fields:
                values = {_key(item.get(f)): item.get(f) for item in found}
                if len(values) <= MAX_VALUES:
                    for text, value in sorted(values.items()):
                        out.append(Feature(
                            f"_get({at}, {f!r}) == {_literal(value)}",
                            lambda r, w=where, p=pointer, f=f, t=text:
                                _key(_HELP["_get"](w.at(r, p), f)) == t))
                for leaf in dict_leaves:
                    out.append(Feature(
                        f"_eq(_get({at}, {f!r}), _get({_get_code(leaf, name)}, {f!r}))",
                        lambda r, w=where, p=pointer, f=f, leaf=leaf: _HELP["_eq"](
                            _HELP["_get"](w.at(r, p), f), _HELP["_get"](r.get(leaf), f)), 2))
    return out


# ---------------------------------------------------------------------------------- features


@dataclass(frozen=True)
class Feature:
    """A test on a state: its code (an expression over ``state``) and how to compute it here."""

    code: str
    test: Callable[[dict], bool]
    # how much the test reads and combines: 1 for one leaf's value or what the action touches
    # (the cell it moves into, the cell in front), more for relations of several leaves; a
    # decision list in tests of a lower cost is tried first (`decision_list`)
    cost: int = 1

    def __call__(self, leaves: dict) -> bool:
        try:
            return bool(self.test(leaves))
        except Exception:  # noqa: BLE001 - a feature that cannot be computed is false
            return False


def _value_features(rows: list[dict], kinds: dict[Path, str], name: str, vectors: bool
                    ) -> list[Feature]:
    out = []
    for path, kind in sorted(kinds.items()):
        if kind == "collection" or (kind == "vector" and not vectors):
            continue
        values = {_key(r.get(path)): r.get(path) for r in rows}
        if len(values) < 2 or len(values) > MAX_VALUES:
            continue
        for text, value in sorted(values.items()):
            # a position's value (the agent on one cell) is tried after the relations: a
            # success seen on one layout is the boxes on their targets, not where the agent stood
            out.append(Feature(f"{_get_code(path, name)} == {_literal(value)}",
                               lambda r, p=path, t=text: _key(r.get(p)) == t,
                               3 if kind == "vector" else 1))
    return out


def _entry_of(keyed: Path, path: Path) -> bool:
    """Whether ``path`` is one of the entries a `_keyed` path reads (``open.well 1`` of
    ``open[at]``): their equality is where the agent is, not a relation."""
    i = next((i for i, k in enumerate(keyed) if isinstance(k, KeyOf)), None)
    return (i is not None and len(path) == len(keyed) and path[:i] == keyed[:i]
            and path[i + 1:] == keyed[i + 1:])


def _relational_features(rows: list[dict], kinds: dict[Path, str], name: str,
                         deltas: list[Any]) -> list[Feature]:
    out = []
    paths = sorted(kinds)
    # numbers are left out of the relations: small numbers match by chance (``x == dir``,
    # ``dir + height == width``); positions and moves are vectors (a joint leaf for "x" and "y")
    related = [p for p in paths if kinds[p] != "number"]
    # the equality of two leaves of one kind (lists compared as sets)
    for i, a in enumerate(related):
        for b in related[i + 1:]:
            if kinds[a] != kinds[b] or _entry_of(a, b) or _entry_of(b, a):
                continue
            out.append(Feature(f"_same({_get_code(a, name)}, {_get_code(b, name)})",
                               lambda r, a=a, b=b: _canon(r.get(a)) == _canon(r.get(b)), 2))
    # a leaf plus another leaf equal to a third (numbers, or vectors)
    numeric = [p for p in related if kinds[p] == "vector"]
    if len(numeric) <= 8:
        for a in numeric:
            for b in numeric:
                for c in numeric:
                    if a <= b and len({a, b, c}) == 3 and kinds[a] == kinds[b] == kinds[c]:
                        out.append(Feature(
                            f"_add({_get_code(a, name)}, {_get_code(b, name)}) == {_get_code(c, name)}",
                            lambda r, a=a, b=b, c=c: _add(r.get(a), r.get(b)) == r.get(c), 3))
    # a leaf (plus k times a vector the action moves things by) in a list: of the cost of one
    # leaf's value when the leaf is the cell the action moves into (k = 1), or where it stands
    collections = [p for p in paths if kinds[p] == "collection"]
    for c in collections:
        for a in paths:
            if a == c or kinds[a] == "collection":
                continue
            out.append(Feature(f"_in({_get_code(a, name)}, {_get_code(c, name)})",
                               lambda r, a=a, c=c: _in_list(r.get(a), r.get(c))))
            if kinds[a] not in ("vector", "number"):
                continue
            for d in deltas:
                for k in (1, 2):
                    step = _scale(k, d)
                    if not _fits(kinds[a], step):
                        continue
                    out.append(Feature(
                        f"_in(_add({_get_code(a, name)}, {_literal(step)}), {_get_code(c, name)})",
                        lambda r, a=a, c=c, s=step: _in_list(_add(r.get(a), s), r.get(c)), k))
    return out


def _fits(kind: str, step: Any) -> bool:
    """Whether a leaf of ``kind`` can be moved by ``step`` (a vector by a vector, a number by a
    number)."""
    return (kind == "vector") == isinstance(step, list)


def _features(rows: list[dict], kinds: dict[Path, str], name: str, deltas: list[Any],
              vectors: bool = True, space: Space = Space()) -> tuple[list[Feature], list[list[bool]]]:
    """The informative features of ``rows`` in the order ties are broken: the cells in front
    first, then relations, then one leaf's value (of a vector only with ``vectors``: a move's
    condition is where the walls are, not where the agent is)."""
    return _informative(_space_features(rows, kinds, name, space)
                        + _relational_features(rows, kinds, name, deltas)
                        + _value_features(rows, kinds, name, vectors), rows)


def _in_list(item: Any, items: Any) -> bool:
    return item is not None and isinstance(items, list) and item in items


def _keyed(rows: list[tuple[dict, dict]], changed: list[Path]) -> list[tuple[Path, list[Path]]]:
    """The leaves an action changes at a key that a leaf of the state before names: paths that
    differ in one key (``open.fridge 1``, ``open.drawer 1``), of which each step changed at most
    one, always the one at the key that one string leaf held (``at``). Each is learned as one
    leaf, read and written there (``open[at]``: opened where the agent is, a place it may never
    have opened), its path's key a `KeyOf`; returns (that path, the paths it stands for)."""
    groups: dict[tuple[Path, Path], list[Path]] = defaultdict(list)
    for path in changed:
        for j in range(1, len(path)):
            groups[(path[:j], path[j + 1:])].append(path)
    out = []
    used: set[Path] = set()
    for (prefix, suffix), members in sorted(groups.items()):
        if used & set(members):
            continue
        leaves: set[Path] | None = None
        for before, after in rows:
            moved = [m for m in members if _canon(after.get(m)) != _canon(before.get(m))]
            if len(moved) > 1:
                leaves = set()
                break
            if not moved:
                continue
            key = moved[0][len(prefix)]
            here = {p for p, v in before.items() if isinstance(v, str) and v == key}
            leaves = here if leaves is None else leaves & here
            if not leaves:
                break
        if leaves:
            out.append((prefix + (KeyOf(min(leaves)),) + suffix, members))
            used.update(members)
    return out


def _with_keyed(leaves: dict[Path, Any], before: dict[Path, Any], path: Path) -> dict[Path, Any]:
    """The leaves with a `_keyed` path's value added, its key read in ``before`` (None where the
    state has no such key)."""
    i, key = next((i, k) for i, k in enumerate(path) if isinstance(k, KeyOf))
    at = before.get(key.leaf)
    return {**leaves, path: leaves.get(path[:i] + (at,) + path[i + 1:])
            if isinstance(at, str) else None}


def _informative(features: list[Feature], rows: list[dict]) -> tuple[list[Feature], list[list[bool]]]:
    """The features that are true on some rows and false on others, and their values per row;
    of features with the same values on every row, the first (relational ones come first)."""
    kept, columns, seen = [], [], set()
    for f in features:
        column = [f(r) for r in rows]
        signature = tuple(column)
        if all(column) or not any(column) or signature in seen:
            continue
        seen.add(signature)
        kept.append(f)
        columns.append(column)
    return kept, columns


# ----------------------------------------------------------------------------- decision lists


@dataclass(frozen=True)
class Rule:
    """One line of a decision list: when every feature has its polarity, the label is ``label``."""

    literals: tuple[tuple[Feature, bool], ...]
    label: int

    def condition(self) -> str:
        return " and ".join(f.code if polarity else _not(f.code) for f, polarity in self.literals)

    def negated(self) -> str:
        """The condition's negation, as code."""
        if len(self.literals) == 1:
            f, polarity = self.literals[0]
            return _not(f.code) if polarity else f.code
        return f"not ({self.condition()})"


def _not(code: str) -> str:
    """A test's negation, as code (``x is None`` for ``x is not None``)."""
    if code.endswith(" is not None"):
        return code[:-len(" is not None")] + " is None"
    return f"not {code}"


def _pure_best(cover: np.ndarray, admits: np.ndarray, n_remaining: int,
               cost: np.ndarray | None = None) -> tuple[int, int] | None:
    """Of the rows of ``cover`` (candidate tests over the remaining rows), the one that takes
    the most rows that all admit one label (``admits``: row by label), but not all rows (of
    those, the one of the lowest ``cost``): (its index, its count); None if none."""
    counts = cover.sum(axis=1)
    agree = cover.astype(np.int64) @ admits.astype(np.int64)  # per test and label: rows admitting it
    pure = (agree == counts[:, None]).any(axis=1)
    ok = pure & (counts > 0) & (counts < n_remaining)
    if not ok.any():
        return None
    merit = counts * (1 + (0 if cost is None else int(cost.max()))) - (0 if cost is None else cost)
    index = int(np.argmax(np.where(ok, merit, np.iinfo(np.int64).min)))  # the first of the best
    return index, int(counts[index])


def _most_admitted(admits: np.ndarray) -> int:
    """The label (column) the most rows admit (the first on ties)."""
    return int(np.argmax(admits.sum(axis=0)))


# a learned list is checked on the rows it was not learned from in at most this many folds
FOLDS = 5

# a decision list over literals (indices into a literal array: feature i // 2, negated when odd):
# its rules (the literals of each, its label's column) and its default label's column
Literals = tuple[list[tuple[tuple[int, ...], int]], int]


def _greedy(admits: np.ndarray, literals: np.ndarray, cost: np.ndarray) -> Literals:
    """The greedy decision list of ``decision_list`` over ``literals`` (rows: a literal's value
    on each row) for rows that admit the labels ``admits`` says (row by label)."""
    remaining = np.ones(len(admits), dtype=bool)
    rules: list[tuple[tuple[int, ...], int]] = []
    while len(literals) and remaining.any() and len(rules) < MAX_RULES:
        left = admits[remaining]
        if left.all(axis=0).any():  # one label every row left admits: the default
            break
        rows = literals[:, remaining]
        best = _pure_best(rows, left, len(left), cost)
        chosen: tuple[int, ...] = ()
        if best is not None:
            chosen = (best[0],)
        else:
            taken = 0
            for i in range(len(rows) - 1):
                pair = _pure_best(rows[i] & rows[i + 1:], left, len(left))
                if pair is not None and pair[1] > taken and i // 2 != (i + 1 + pair[0]) // 2:
                    chosen, taken = (i, i + 1 + pair[0]), pair[1]
        if not chosen:
            break
        mask = np.logical_and.reduce([literals[i] for i in chosen]) & remaining
        label = int(np.argmax(admits[mask].all(axis=0)))  # the first all its rows admit
        rules.append((chosen, label))
        remaining &= ~mask
    default = _most_admitted(admits[remaining] if remaining.any() else admits)
    return rules, default


def _predict(rules: Literals, literals: np.ndarray) -> np.ndarray:
    """Each row's label under a decision list (``literals``: a literal's value on each row)."""
    listed, default = rules
    out = np.full(literals.shape[1], default)
    free = np.ones(literals.shape[1], dtype=bool)
    for chosen, label in listed:
        hit = np.logical_and.reduce([literals[i] for i in chosen]) & free
        out[hit] = label
        free &= ~hit
    return out


def _right(rules: Literals, literals: np.ndarray, admits: np.ndarray) -> int:
    """The rows whose labels admit the one a decision list gives them."""
    return int(admits[np.arange(len(admits)), _predict(rules, literals)].sum())


def _held_out_right(admits: np.ndarray, literals: np.ndarray, cost: np.ndarray) -> int:
    """The rows a greedy list over ``literals`` gets right when learned without them (`FOLDS`
    folds, fixed by position): how well a list learned from these tests carries to transitions
    it was not learned on, from the training transitions alone."""
    folds = min(FOLDS, len(admits))
    fold = np.arange(len(admits)) % folds
    right = 0
    for k in range(folds):
        fit, test = fold != k, fold == k
        rules = _greedy(admits[fit], literals[:, fit], cost)
        right += _right(rules, literals[:, test], admits[test])
    return right


def decision_list(labels: list[int] | list[set[int]], features: list[Feature],
                  columns: list[list[bool]]) -> tuple[list[Rule], int]:
    """A decision list that gives each row its label (or one of its labels, where a row has a
    set of them: any of them is right there): rules in order, then a default.

    Greedy: among the rows no earlier rule took, the literal (a feature or its negation) whose
    rows all admit one label and that takes the most of them (of the lowest cost, then the first
    in `features`' order on ties); where no literal is pure, the pure conjunction of two literals
    that takes the most; a rule gives the first label (in their order) all its rows admit. When
    none is pure, or after `MAX_RULES`, the rest get the label most of them admit.

    The list is learned over the features of cost at most 1, then 2, and so on (the plain tests
    and what the action touches first, relations of several leaves after), and the one kept is
    the one right on the most rows when they are left out of its learning (`_held_out_right`),
    then right on the most rows, then of the lowest cost: a condition that merely happens to fit
    a few recorded transitions does not carry to the others.
    """
    sets = [row if isinstance(row, set) else {row} for row in labels]
    classes = sorted(set().union(*sets)) if sets else [0]
    admits = np.array([[c in row for c in classes] for row in sets], dtype=bool).reshape(
        len(sets), len(classes))
    x = np.array(columns, dtype=bool).reshape(len(features), len(sets))
    literals = np.empty((2 * len(features), len(sets)), dtype=bool)
    literals[0::2], literals[1::2] = x, ~x  # literal i: feature i // 2, negated for odd i
    cost = np.repeat([f.cost for f in features], 2).astype(int)
    best: tuple[tuple[int, int, int], Literals, np.ndarray] | None = None
    bounds = sorted(set(cost.tolist()))
    for bound in bounds:
        index = np.flatnonzero(cost <= bound)
        rules = _greedy(admits, literals[index], cost[index])
        if len(bounds) == 1:  # one set of features: nothing to choose
            best = ((0, 0, 0), rules, index)
            break
        merit = (_held_out_right(admits, literals[index], cost[index]),
                 _right(rules, literals[index], admits), -bound)
        if best is None or merit > best[0]:
            best = (merit, rules, index)
    if best is None:  # no features
        return [], classes[_greedy(admits, literals, cost)[1]]
    _, (listed, default), index = best
    return [Rule(tuple((features[index[i] // 2], index[i] % 2 == 0) for i in chosen),
                 classes[label]) for chosen, label in listed], classes[default]


# ---------------------------------------------------------------------------------- changes


@dataclass(frozen=True)
class Change:
    """How one leaf's new value is made from the state before: its code and its value here."""

    code: str  # an expression over ``state`` ("" for "keep": nothing is written)
    compute: Callable[[dict], Any]
    rank: int  # simpler changes first on ties
    # a value written whatever the state (set to a constant): that it equals a value the leaf
    # already had is a coincidence of where the data was, not the change doing nothing
    constant: bool = False

    def __call__(self, leaves: dict) -> Any:
        try:
            return self.compute(leaves)
        except Exception:  # noqa: BLE001
            return _NOTHING


_NOTHING = object()  # a change that does not apply to a row


def _keep(path: Path) -> Change:
    return Change("", lambda r: r.get(path), 0)


def _candidates(path: Path, kind: str, rows: list[tuple[dict, Any]], kinds: dict[Path, str],
                deltas: list[Any], space: Space = Space()) -> list[Change]:
    """The changes of ``path`` that explain at least one row where it changed."""
    out: dict[str, Change] = {}
    here = _get_code(path)
    others = [p for p in sorted(kinds) if p != path]
    for before, after in rows:
        old = before.get(path)
        if _canon(old) == _canon(after):
            continue
        # a vector (a position) that one step took from one cell to another was as likely moved
        # as set there: of the two, the move is tried first; a whole list set to a constant
        # (every box at fixed cells) is tried after any change of one of its elements
        out.setdefault(f"set {_key(after)}", Change(_literal(after), lambda r, v=after: v,
                                                    {"vector": 3, "collection": 5}.get(kind, 1),
                                                    True))
        for other in others:
            if _canon(before.get(other)) == _canon(after):
                out.setdefault(f"copy {other}", Change(_get_code(other),
                                                       lambda r, o=other: r.get(o), 2))
        if isinstance(old, bool) and after is (not old):
            out.setdefault("negate", Change(f"not {here}", lambda r: not r.get(path), 2))
        delta = _sub(after, old) if kind in ("number", "vector") else None
        if delta is not None:
            out.setdefault(f"add {_key(delta)}", Change(f"_add({here}, {_literal(delta)})",
                                                        lambda r, d=delta: _add(r.get(path), d), 2))
            for other in others:
                if kinds[other] == kind and before.get(other) == delta:
                    out.setdefault(f"add {other}", Change(
                        f"_add({here}, {_get_code(other)})",
                        lambda r, o=other: _add(r.get(path), r.get(o)), 3))
        if kind == "collection" and isinstance(old, list) and isinstance(after, list):
            for key, change in _collection_changes(path, old, after, before, kinds, deltas):
                out.setdefault(key, change)
        for key, change in _space_changes(path, old, after, before, space):
            out.setdefault(key, change)
    return list(out.values())


def _space_changes(path: Path, old: Any, new: Any, before: dict, space: Space):
    """The changes through the cells in front: a position moved to its cell in front; a list of
    dicts without the element there, or with some of its fields changed, or with a dict leaf
    put down there; a leaf that becomes that element without its position (picked up)."""
    for pointer in space.pointers:
        if pointer.position == path and _canon(pointer(before)) == _canon(new):
            # where the table has no step for the key, the program writes nothing (`_put_each`)
            yield f"ahead {pointer.code()}", Change(pointer.code(), lambda r, p=pointer: (
                r.get(path) if p(r) is None else p(r)), 2)
        for where in space.located:
            item = where.at(before, pointer)
            if not isinstance(item, dict):
                if where.path == path and isinstance(new, list):
                    yield from _put_downs(path, old, new, before, pointer, where)
                continue
            at = where.at_code(pointer)
            if _canon(_HELP["_bare"](item, where.keys)) == _canon(new):
                yield f"bare {at}", Change(f"_bare({at}, {where.keys!r})",
                                           lambda r, w=where, p=pointer: _HELP["_bare"](
                                               w.at(r, p), w.keys), 3)
            if where.path != path or not isinstance(new, list):
                continue
            here = _get_code(path)
            rest = list(old)
            rest.remove(item)
            if _canon(rest) == _canon(new):
                yield f"remove {at}", Change(f"_without({here}, {at})",
                                             lambda r, w=where, p=pointer: _HELP["_without"](
                                                 r.get(w.path), w.at(r, p)), 3)
                continue
            added = [x for x in new if isinstance(x, dict) and _HELP["_on"](
                x, where.keys, pointer(before))]
            if len(added) != 1 or _canon(rest + added) != _canon(new):
                continue
            fields = sorted(f for f in set(item) | set(added[0]) if item.get(f) != added[0].get(f))
            flippable = [f for f in fields if isinstance(item.get(f), bool)
                         and added[0].get(f) is (not item.get(f))]
            for n in range(len(flippable) + 1):
                for flips in itertools.combinations(flippable, n):
                    sets = {f: added[0].get(f) for f in fields if f not in flips}
                    yield (f"change {at} {_key(sets)} {_key(flips)}", Change(
                        f"_changed_at({here}, {where.keys!r}, {pointer.code()}, {sets!r}, "
                        f"{list(flips)!r})",
                        lambda r, w=where, p=pointer, sets=sets, flips=list(flips):
                            _HELP["_changed_at"](r.get(w.path), w.keys, p(r), sets, flips), 3))


def _put_downs(path: Path, old: Any, new: list, before: dict, pointer: Pointer, where: Located):
    """A dict leaf (what is carried) put down on the empty cell in front."""
    cell = pointer(before)
    for leaf, value in sorted(before.items()):
        if (leaf != path and isinstance(value, dict)
                and _canon(_HELP["_put_down"](old, value, where.keys, cell)) == _canon(new)):
            yield f"put down {leaf}", Change(
                f"_put_down({_get_code(path)}, {_get_code(leaf)}, {where.keys!r}, "
                f"{pointer.code()})",
                lambda r, w=where, p=pointer, leaf=leaf: _HELP["_put_down"](
                    r.get(w.path), r.get(leaf), w.keys, p(r)), 3)


def _collection_changes(path: Path, old: list, new: list, before: dict, kinds: dict[Path, str],
                        deltas: list[Any]):
    """Removing, inserting or moving one element that a leaf (plus a multiple of a vector the
    action moves things by) names."""
    a, b = Counter(_key(v) for v in old), Counter(_key(v) for v in new)
    gone = [json.loads(k) for k in (a - b).elements()]
    added = [json.loads(k) for k in (b - a).elements()]
    here = _get_code(path)
    pointers = []  # (code, compute, value here) of the expressions that can name an element
    for other in sorted(kinds):
        if other == path or kinds[other] == "collection":
            continue
        pointers.append((_get_code(other), lambda r, o=other: r.get(o), before.get(other)))
        if kinds[other] in ("vector", "number"):
            for d in deltas:
                for k in (1, 2):
                    step = _scale(k, d)
                    value = _add(before.get(other), step)
                    if value is not None:
                        pointers.append((f"_add({_get_code(other)}, {_literal(step)})",
                                         lambda r, o=other, s=step: _add(r.get(o), s), value))
    if len(gone) == 1 and not added:
        for code, compute, value in pointers:
            if value == gone[0]:
                yield f"remove {code}", Change(f"_without({here}, {code})",
                                               lambda r, c=compute: _remove(r.get(path), c(r)), 4)
    if len(added) == 1 and not gone:
        for code, compute, value in pointers:
            if value == added[0]:
                yield f"insert {code}", Change(f"_with({here}, {code})",
                                               lambda r, c=compute: list(r.get(path) or []) + [c(r)], 4)
    if len(gone) == 1 and len(added) == 1:
        delta = _sub(added[0], gone[0])
        if delta is not None:
            for code, compute, value in pointers:
                if value == gone[0]:
                    yield f"move {code} {_key(delta)}", Change(
                        f"_moved({here}, {code}, {_literal(delta)})",
                        lambda r, c=compute, d=delta: [_add(x, d) if x == c(r) else x
                                                       for x in (r.get(path) or [])], 4)


def _remove(items: Any, item: Any) -> list:
    out = list(items or [])
    if item in out:
        out.remove(item)
    return out


@dataclass
class LeafRule:
    """What one action does to one leaf: changes under a decision list (label -1: keep)."""

    path: Path
    changes: list[Change]
    rules: list[Rule]
    default: int

    def _statement(self, label: int) -> str:
        if label < 0:
            return "pass"
        parts = _parts(self.path)
        if parts is not None:
            where = ", ".join(f"({_path_code(p)},)" for p in parts)
            return f"_put_each(new, {self.changes[label].code}, [{where}])"
        return f"_put(new, {self.changes[label].code}, {_path_code(self.path)})"

    def code(self, indent: str) -> list[str]:
        parts = _parts(self.path)
        name = ".".join(self.path) if parts is None else " and ".join(".".join(p) for p in parts)
        lines = [f"{indent}# {name}"]
        if not self.rules:
            return lines + [f"{indent}{self._statement(self.default)}"] if self.default >= 0 else []
        if len(self.rules) == 1 and self.rules[0].label < 0 <= self.default:  # one write: its test
            return lines + [f"{indent}if {self.rules[0].negated()}:",
                            f"{indent}    {self._statement(self.default)}"]
        for i, rule in enumerate(self.rules):
            lines.append(f"{indent}{'if' if i == 0 else 'elif'} {rule.condition()}:")
            lines.append(f"{indent}    {self._statement(rule.label)}")
        if self.default >= 0:
            lines += [f"{indent}else:", f"{indent}    {self._statement(self.default)}"]
        return lines


def _cover(rows: list[tuple[dict, Any]], candidates: list[Change]
           ) -> tuple[list[Change], list[set[int]]]:
    """The fewest changes (greedy, most rows first) that explain every row, with
    ``candidates[0]`` (keep) where it explains a row; and each row's labels: the chosen changes
    that explain it (a row that two changes explain, such as a move that writes nothing where the
    data showed no step, may take either: the condition need not tell them apart)."""
    explains = [[_canon(c(before)) == _canon(after) if c(before) is not _NOTHING else False
                 for before, after in rows] for c in candidates]
    for c, change in enumerate(candidates):  # a constant explains only rows where it changed
        if change.constant:
            explains[c] = [e and not kept for e, kept in zip(explains[c], explains[0])]
    chosen: list[int] = []
    covered = [False] * len(rows)
    while not all(covered):
        best = max(range(len(candidates)), key=lambda c: (
            sum(1 for i, e in enumerate(explains[c]) if e and not covered[i]), -candidates[c].rank, -c))
        gain = [i for i, e in enumerate(explains[best]) if e and not covered[i]]
        if not gain:
            break
        chosen.append(best)
        for i in gain:
            covered[i] = True
    if 0 not in chosen and any(explains[0]):
        chosen.append(0)
    labels = [{k for k, c in enumerate(chosen) if explains[c][i]} or {-1} for i in range(len(rows))]
    return [candidates[c] for c in chosen], labels


# ----------------------------------------------------------------------------------- learning


@dataclass
class RuleModel:
    """A learned model: per action, the rules of each leaf it changes; the reward's rules.

    Attributes:
        transitions: action -> the leaf rules of that action, in the order of their paths.
        reward_changes: the (reward, done) pairs the reward's decision list picks from.
        reward_rules, reward_default: the reward's decision list (over the next state).
        n: the transitions it was learned from.
        reward_missions: where missions' successes differ (`_mission_rewards`), the reward's
            decision list per group of missions, ``(missions, rules, default)``, in place of the
            one list; a mission of none has no reward yet. Empty: the one list holds for all.
        space: the cells in front and the lists of dicts on cells the data shows (`Space`).
    """

    transitions: dict[int, list[LeafRule]]
    reward_changes: list[tuple[float, bool]]
    reward_rules: list[Rule]
    reward_default: int
    n: int
    space: Space = Space()
    # action -> (the action whose rules it takes, their code moved by its own vector): see
    # `_borrow`
    borrowed: dict[int, tuple[int, list[str]]] = field(default_factory=dict)
    # action -> (the action whose rules it takes, their code with its name's part): see
    # `_analogous`
    analogies: dict[int, tuple[int, list[str]]] = field(default_factory=dict)
    reward_missions: list[tuple[tuple[str, ...], list[Rule], int]] = field(default_factory=list)

    def rewards(self, mission: str) -> bool:
        """Whether ``reward`` gives ``mission`` a learned rule (else it says no step completes
        it)."""
        if self.reward_missions:
            return any(mission in missions for missions, _, _ in self.reward_missions)
        return bool(self.reward_changes)

    def transition_code(self) -> str:
        lines = ["def transition(state, action):",
                 f"    # learned from {self.n} recorded transitions: per action, each part of the",
                 "    # state it changed, how, and under which condition",
                 "    new = _copy(state)"]
        first = True
        for action in sorted(set(self.transitions) | set(self.analogies)):
            body = [line for rule in self.transitions.get(action, []) for line in rule.code(" " * 8)]
            if action in self.borrowed:
                source, body = self.borrowed[action]
                body = [f"        # as action {source} does, by this action's own step"] + body
            elif action in self.analogies:
                source, body = self.analogies[action]
                body = [f"        # as action {source} does, on what this action's name names"] + body
            if not body:
                continue
            lines.append(f"    {'if' if first else 'elif'} action == {action}:")
            lines += body
            first = False
        lines.append("    return new")
        return "\n".join(lines) + "\n"

    def reward_code(self) -> str:
        lines = ["def reward(state, action, next_state, mission):"]
        if not self.reward_changes:
            lines += [NO_REWARD_YET.rstrip("\n"),
                      "    return 0.0, False"]
            return "\n".join(lines) + "\n"

        def result(label: int) -> str:
            value, done = self.reward_changes[label]
            return f"return {float(value)!r}, {bool(done)!r}"

        def listed(rules: list[Rule], default: int, indent: str) -> list[str]:
            out = []
            for i, rule in enumerate(rules):
                out.append(f"{indent}{'if' if i == 0 else 'elif'} {rule.condition()}:")
                out.append(f"{indent}    {result(rule.label)}")
            return out + [f"{indent}{result(default)}"]

        if not self.reward_missions:
            return "\n".join(lines + listed(self.reward_rules, self.reward_default, "    ")) + "\n"
        lines.append("    # learned per mission: the recorded successes of one contradict another's")
        for missions, rules, default in self.reward_missions:
            test = (f"mission == {missions[0]!r}" if len(missions) == 1
                    else f"mission in {tuple(missions)!r}")
            lines += [f"    if {test}:"] + listed(rules, default, "        ")
        lines += [NO_REWARD_HERE.rstrip("\n"), "    return 0.0, False"]
        return "\n".join(lines) + "\n"

    def program(self) -> str:
        """The whole program: helpers, ``transition``, ``reward``."""
        return f"{HELPERS}\n\n{self.transition_code()}\n\n{self.reward_code()}"


def _deltas(rows: list[tuple[dict, dict]], kinds: dict[Path, str]) -> list[Any]:
    """The vectors (and numbers) by which the action moved vector (and number) leaves."""
    found: dict[str, Any] = {}
    for before, after in rows:
        for path, kind in kinds.items():
            if kind != "vector":
                continue
            d = _sub(after.get(path), before.get(path))
            if d is not None and any(d):
                found.setdefault(_key(d), d)
    return [found[k] for k in sorted(found)][:4]


def _kinds(rows: list[dict]) -> dict[Path, str]:
    values: dict[Path, list[Any]] = defaultdict(list)
    for leaves in rows:
        for path, value in leaves.items():
            values[path].append(value)
    return {path: _kind(vs) for path, vs in values.items()}


def learn_rules(transitions: list[dict], borrow: bool = True,
                names: tuple[str, ...] = (), keyed: bool = True) -> RuleModel:
    """Learn the rule model of ``transitions`` (see the module docstring); with ``borrow``, an
    action may take the rules of another that moves things by another vector (`_borrow`), and,
    given the actions' ``names``, those of an action whose name differs in one part
    (`_analogous`); with ``keyed``, a leaf changed at a key that a leaf of the state names is
    learned there (`_keyed`)."""
    every = leaves_of([t["state"] for t in transitions] + [t["next_state"] for t in transitions])
    befores, afters = every[:len(transitions)], every[len(transitions):]
    kinds = _kinds(befores + afters)
    joints = _joints(befores, afters, [int(t["action"]) for t in transitions], kinds)
    if joints:
        befores = [_with_joints(b, joints) for b in befores]
        afters = [_with_joints(a, joints) for a in afters]
        kinds = _kinds(befores + afters)
    joined = {p for joint in joints for p in _parts(joint)}
    pointers = headings(befores, afters, kinds)
    where = located(befores + afters, kinds, pointers)
    space = Space(tuple(touched_steps(befores, afters, pointers, where)), tuple(where))
    by_action: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(transitions):
        by_action[int(t["action"])].append(i)
    # leaves read at the key a leaf names (``open[at]``: whether the place the agent is at is
    # open), learned from every action's changes: conditions of the actions that only read them
    reads = (_keyed(list(zip(befores, afters)), sorted(
        {p for b, a in zip(befores, afters) for p in set(a) | set(b)
         if _canon(a.get(p)) != _canon(b.get(p)) and p not in joined})) if keyed else [])
    model: dict[int, list[LeafRule]] = {}
    steps: dict[int, list[Any]] = {}
    for action, index in sorted(by_action.items()):
        rows = [(befores[i], afters[i]) for i in index]
        deltas = _deltas(rows, kinds)
        steps[action] = deltas
        changed = sorted({p for b, a in rows for p in set(a) | set(b)
                          if _canon(a.get(p)) != _canon(b.get(p))})
        # a number of a joint leaf is learned with the joint (one write of both numbers)
        changed = [p for p in changed if p not in joined or not any(
            j in changed and p in _parts(j) for j in joints)]
        if not changed:
            continue
        here = kinds
        if keyed:
            for path, members in _keyed(rows, changed):
                rows = [(_with_keyed(b, b, path), _with_keyed(a, b, path)) for b, a in rows]
                here = {**here, path: _kind([b[path] for b, _ in rows] + [a[path] for _, a in rows])}
                changed = [p for p in changed if p not in members] + [path]
            for path, _ in reads:
                if path not in here:
                    rows = [(_with_keyed(b, b, path), a) for b, a in rows]
                    here = {**here, path: _kind([b[path] for b, _ in rows])}
        before_rows = [b for b, _ in rows]
        features, columns = _features(before_rows, here, "state", deltas, vectors=False,
                                      space=space)
        leaf_rules = []
        for path in changed:
            pairs = [(b, a.get(path)) for b, a in rows]
            candidates = [_keep(path)] + _candidates(path, here[path], pairs, here, deltas, space)
            chosen, labels = _cover(pairs, candidates)
            # label the keep change -1 (nothing written), the others by their index without it
            keep = next((k for k, c in enumerate(chosen) if c.code == ""), None)
            writes = [c for c in chosen if c.code != ""]
            relabel = {k: (-1 if k == keep else writes.index(c))
                       for k, c in enumerate(chosen)}
            labels = [{relabel.get(label, -1) for label in row} for row in labels]
            rules, default = decision_list(labels, features, columns)
            leaf_rules.append(LeafRule(path, writes, rules, default))
        model[action] = leaf_rules
    reward_changes, reward_rules, reward_default, reward_missions = _learn_reward(
        transitions, afters, kinds)
    borrowed = _borrow(model, steps, transitions, by_action) if borrow else {}
    analogies = (_analogous(model, names, transitions, by_action, set(borrowed))
                 if borrow and names else {})
    return RuleModel(model, reward_changes, reward_rules, reward_default, len(transitions), space,
                     borrowed, analogies, reward_missions)


def _moved_by(lines: list[str], old: Any, new: Any) -> list[str]:
    """Code lines with each multiple (1, 2) of the vector ``old`` written as that of ``new``."""
    marks = {_literal(_scale(k, old)): f"\0{k}\0" for k in (1, 2)}
    out = []
    for line in lines:
        for text, mark in marks.items():
            line = line.replace(text, mark)
        for k in (1, 2):
            line = line.replace(f"\0{k}\0", _literal(_scale(k, new)))
        out.append(line)
    return out


def _right_on(body: list[str], action: int, transitions: list[dict]) -> int:
    """How many of ``transitions`` (of ``action``) a transition of that body gets right."""
    code = ("def transition(state, action):\n    new = _copy(state)\n"
            + "\n".join(line[4:] for line in body) + "\n    return new\n")
    space: dict[str, Any] = {}
    try:
        exec(compile(HELPERS + "\n\n" + code, "<rule model>", "exec"), space)  # noqa: S102 - our own code
    except SyntaxError:
        return -1
    right = 0
    for t in transitions:
        try:
            right += _canon(space["transition"](copy.deepcopy(t["state"]), action)) == _canon(
                t["next_state"])
        except Exception:  # noqa: BLE001 - a rule that fails on a state is wrong there
            pass
    return right


def _body(model: dict[int, list[LeafRule]], action: int) -> list[str]:
    """The code of one action's rules, as `RuleModel.transition_code` indents it."""
    return [line for rule in model[action] for line in rule.code(" " * 8)]


def _takers(actions: list[int], carried: dict[tuple[int, int], list[str]],
            right: dict[tuple[int, int], int], own: dict[int, int], total: dict[int, int],
            learned: set[int]) -> dict[int, tuple[int, list[str]]]:
    """Which action takes whose rules, of those ``carried`` to it ((source, action) -> code):
    those right on the most of all their transitions (``total``), where they are right on at
    least as many of its own transitions (``right``) as its own rules (``own``), and, for an
    action with rules of its own (``learned``), on more of all than its own (on ties, its own)."""
    out: dict[int, tuple[int, list[str]]] = {}
    sources = sorted({source for source, _ in carried})
    for action in sorted(actions):
        best = None
        for source in sources:
            if source == action or (source, action) not in carried:
                continue
            if right[(source, action)] < max(own.get(action, 0), 0):
                continue
            if action in learned and total[source] <= total.get(action, own.get(action, 0)):
                continue
            if best is None or total[source] > total[best]:
                best = source
        if best is not None:
            out[action] = (best, carried[(best, action)])
    return out


def _borrow(model: dict[int, list[LeafRule]], steps: dict[int, list[Any]],
            transitions: list[dict], by_action: dict[int, list[int]]
            ) -> dict[int, tuple[int, list[str]]]:
    """Actions that take another action's rules, moved by their own vector.

    Where actions each move things by one vector of the same length (up and right: what they
    move, each by its own step), the rules one learned carry to another with its step and twice
    its step in place of the other's: a push that the data showed going up but never right, a
    wall that blocked a move left but never one right. Each action's rules are scored, moved to
    every such action, on all their transitions; an action takes the rules of the most right
    in all, where they are right on at least as many of its own transitions as its own rules
    (on ties, its own). Rules that read a heading (the step a table gives for a direction) are
    not moved.
    """
    single = {a: d[0] for a, d in steps.items()
              if a in model and len(d) == 1 and isinstance(d[0], list)}
    rows = {a: [transitions[i] for i in by_action[a]] for a in single}
    right: dict[tuple[int, int], int] = {}  # (whose rules, on whose transitions) -> rows right
    moved: dict[tuple[int, int], list[str]] = {}
    for source, other in single.items():
        lines = _body(model, source)
        if any("_ahead(" in line for line in lines):
            right.update({(source, a): -1 for a in single if a != source})
            right[(source, source)] = _right_on(lines, source, rows[source])
            continue
        for action, step in single.items():
            if action != source and len(step) != len(other):
                right[(source, action)] = -1
                continue
            moved[(source, action)] = lines if action == source else _moved_by(lines, other, step)
            right[(source, action)] = _right_on(moved[(source, action)], action, rows[action])
    total = {s: sum(max(right[(s, a)], 0) for a in single) for s in single}
    own = {a: right[(a, a)] for a in single}
    return _takers(list(single), moved, right, own, total, set(single))


def _name_span(a: str, b: str) -> tuple[str, str] | None:
    """What two action names that begin alike name, each (``("cabinet 1", "drawer 2")`` for
    "go to cabinet 1" and "go to drawer 2", ``("apple", "potato")`` for "take apple" and "take
    potato"): the words after the ones they share; None where they share no first word or one
    name is the other's beginning."""
    x, y = a.split(), b.split()
    head = 0
    while head < min(len(x), len(y)) and x[head] == y[head]:
        head += 1
    if head == 0 or head >= min(len(x), len(y)):
        return None
    return " ".join(x[head:]), " ".join(y[head:])


_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _renamed(lines: list[str], old: str, new: str) -> list[str] | None:
    """Code lines (of one action's body) with the word(s) ``old`` written as ``new`` inside
    their string literals (and comments), under a test that the state names every string so
    made (``_names``: a place or object the level lacks is not guessed at); None when no
    literal holds ``old``."""
    word = re.compile(rf"(?<![\w]){re.escape(old)}(?![\w])")
    made: list[str] = []

    def literal(match: re.Match) -> str:
        text, n = word.subn(new, match.group(0))
        if n and text not in made:
            made.append(text)
        return text

    out = []
    for line in lines:
        if line.lstrip().startswith("#"):
            out.append(word.sub(new, line))
        else:
            out.append(_LITERAL.sub(literal, line))
    if not made:
        return None
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    test = " and ".join(f"_names(state, {text})" for text in made)
    return [f"{indent}if {test}:"] + ["    " + line for line in out]


def _analogous(model: dict[int, list[LeafRule]], names: tuple[str, ...], transitions: list[dict],
               by_action: dict[int, list[int]], taken: set[int]
               ) -> dict[int, tuple[int, list[str]]]:
    """Actions that take the rules of an action whose name begins as theirs and names another
    thing.

    "take apple" and "take potato", "go to cabinet 1" and "go to drawer 1": the rules one learned,
    with what its name names written as the other's wherever a string in them holds it (the
    object "apple 1" becomes "potato 1", the place "cabinet 1" becomes "drawer 1"; `_name_span`),
    are a guess at the other's. Each learned action's rules are so carried to every action of the family
    (names that differ from it in one part) and scored on all their recorded transitions; an
    action takes those of the most right in all, where they are right on at least as many of its
    own transitions as its own rules (on ties, its own): "take potato", tried only where no
    potato was, takes "take apple"'s rules and with them the pick-up it never made. An action
    never recorded takes none: it is the explorer's to try (predicted by analogy, every untried
    move would be a guess the planner chains, and its search would grow with each). Actions in
    ``taken`` (that took rules by `_borrow`) are left as they are.
    """
    rows = {a: [transitions[i] for i in by_action.get(a, [])] for a in range(len(names))}
    tried = [a for a in range(len(names)) if rows[a]]
    own = {a: (_right_on(_body(model, a), a, rows[a]) if a in model else
               sum(_canon(t["state"]) == _canon(t["next_state"]) for t in rows[a])) for a in tried}
    sources = [a for a in sorted(model) if a < len(names) and _body(model, a)]
    carried: dict[tuple[int, int], list[str]] = {}
    right: dict[tuple[int, int], int] = {}
    for source in sources:
        lines = _body(model, source)
        for action in tried:
            if action == source or action in taken:
                continue
            span = _name_span(names[source], names[action])
            moved = _renamed(lines, *span) if span else None
            if moved is not None:
                carried[(source, action)] = moved
                right[(source, action)] = _right_on(moved, action, rows[action])
    total = {s: own.get(s, 0) + sum(r for (src, _), r in right.items() if src == s)
             for s in sources}
    return _takers(tried, carried, right, own, total, set(model))


def _learn_reward(transitions: list[dict], afters: list[dict], kinds: dict[Path, str]
                  ) -> tuple[list[tuple[float, bool]], list[Rule], int,
                             list[tuple[tuple[str, ...], list[Rule], int]]]:
    """The reward's decision list over the state after the step (none before a success), and,
    where missions' successes differ, one per group of missions (`_mission_rewards`)."""
    if not any(float(t["reward"]) > 0 for t in transitions):
        return [], [], 0, []
    outcomes = [(float(t["reward"]), bool(t["done"])) for t in transitions]
    changes = sorted(set(outcomes), key=lambda o: (-outcomes.count(o), o))
    labels = [changes.index(o) for o in outcomes]
    features, columns = _features(afters, kinds, "next_state", [])
    rules, default = decision_list(labels, features, columns)
    missions = [str(t.get("mission", "")) for t in transitions]
    rewarded = [float(t["reward"]) > 0 for t in transitions]
    return changes, rules, default, _mission_rewards(missions, labels, rewarded, features, columns)


def _mission_rewards(missions: list[str], labels: list[int], rewarded: list[bool],
                     features: list[Feature], columns: list[list[bool]]
                     ) -> list[tuple[tuple[str, ...], list[Rule], int]]:
    """The reward per mission, where the successes of one mission contradict another's.

    Each mission with a recorded success (``rewarded``) gets the decision list of its own
    transitions. Where each of those is right on every transition of every other mission, one
    list holds for all (returns empty: the successes of one level carry to the next that shares
    its goal). Else each success's mission keeps its own, and a mission with no success takes
    the first of them right on all its transitions (or none: no step completes it yet). A reward
    learned on one mission ("the mug in the cabinet") is then not taken for another whose start
    already shows it (put a clean mug there).
    """
    rows: dict[str, list[int]] = defaultdict(list)
    for i, m in enumerate(missions):
        rows[m].append(i)
    if len(rows) < 2:
        return []
    x = np.array(columns, dtype=bool).reshape(len(features), len(labels))
    index = {id(f): k for k, f in enumerate(features)}
    succeeded = [m for m in rows if any(rewarded[i] for i in rows[m])]
    own = {m: decision_list([labels[i] for i in rows[m]], features,
                            [list(x[f, rows[m]]) for f in range(len(features))])
           for m in succeeded}

    def label(rules: list[Rule], default: int, i: int) -> int:
        for rule in rules:
            if all(x[index[id(f)], i] == polarity for f, polarity in rule.literals):
                return rule.label
        return default

    def right_on(m: str, other: str) -> bool:
        return all(label(*own[m], i) == labels[i] for i in rows[other])

    if all(right_on(m, o) for m in succeeded for o in rows if o != m):
        return []
    groups = {m: [m] for m in succeeded}
    for m in rows:
        taken = None if m in groups else next((s for s in succeeded if right_on(s, m)), None)
        if taken is not None:
            groups[taken].append(m)
    return [(tuple(groups[m]), *own[m]) for m in succeeded]


def rule_program(transitions: list[dict], names: tuple[str, ...] = ()) -> str:
    """The program of the rule model learned from ``transitions`` (`learn_rules`), given the
    actions' ``names`` where known."""
    return learn_rules(transitions, names=names).program()


_HELPER_NAMES = {n.name for n in ast.parse(HELPERS).body if isinstance(n, ast.FunctionDef)}


def with_reward(base: str, answer: str) -> str | None:
    """``base`` with its ``reward`` (and any helper the answer defines) taken from ``answer``;
    an answer's own ``transition``, and its versions of the rule model's helpers, are ignored. None when the answer does not parse or defines
    no ``reward``."""
    try:
        tree = ast.parse(answer)
    except SyntaxError:
        return None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "reward" for n in tree.body):
        return None
    lines = answer.splitlines(keepends=True)
    kept = []
    for node in tree.body:  # the transition and the rule model's helpers stay the base's
        if isinstance(node, ast.FunctionDef) and node.name in _HELPER_NAMES | {"transition"}:
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        kept.append("".join(lines[first - 1:node.end_lineno]).rstrip("\n") + "\n")
    merged, _ = merge_into_parent("\n\n".join(kept), base, FUNCTIONS)
    return merged


# ------------------------------------------------------------------------- the reward prompt


class RewardPrompts:
    """REx's prompt builder while no recorded step has completed a mission: every call asks only
    for ``reward``, from the mission, the schema and the rule model's ``transition``; the answer's
    ``reward`` is put into the rule model's program (template ``prompts/reward.txt``); an answer
    that writes both functions is taken whole, as any answer is.

    Args:
        context: the environment and data the prompts describe
            (`codeworld.worlds.objects._prompting.PromptContext`).
        base: the rule model's program, whose ``transition`` every answer keeps.
    """

    def __init__(self, context: PromptContext, base: str):
        self.context = context
        self.base = base

    def messages(self, request: Request) -> list[dict]:
        from codeworld.worlds.objects._prompting import render_agent

        c = self.context
        actions = ", ".join(f"{i} = {n}" for i, n in enumerate(c.action_names))
        current = ""
        if request.program:
            current = (f"The reward function written so far, and what is wrong with it:\n\n"
                       f"```python\n{_function(request.program, 'reward').rstrip()}\n```\n\n"
                       f"{request.feedback or '(no details)'}")
        return render_agent("reward", description=c.description, actions=actions,
                            missions=c.missions, schema=c.schema or "(see the transition below)",
                            transition=_function(self.base, "transition").rstrip(),
                            current=current)

    def program(self, request: Request, completion_text: str) -> str | None:
        from codeworld.llm import extract_code
        from codeworld.llm._extract import CodeExtractionError
        from codeworld.llm.types import prefill_of

        try:
            answer = extract_code(completion_text, prefill_of(self.messages(request)))
        except CodeExtractionError:
            return None
        try:
            defined = {n.name for n in ast.parse(answer).body if isinstance(n, ast.FunctionDef)}
        except SyntaxError:
            return answer  # scored as it is: the fix prompt shows the error
        if set(FUNCTIONS) <= defined:  # a whole program: taken as it is, like any answer
            return answer
        return with_reward(self.base, answer)


def _function(program: str, name: str) -> str:
    """The text of one top-level function of a program (the whole program when it lacks it)."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return program
    lines = program.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return "".join(lines[node.lineno - 1:node.end_lineno])
    return program
