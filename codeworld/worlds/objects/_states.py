"""Worlds whose states are JSON objects: their canonical form, their schema, and the assists.

A world whose state is a dict of lists, numbers, strings, booleans and None (the WorldCoder
agent's levels, any object-level world) declares two things its assists are built from:
its recorded states, from which `state_schema` reads the keys and the kind of each value, and its
recorded transitions, from which `effects_text` writes the data section: per action, what each
part of the state did, on what other value that depended, and the exceptions; then the rewards
and the episode ends with examples. `skeleton_program` writes the program the prompts start from
(a well-formed answer that changes nothing), and `object_problems` the static checks of an answer
against the schema. Nothing here names a level or a game: everything is read off the data.

The functions of the contract are ``transition(state, action) -> next_state`` and
``reward(state, action, next_state, mission) -> (reward, done)``.
"""

from __future__ import annotations

import ast
import json
import marshal
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from codeworld.synthesis._checks import StaticProblem, code_problems, own_nodes, unique_problems

FUNCTIONS = ("transition", "reward")


# ------------------------------------------------------------------------- canonical states


def _canonical(value: Any) -> Any:
    """The canonical form of a value (`normalize_state`) in one pass: the plain JSON types
    (tuples become lists, numpy scalars Python numbers, integral floats ints, keys strings),
    dict keys sorted, a list of containers sorted by its items' text. The common types are
    tested first and by identity: the agent's planner keys every state it reaches."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        if all(type(k) is str for k in value):
            return {k: _canonical(value[k]) for k in sorted(value)}
        plain = {str(k): v for k, v in value.items()}
        return {k: _canonical(plain[k]) for k in sorted(plain)}
    if t is list or t is tuple:
        items = [_canonical(v) for v in value]
        if items and all(type(v) is dict or type(v) is list for v in items):
            items.sort(key=repr)  # dicts were rebuilt with sorted keys: repr is canonical
        return items
    if t is float:
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return _canonical(dict(value))
    if isinstance(value, (list, tuple)):
        return _canonical(list(value))
    if isinstance(value, (bool, str)):
        return value
    if hasattr(value, "item"):  # a numpy scalar
        return _canonical(value.item())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def normalize_state(state: Any) -> Any:
    """The canonical form of a state: plain JSON types, keys and lists of containers sorted.

    Integral floats become ints (``2.0`` and ``2`` are the same cell).
    """
    return _canonical(state)


_KEY_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def state_key(state: Any) -> str:
    """A hashable, canonical text of a state."""
    return _KEY_ENCODER.encode(_canonical(state))


def copy_state(state: Any) -> Any:
    """A deep copy of a JSON-ready state (marshal's, in C, where the state holds only its
    types; else dicts and lists copied, other values shared; both faster than
    `copy.deepcopy`). A list or dict the state holds twice is copied twice (marshal's format 2
    keeps no references), so a model that changes one in place does not change the other."""
    try:
        return marshal.loads(marshal.dumps(state, 2))
    except ValueError:
        return _copied(state)


def _copied(state: Any) -> Any:
    if isinstance(state, dict):
        return {k: _copied(v) for k, v in state.items()}
    if isinstance(state, list):
        return [_copied(v) for v in state]
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


def compact(value: Any, limit: int | None = None) -> str:
    """A state (or part of one) as one line of JSON, cut at ``limit`` characters."""
    text = json.dumps(normalize_state(value), separators=(", ", ": "))
    return text if limit is None or len(text) <= limit else text[:limit - 4] + " ..."


# --------------------------------------------------------------------------------- the schema


def _kind(value: Any) -> str:
    """The kind of one value, in the words the prompts use."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int):
        return "an int"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a dict with keys " + ", ".join(sorted(value))
    if isinstance(value, list):
        if not value:
            return "a list"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            ints = all(isinstance(v, int) for v in value)
            return f"a list of {len(value)} {'ints' if ints else 'numbers'}"
        if all(isinstance(v, dict) for v in value):
            keys = sorted({k for v in value for k in v})
            return f"a list of dicts (keys among {', '.join(keys)})"
        if all(isinstance(v, list) for v in value):
            inner = sorted({_kind(v) for v in value})
            if len(inner) == 1 and inner[0].startswith("a list of ") and inner[0][10:11].isdigit():
                n, kind = inner[0][10:].split(" ", 1)
                return f"a list of [{', '.join([kind.rstrip('s')] * int(n))}] lists"
            return "a list of lists"
        kinds = sorted({_kind(v) for v in value})
        if len(kinds) == 1:
            return f"a list of {kinds[0].split(' ', 1)[1]}s"
        return "a list of mixed values"
    return type(value).__name__


