"""The scaffold of a world model: the state's named components and a skeleton program.

A small model writes a right program far more often when it is shown the form of the answer: what
each number of the state is called, how many there are, what the action is, and a skeleton that
reads the state into named variables and ends with the return line. `build_scaffold` builds that
from an environment's `EnvSpec` and its description text only, never from its name, so it works
the same on an environment codeworld has never seen:

* **names** come from the description's observation table: a markdown table whose first column
  indexes the state (``| Num | Observation | ...``; a cell may hold several indices, ``3, 4, 5``
  with ``first monster: row, column, element code``, or a range ``2-4``) and that covers every
  index; else a table without an index column that has one row per component; else the single
  component is called ``observation``, and several are numbered ``s0, s1, ...``;
* **integer components**: where the spec compares states exactly (zero tolerances), the values are
  whole numbers, and the skeleton reads them with ``int(...)``;
* **the action**: an int in ``0..n-1``, or a float64 array of ``k`` values in a box.

The skeleton's *head* (imports, ``def step``, the unpacking) is also the prefill of the requests
that write a program from scratch, so the model starts inside the right form.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from dataclasses import dataclass


# Names a component must not take: the contract's own, and those of the modules it may use.
_RESERVED = {"state", "action", "step", "next_state", "reward", "done", "np", "numpy", "math",
             "self", "int", "float", "bool", "abs", "min", "max", "round", "sum", "len", "range",
             "list", "tuple", "dict", "set", "type", "id", "input", "print", "pow", "map", "filter"}
_STOPWORDS = {"the", "a", "an", "of", "in", "on", "at", "to", "for", "and", "its", "is", "by"}
_MAX_WORDS = 5
_INDEX_HEADERS = {"num", "index", "#", "idx", "id", "i", "dim", "element"}
_NAME_HEADERS = ("observation", "description", "meaning", "component", "variable", "state", "name")


@dataclass(frozen=True)
class Scaffold:
    """What the prompts show about the form of a world model for one environment.

    Attributes:
        names: one Python identifier per state component, in order.
        labels: the description's text for each component (its name when there is none).
        integer: whether the components hold whole numbers (read with ``int``).
        discrete: whether actions are ints.
        n_actions: number of discrete actions (0 for continuous ones).
        action_dim: length of a continuous action (1 for discrete ones).
        action_low: lowest value of a continuous action's entries.
        action_high: highest value of a continuous action's entries.
        named_from: where the names came from: ``"table"``, ``"single"`` or ``"numbered"``.
        max_unpacked: at most this many components are unpacked one per line in the skeleton.
        reward_default: the reward the skeleton starts from: the most frequent reward of the
            recorded data when the scaffold is built with it, else 0.0.
        whole: per component, whether every recorded value of it is a whole number (read with
            ``int`` whatever the env's dtype); None when built without states. A scaffold built
            with them also marks the skeleton's reward line as the recorded default.
        packed: the parts a single whole-number component packs, as the description's code
            formula writes it (`packed_parts`): each part's name, place value and count of
            values (None for the leading part); the head decodes them into names.
    """

    names: tuple[str, ...]
    labels: tuple[str, ...]
    integer: bool
    discrete: bool
    n_actions: int
    action_dim: int
    action_low: float
    action_high: float
    named_from: str
    max_unpacked: int = 32
    reward_default: float = 0.0
    whole: tuple[bool, ...] | None = None
    packed: tuple[tuple[str, int, int | None], ...] = ()

    def is_int(self, i: int) -> bool:
        """Whether component `i` is read as an int: the env stores whole numbers, or every
        recorded value of it is one."""
        return self.integer or (self.whole is not None and self.whole[i])

    @property
    def state_dim(self) -> int:
        return len(self.names)

    @property
    def references(self) -> tuple[str, ...]:
        """How code in the skeleton's form reads each component: its name, or ``s[i]`` for a
        state too long to be unpacked into names."""
        if self.state_dim <= self.max_unpacked:
            return self.names
        return tuple(f"s[{i}]" for i in range(self.state_dim))

    def action_text(self) -> str:
        """How the action looks, in words."""
        if self.discrete:
            return f"`action` is an int in 0..{self.n_actions - 1}"
        return (f"`action` is a 1-D float64 numpy array of {self.action_dim} value"
                f"{'s' if self.action_dim != 1 else ''} in [{self.action_low:g}, {self.action_high:g}]")

    def state_text(self) -> str:
        """The state's components as a list: index, variable name, and the description's label."""
        n = self.state_dim
        ints = [self.is_int(i) for i in range(n)]
        kind = ("whole numbers stored as floats" if all(ints) else "floats" if not any(ints)
                else "floats; those marked int hold whole numbers in the recorded data")
        lines = [f"`state` is a 1-D float64 numpy array of exactly {n} number"
                 f"{'s' if n != 1 else ''} ({kind}):"]
        shown = self.names if n <= self.max_unpacked else self.names[:self.max_unpacked]
        mixed = any(ints) and not all(ints)
        for i, name in enumerate(shown):
            label = self.labels[i]
            extra = f"  ({label})" if label and _identifier(label) != name else ""
            lines.append(f"- state[{i}]: {name}{extra}" + ("  [int]" if mixed and ints[i] else ""))
        if len(shown) < n:
            lines.append(f"- ... state[{len(shown)}] to state[{n - 1}]: {self.names[len(shown)]} "
                         f"to {self.names[-1]}")
        if n == 1:
            lines.append("The whole state is this one number: there is nothing else to unpack "
                         "(decode it with arithmetic when the description says it packs several "
                         "values).")
        return "\n".join(lines)

    def head(self) -> str:
        """The first lines of the skeleton: imports, ``def step``, the state read into names."""
        lines = ["import math", "", "import numpy as np", "", "", "def step(state, action):"]
        n = self.state_dim
        if n <= self.max_unpacked:
            lines += [f"    {name} = {'int' if self.is_int(i) else 'float'}(state[{i}])"
                      for i, name in enumerate(self.names)]
        else:
            lines.append(f"    s = np.array(state, dtype=np.float64)  # {n} numbers: s[0] .. s[{n - 1}]")
        if self.packed and n == 1:
            lines.append(f"    # the parts the description packs into {self.names[0]}")
            for part, place, count in self.packed:
                value = self.names[0] if place == 1 else f"{self.names[0]} // {place}"
                lines.append(f"    {part} = {value}" + (f" % {count}" if count else ""))
        if self.discrete:
            lines.append("    action = int(action)")
        else:
            lines.append(f"    action = np.asarray(action, dtype=np.float64)  # {self.action_dim} "
                         f"value{'s' if self.action_dim != 1 else ''}")
        return "\n".join(lines) + "\n"

    def tail(self) -> str:
        """The last lines of the skeleton: the next state built in order, and the return line."""
        if self.state_dim <= self.max_unpacked:
            values = textwrap.fill(", ".join(self.names), width=88, initial_indent=" " * 8,
                                   subsequent_indent=" " * 8, break_on_hyphens=False)
            build = f"    next_state = np.array([\n{values},\n    ], dtype=np.float64)" if (
                len(values.strip()) > 64) else f"    next_state = np.array([{values.strip()}], dtype=np.float64)"
        else:
            build = "    next_state = s"
        return (f"{build}\n"
                "    return next_state, float(reward), bool(done)\n")

    def skeleton(self) -> str:
        """The whole skeleton: head, a placeholder for the dynamics, tail."""
        n = self.state_dim
        what = "the new values of the names above" if n <= self.max_unpacked else "the new s"
        return (self.head()
                + f"    # ... compute {what}, `reward` and `done` here ...\n"
                + f"    reward = {self.reward_default!r}"
                + ("  # the most frequent recorded reward: write the description's reward rule\n"
                   if self.whole is not None else "\n")
                + "    done = False\n"
                + self.tail())

    def prompt_text(self) -> str:
        """The block the prompts show: the state, the action, the skeleton."""
        return (f"{self.state_text()}\n{self.action_text()}.\n\n"
                "Keep this form: read the state into these names at the top, build `next_state` "
                "with all of them in this order, and end with this return line.\n\n"
                f"```python\n{self.skeleton()}```")


def build_scaffold(spec, description: str = "", max_unpacked: int = 32, rewards=None,
                   states=None) -> Scaffold:
    """The scaffold of an environment from its spec and description (see the module docstring).

    Args:
        spec: an `EnvSpec` (or any object with ``obs_dim``, ``discrete``, ``n_actions``,
            ``action_dim``, ``action_low``, ``action_high``, ``state_atol``, ``state_rtol``).
        description: the description text shown to the LLM.
        max_unpacked: states longer than this are not unpacked one name per line.
        rewards: the recorded rewards, if any: the skeleton's reward starts as the most frequent
            of them (a program that leaves it alone is then right wherever the data is typical).
        states: the recorded states (and next states), rows of components, if any: a
            component whose values are all whole numbers is read as an int.
    """
    n = int(spec.obs_dim)
    labels = component_labels(description, n)
    if labels is not None:
        named_from = "table"
    elif n == 1:
        labels, named_from = ["observation"], "single"
    else:
        labels, named_from = [f"s{i}" for i in range(n)], "numbered"
    names = _unique_identifiers(labels)
    discrete = bool(spec.discrete)
    low = min(spec.action_low) if len(spec.action_low) else 0.0
    high = max(spec.action_high) if len(spec.action_high) else 0.0
    integer = float(spec.state_atol) == 0.0 and float(spec.state_rtol) == 0.0
    reward_default = 0.0
    if rewards is not None:
        from codeworld.scoring._scorer import most_frequent

        reward_default = most_frequent(rewards)
    whole = None
    if states is not None:
        import numpy as np

        values = np.asarray(states, dtype=np.float64).reshape(-1, n)
        if len(values):
            whole = tuple(bool(v) for v in (np.isfinite(values).all(axis=0)
                                            & (values == np.round(values)).all(axis=0)))
    packed = ()
    if n == 1 and (integer or (whole is not None and whole[0])):
        packed = tuple(p for p in packed_parts(description) if p[0] not in names)
        if len({p[0] for p in packed}) < len(packed):
            packed = ()
    return Scaffold(tuple(names), tuple(labels), integer, discrete, int(spec.n_actions),
                    int(spec.action_dim), float(low), float(high), named_from, max_unpacked,
                    reward_default, whole, packed)


def packed_parts(description: str) -> tuple[tuple[str, int, int | None], ...]:
    """The parts of a whole number that the description packs with a code formula of the form
    ``(a * 5 + b) * 4 + c`` (in backticks; names and whole-number factors only): each part's
    name, place value (``c``: 1, ``b``: 4, ``a``: 20) and count of values (``b``: 5, ``c``: 4;
    None for the leading part, which is unbounded). Empty when the description has none."""
    import ast

    def parts(node) -> list[tuple[str, int | None]] | None:
        if isinstance(node, ast.Name):
            return [(node.id, None)]
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
                and isinstance(node.right, ast.Name) and isinstance(node.left, ast.BinOp)
                and isinstance(node.left.op, ast.Mult) and isinstance(node.left.right, ast.Constant)
                and type(node.left.right.value) is int and node.left.right.value > 1):
            inner = parts(node.left.left)
            return None if inner is None else inner + [(node.right.id, node.left.right.value)]
        return None

    for span in re.findall(r"`([^`\n]+)`", description):
        try:
            tree = ast.parse(span.strip(), mode="eval")
        except SyntaxError:
            continue
        found = parts(tree.body)
        if found is None or len(found) < 2:
            continue
        names = [name for name, _ in found]
        if any(keyword.iskeyword(x) or x in _RESERVED for x in names):
            continue
        out, place = [], 1
        for name, count in reversed(found):
            out.append((name, place, count))
            place *= count or 1
        return tuple(reversed(out))
    return ()


# ------------------------------------------------------------------------------------ tables


def _tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """The markdown tables of ``text``: (heading above it, header cells, data rows)."""
    out = []
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            heading = line.lstrip("#").strip().lower()
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append(lines[i].strip())
                i += 1
            rows = [[c.strip() for c in row.strip("|").split("|")] for row in block]
            rows = [r for r in rows if not all(re.fullmatch(r":?-{2,}:?", c) for c in r if c)]
            if len(rows) >= 2:
                out.append((heading, [c.lower() for c in rows[0]], rows[1:]))
            continue
        i += 1
    return out


def _indices(cell: str) -> list[int] | None:
    """The state indices a table's index cell names: ``3``, ``0, 1``, ``2-4``; None if none."""
    cell = cell.strip().strip("`*")
    if re.fullmatch(r"\d+", cell):
        return [int(cell)]
    if re.fullmatch(r"\d+(\s*,\s*\d+)+", cell):
        return [int(x) for x in cell.split(",")]
    match = re.fullmatch(r"(\d+)\s*(?:-|–|to|\.\.)\s*(\d+)", cell)
    if match and int(match.group(1)) <= int(match.group(2)):
        return list(range(int(match.group(1)), int(match.group(2)) + 1))
    return None


def _split_label(label: str, k: int) -> list[str]:
    """``k`` labels from one cell that describes ``k`` components."""
    main = label.split(";")[0]
    prefix, _, rest = main.rpartition(":")
    parts = [p.strip() for p in rest.split(",") if p.strip()]
    if len(parts) == k:
        return [f"{prefix.strip()} {p}".strip() for p in parts]
    return [f"{label} {j}" for j in range(k)]


def component_labels(description: str, n: int) -> list[str] | None:
    """The description's label of each of the ``n`` state components, or None when no table
    in it names them all (see the module docstring)."""
    tables = _tables(description or "")
    ranked = sorted(tables, key=lambda t: 0 if ("observation" in t[0] or "state" in t[0]) else 1)
    for heading, header, rows in ranked:
        if "action" in heading or any("action" in h or "control" in h for h in header):
            continue
        if not rows or len(header) < 2:
            continue
        if header[0] in _INDEX_HEADERS or all(_indices(r[0]) is not None for r in rows if r):
            column = next((j for key in _NAME_HEADERS for j, h in enumerate(header)
                           if j > 0 and key in h), 1)
            labels: dict[int, str] = {}
            for row in rows:
                idx = _indices(row[0]) if row else None
                if idx is None or column >= len(row):
                    continue
                for i, label in zip(idx, _split_label(row[column], len(idx)) if len(idx) > 1
                                    else [row[column]]):
                    labels.setdefault(i, label)
            if set(labels) == set(range(n)):
                return [_plain(labels[i]) for i in range(n)]
        elif n >= 2 and len(rows) == n:
            return [_plain(row[0]) for row in rows]
    return None


def _plain(label: str) -> str:
    return re.sub(r"\s+", " ", label.replace("`", "").replace("*", "")).strip()


def _identifier(label: str, max_words: int = _MAX_WORDS) -> str:
    words = re.findall(r"[a-z0-9]+", label.lower())
    kept = [w for w in words if w not in _STOPWORDS] or words
    name = "_".join(kept[:max_words])
    if not name:
        return ""
    if name[0].isdigit():
        name = "s_" + name
    if keyword.iskeyword(name) or name in _RESERVED:
        name += "_value"
    return name


def _unique_identifiers(labels: list[str]) -> list[str]:
    """Identifiers for the labels: short ones, longer where short ones would collide."""
    for max_words in range(_MAX_WORDS, 3 * _MAX_WORDS):
        names = [_identifier(label, max_words) or f"s{i}" for i, label in enumerate(labels)]
        if len(set(names)) == len(names):
            return names
    unique: list[str] = []
    for i, name in enumerate(names):
        unique.append(f"{name}_{i}" if name in unique else name)
    return unique