@dataclass(frozen=True)
class SchemaField:
    """One key of the state and what its values were in the recorded states.

    Attributes:
        key: the key.
        kinds: the kinds of value seen (``an int``, ``a list of 2 ints``, ``None`` ...).
        values: the distinct values seen, when there were few scalars (else empty).
        example: one value, as compact JSON.
        sizes: the smallest and largest length of a list value (None for others).
    """

    key: str
    kinds: tuple[str, ...]
    values: tuple[Any, ...]
    example: str
    sizes: tuple[int, int] | None

    def line(self) -> str:
        kinds = " or ".join(self.kinds)
        if self.values:
            return f"- {self.key}: {kinds}, one of {', '.join(json.dumps(v) for v in self.values)}"
        size = ""
        if self.sizes is not None and self.sizes[1] > 4:
            low, high = self.sizes
            size = f" ({low} items)" if low == high else f" ({low} to {high} items)"
        return f"- {self.key}: {kinds}{size}, e.g. {self.example}"


def state_schema(states: list[dict], few: int = 8) -> list[SchemaField]:
    """The keys of the recorded states and the kinds of their values (top level)."""
    keys: dict[str, list[Any]] = defaultdict(list)
    for state in states:
        for key, value in normalize_state(state).items():
            keys[key].append(value)
    fields = []
    for key in sorted(keys):
        values = keys[key]
        kinds = tuple(sorted({_kind(v) for v in values}, key=lambda k: (k == "None", k)))
        scalars = all(not isinstance(v, (list, dict)) for v in values)
        distinct = sorted({json.dumps(v) for v in values})
        shown = tuple(json.loads(v) for v in distinct) if scalars and len(distinct) <= few else ()
        sizes = [len(v) for v in values if isinstance(v, list)]
        example = next((v for v in values if v is not None), values[0])
        fields.append(SchemaField(key, kinds, shown, compact(example, 100),
                                  (min(sizes), max(sizes)) if sizes else None))
    return fields


def schema_text(schema: list[SchemaField], n_states: int) -> str:
    """The prompt section that says what a state holds."""
    lines = [f"A state is a dict with exactly these keys (read from {n_states} recorded states):"]
    lines += [f.line() for f in schema]
    if any("list" in kind for f in schema for kind in f.kinds):
        lines.append("Lists stay lists (JSON has no tuples): test a position as `[x, y] in "
                     "state[...]`, and return lists of the same form.")
    lines.append("transition returns a new dict with the same keys; reward returns (reward, done).")
    return "\n".join(lines)


_KEYS_HEADER = "    # The state's keys:\n"


def _keys_comment(schema: list[SchemaField]) -> str:
    return "".join(f"    # {f.line()[2:]}\n" for f in schema)


def skeleton_program(schema: list[SchemaField]) -> str:
    """The program the prompts start from: well formed, and it predicts that nothing changes."""
    return (
        "import copy\n\n\n"
        "def transition(state, action):\n"
        f"{_KEYS_HEADER}{_keys_comment(schema)}"
        "    new = copy.deepcopy(state)\n"
        "    # change here what `action` changes\n"
        "    return new\n\n\n"
        "def reward(state, action, next_state, mission):\n"
        "    # 1.0 and done=True on the step that completes the mission\n"
        "    return 0.0, False\n")


def with_current_schema(program: str, schema: list[SchemaField]) -> str:
    """`program` with the skeleton's comment on the state's keys written from `schema`.

    A program carried from a rewrite made on less data keeps the comment the skeleton wrote
    then, which can say that a key only ever held None after it has held strings; shown in a
    prompt beside the schema of today's data, the two disagree. Only the comment's own lines
    (``# KEY: ...`` for a key of `schema`, just after ``# The state's keys:``) are replaced; a
    program without the comment is returned as it is.
    """
    start = program.find(_KEYS_HEADER)
    if start < 0:
        return program
    at = start + len(_KEYS_HEADER)
    keys = {f.key for f in schema}
    lines = program[at:].splitlines(keepends=True)
    n = 0
    while n < len(lines) and lines[n].startswith("    # ") and lines[n][6:].split(":")[0] in keys:
        n += 1
    return program[:at] + _keys_comment(schema) + "".join(lines[n:])


# ------------------------------------------------------------------------------ static checks


def object_problems(source: str, schema: list[SchemaField], max_problems: int = 5) -> list[StaticProblem]:
    """What a check of the program's text finds wrong against the contract and the schema.

    Found: a syntax error, a missing function, a name used but never defined, randomness, a key
    of the state read that no recorded state has, and a ``transition`` that returns a tuple or a
    list instead of the state dict.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [StaticProblem(exc.lineno, f"SyntaxError: {exc.msg}", "no_model")]
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = [name for name in FUNCTIONS if name not in functions]
    if missing:
        return [StaticProblem(None, "the program must define top-level functions "
                              "transition(state, action) and reward(state, action, next_state, "
                              f"mission); missing: {', '.join(missing)}", "no_model")]
    problems = code_problems(tree)
    known = {f.key for f in schema}
    for fn in functions.values():
        params = {a.arg for a in fn.args.args[:3] if a.arg in ("state", "next_state", "new_state")}
        params |= {fn.args.args[0].arg} if fn.args.args else set()
        for node in ast.walk(fn):
            if (known and isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                    and node.value.id in params and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str) and node.slice.value not in known
                    and isinstance(node.ctx, ast.Load)):
                problems.append(StaticProblem(node.lineno, (
                    f"the state has no key '{node.slice.value}': its keys are "
                    f"{', '.join(sorted(known))}"), "state_key"))
    for node in own_nodes(functions["transition"]):
        if isinstance(node, ast.Return) and isinstance(node.value, (ast.Tuple, ast.List)):
            problems.append(StaticProblem(node.lineno, (
                "transition returns the next state alone, as a dict with the state's keys (the "
                "reward and done come from reward(...))"), "state_form"))
    return unique_problems(problems, max_problems)


# ------------------------------------------------------------------------------ data section


# Words too common in mission sentences to point at a part of the state.
_COMMON_WORDS = frozenset({"the", "and", "with", "into", "onto", "from", "then", "that", "this",
                           "your", "all", "any", "its", "for", "put", "get", "some"})


def mission_parts(mission: str, state: Any, limit: int = 8) -> list[str]:
    """The parts of ``state`` the mission's words name, as Python expressions with their values:
    a key holding a word (``state["open"]["cabinet 1"] = false``), a list item or a text value
    holding one (``state["objects"][0] = {"color": "green", "type": "goal", ...}``).

    Built from the sentence and the state alone: a reward function has to test exactly these
    parts, and a small model often tests the mission's text instead.
    """
    words = {w for w in re.findall(r"[a-z0-9]+", mission.lower()) if len(w) >= 3} - _COMMON_WORDS
    # a plural's singular too ("two apples" names "apple 1", "potatoes" "potato 1")
    words |= {w[:-k] for w in words for k in (1, 2) if w.endswith("es"[2 - k:]) and len(w) - k >= 3}
    found: list[str] = []

    def names(text: str) -> bool:  # a word, or its plural ("box": "boxes")
        tokens = set(re.findall(r"[a-z0-9]+", text.lower()))
        return any(w in tokens or w + "s" in tokens or w + "es" in tokens for w in words)

    def walk(value: Any, path: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                if names(str(key)):
                    found.append(f"{path}[{json.dumps(key)}] = {compact(item, 200)}")
                else:
                    walk(item, f"{path}[{json.dumps(key)}]")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict) and any(isinstance(v, str) and names(v) for v in item.values()):
                    found.append(f"{path}[{i}] = {compact(item, 200)}")
                elif not isinstance(item, (dict, list)):
                    continue
                else:
                    walk(item, f"{path}[{i}]")
        elif isinstance(value, str) and names(value):
            found.append(f"{path} = {json.dumps(value)}")

    walk(normalize_state(state), "state")
    return found[:limit]


def _leaves(state: dict) -> dict[str, Any]:
    """The parts of a state the data section speaks of: each top-level key, and each key of a
    nested dict (``a.b``); lists stay whole."""
    out = {}
    for key, value in normalize_state(state).items():
        if isinstance(value, dict) and value and len(value) <= 12:
            for sub, v in value.items():
                out[f"{key}.{sub}"] = v
        else:
            out[key] = value
    return out


def _delta(before: Any, after: Any) -> str | None:
    """A change as a difference, for numbers and equal-length lists of numbers; else None."""
    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if number(before) and number(after):
        return f"{after - before:+g}"
    if (isinstance(before, list) and isinstance(after, list) and len(before) == len(after) <= 4
            and all(number(v) for v in before + after)):
        return "+[" + ", ".join(f"{b - a:g}" for a, b in zip(before, after)) + "]"
    return None


def _change(before: Any, after: Any) -> str:
    """How one part changed, in words: a difference, items added or removed, or old -> new."""
    if before == after:
        return "unchanged"
    delta = _delta(before, after)
    if delta is not None:
        return delta
    if isinstance(before, list) and isinstance(after, list):
        a, b = Counter(json.dumps(v) for v in before), Counter(json.dumps(v) for v in after)
        gone, new = list((a - b).elements()), list((b - a).elements())
        parts = ([f"removed {', '.join(gone[:2])}{' ...' if len(gone) > 2 else ''}"] if gone else []) + \
                ([f"added {', '.join(new[:2])}{' ...' if len(new) > 2 else ''}"] if new else [])
        return "; ".join(parts) or "reordered"
    return f"{compact(before, 40)} -> {compact(after, 40)}"


def _condition(rows: list[tuple[dict, str]], key: str) -> tuple[str, float, dict] | None:
    """The scalar part of the state before that best tells which change ``key`` made (the most
    transitions explained by its value alone): its name, the share explained and the usual change
    for each of its values; None when no part explains more than the most common change alone."""
    base = Counter(change for _, change in rows).most_common(1)[0][1] / len(rows)
    best = None
    candidates = {k for leaves, _ in rows for k, v in leaves.items()
                  if k != key and not isinstance(v, (list, dict))}
    for other in sorted(candidates):
        groups: dict[str, Counter] = defaultdict(Counter)
        for leaves, change in rows:
            groups[json.dumps(leaves.get(other))][change] += 1
        if len(groups) > 8:
            continue
        explained = sum(c.most_common(1)[0][1] for c in groups.values()) / len(rows)
        if explained > base + 1e-9 and (best is None or explained > best[1] + 1e-9):
            best = (other, explained, {v: c.most_common(1)[0][0] for v, c in groups.items()})
    return best


def effects_text(transitions: list[dict], action_names: tuple[str, ...], examples: int = 1,
                 limit_chars: int = 6000) -> str:
    """The data section: what the recorded transitions show, per action and part of the state,
    then the rewards and the episode ends.

    Args:
        transitions: ``{state, action, next_state, reward, done, mission}`` records.
        action_names: the name of each action.
        examples: exceptions and rewarded transitions shown per item.
        limit_chars: the section is cut past this length.
    """
    if not transitions:
        return "(no transitions recorded yet)"
    by_action: dict[int, list[dict]] = defaultdict(list)
    for t in transitions:
        by_action[int(t["action"])].append(t)
    lines = [f"What the {len(transitions)} recorded transitions show, per action (a part not "
             "listed never changed under that action):"]
    for action in sorted(by_action):
        ts = by_action[action]
        name = action_names[action] if 0 <= action < len(action_names) else "?"
        lines.append(f"action {action} ({name}), {len(ts)} times:")
        befores = [_leaves(t["state"]) for t in ts]
        afters = [_leaves(t["next_state"]) for t in ts]
        keys = sorted({k for a, b in zip(befores, afters) for k in set(a) | set(b)
                       if a.get(k) != b.get(k)})
        if not keys:
            lines.append("  nothing changed")
        for key in keys:
            rows = [(a, _change(a.get(key), b.get(key))) for a, b in zip(befores, afters)]
            counts = Counter(change for _, change in rows)
            summary = ", ".join(f"{c} {n}x" for c, n in counts.most_common(4))
            line = f"  {key}: {summary}"
            condition = _condition(rows, key) if len(counts) > 1 else None
            common = counts.most_common(1)[0][0]
            if condition is not None:
                other, explained, usual = condition
                line += "; by " + "; ".join(f"{other}={v}: {c}" for v, c in sorted(usual.items()))
                if explained < 1.0:
                    line += f" ({explained:.0%} of them)"
                expected = [usual[json.dumps(leaves.get(other))] for leaves, _ in rows]
            else:
                expected = [common] * len(rows)
            lines.append(line)
            if len(counts) > 1:
                odd = [t for t, (_, c), e in zip(ts, rows, expected) if c != e][:examples]
                for t in odd:
                    lines.append(f"    e.g. {_change(_leaves(t['state']).get(key), _leaves(t['next_state']).get(key))}"
                                 f" from {compact(t['state'], 400)}")
    rewards = Counter(float(t["reward"]) for t in transitions)
    ends = [t for t in transitions if t["done"]]
    lines.append("Rewards: " + ", ".join(f"{r:g} in {n}" for r, n in sorted(rewards.items()))
                 + f"; episode ends (done True): {len(ends)}.")
    shown, seen = [], set()
    for t in transitions:
        key = (state_key(t["state"]), int(t["action"]))
        if (float(t["reward"]) != 0.0 or t["done"]) and key not in seen and len(shown) < max(2, examples):
            seen.add(key)
            shown.append(t)
    for t in shown:
        action = int(t["action"])
        name = action_names[action] if 0 <= action < len(action_names) else "?"
        changes = "; ".join(state_diff(t["state"], t["next_state"])) or "nothing"
        lines.append(f"  e.g. reward {float(t['reward']):g}, done {bool(t['done'])}: mission "
                     f"\"{t.get('mission', '')}\", action {action} ({name}), changes: {changes}, "
                     f"from {compact(t['state'], 300)}")
    text = "\n".join(lines)
    return text if len(text) <= limit_chars else text[:limit_chars] + "\n(cut)"
