"""Mechanical repairs: fixes to a program's form that need no LLM call.

Some mistakes have one right fix that a rule can make as well as a model: a module that uses
``np`` or ``math`` without importing it, a ``step`` that returns its next state as a list or
tuple, an int reward or done flag where the contract wants a float and a bool, a next-state
array made with an integer dtype (which silently truncates every value written into it), a reward
or done flag that only some branches set (given the default 0.0 / False at the top of ``step``), a
next state that only some branches build (built on the others from the state's named variables as
they are at the return).
`repair` makes these edits on the source text (reading it with `ast` and pyflakes only: the
program is untrusted and is not run), leaves every other line as it was, and says what it did, so
that the run directory records each repair. A repair is not an LLM call and is never counted as
one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Module names a program may use, with the import line that provides each.
_IMPORTS = {"np": "import numpy as np", "numpy": "import numpy", "math": "import math",
            "copy": "import copy", "deepcopy": "from copy import deepcopy",
            **{name: f"from typing import {name}" for name in
               ("Any", "Dict", "List", "Optional", "Tuple", "Union")}}
_INT_DTYPES = {"int", "np.int_", "np.int8", "np.int16", "np.int32", "np.int64", "numpy.int32",
               "numpy.int64", "np.intc", "'int'", '"int"', "'int32'", '"int32"', "'int64'",
               '"int64"'}
_ARRAY_MAKERS = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                 "full_like"}


@dataclass(frozen=True)
class Repair:
    """One mechanical repair.

    Attributes:
        kind: ``"missing_import"``, ``"state_alone"``, ``"state_as_array"``, ``"reward_as_float"``,
            ``"done_as_bool"``, ``"float_state_dtype"``, ``"result_default"``,
            ``"next_state_default"``, ``"merged_into_parent"``, ``"int_index"`` or
            ``"borrowed_result"``.
        line: the line it changed (in the program before the repair).
        detail: what was done, in words.
    """

    kind: str
    line: int
    detail: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "line": self.line, "detail": self.detail}


def repair(source: str, parent: str = "", functions: tuple[str, ...] | None = None
           ) -> tuple[str, list[Repair]]:
    """The program with its mechanical repairs made, and the list of repairs (empty: unchanged).

    Args:
        source: the program an answer gave.
        parent: the program the answer was asked to fix or improve, if any: an answer that
            gives only some top-level pieces (helpers, constants) and no world model is put into
            it (`merge_into_parent`).
        functions: the functions a world model of the world's contract defines, the one that
            returns the next state alone first (e.g. ``("transition", "reward")``); None for the
            CWMB contract (``step`` or ``class Environment``). The repairs of ``step``'s returns
            apply to that contract alone; with ``functions``, a tuple returned by the first one
            is cut to its first item (the state; the reward and done come from the second), and
            the others, which take the state, the action and the next state as their first
            three parameters, read the first one's result through that parameter where they
            used its local name (`_repair_borrowed_result`).

    A program that does not parse is returned as it is.
    """
    repairs: list[Repair] = []
    if parent:
        source, done = merge_into_parent(source, parent, functions)
        repairs += done
    if functions is not None:
        source, done = _repair_state_alone(source, functions[0])
        repairs += done
        source, done = _repair_borrowed_result(source, functions)
        repairs += done
    source, done = _repair_returns(source)
    repairs += done
    source, done = _repair_unbound_next_state(source)
    repairs += done
    source, done = repair_imports(source)
    repairs += done
    source, done = _repair_unbound_results(source)
    repairs += done
    source, done = _repair_float_indices(source)
    repairs += done
    return source, repairs


# ----------------------------------------------------------------------- partial answers

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _defined_names(node: ast.stmt) -> list[str]:
    """The module-level names a top-level statement defines (a def, a class, an assignment)."""
    if isinstance(node, _DEFINITIONS):
        return [node.name]
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _is_world_model(tree: ast.Module, functions: tuple[str, ...] | None = None) -> bool:
    if functions is not None:
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        return all(name in defined for name in functions)
    return any(isinstance(n, ast.FunctionDef) and n.name == "step" or
               isinstance(n, ast.ClassDef) and n.name == "Environment" for n in tree.body)


def merge_into_parent(source: str, parent: str, functions: tuple[str, ...] | None = None
                      ) -> tuple[str, list[Repair]]:
    """An answer that gives only some pieces of the program (the helpers or constants a fix asked
    for, "the rest unchanged") put into the program it was asked to change.

    Each top-level definition of the answer (a function, a class, a constant) replaces the
    parent's of the same name, or, when new, goes just before the parent's world model; the
    answer's imports go to the top. An answer that has a world model of its own (``step`` or
    ``class Environment``; with ``functions``, all of them), that defines nothing, or that does
    not parse, is left as it is.
    """
    try:
        answer, tree = ast.parse(source), ast.parse(parent)
    except SyntaxError:
        return source, []
    if _is_world_model(answer, functions) or not _is_world_model(tree, functions):
        return source, []
    pieces = [n for n in answer.body if _defined_names(n)]
    imports = [n for n in answer.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not pieces:
        return source, []
    source_lines, parent_lines = source.splitlines(keepends=True), parent.splitlines(keepends=True)

    def text(lines: list[str], node: ast.stmt) -> str:
        chunk = "".join(lines[_first_line(node) - 1: node.end_lineno])
        return chunk if chunk.endswith("\n") else chunk + "\n"

    replaced: dict[int, str] = {}  # index of a parent statement -> its new text
    new: list[str] = []
    names: list[str] = []
    for piece in pieces:
        piece_names = set(_defined_names(piece))
        names += sorted(piece_names)
        at = next((i for i, n in enumerate(tree.body) if piece_names & set(_defined_names(n))), None)
        if at is None:
            new.append(text(source_lines, piece))
        else:
            replaced[at] = replaced.get(at, "") + text(source_lines, piece)
    model_names = functions or ("step", "Environment")
    model_at = next(i for i, n in enumerate(tree.body) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                    and n.name in model_names)
    out: list[str] = []
    done_upto = 0  # parent lines written so far
    for i, node in enumerate(tree.body):
        start = _first_line(node) - 1
        if i == model_at and new:
            out.append("".join(parent_lines[done_upto:start]))
            out.append("\n\n".join(new) + "\n\n")
            done_upto = start
        if i in replaced:
            out.append("".join(parent_lines[done_upto:start]))
            out.append(replaced[i])
            done_upto = node.end_lineno
    out.append("".join(parent_lines[done_upto:]))
    merged = "".join(out)
    have = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    extra = [ast.unparse(n) + "\n" for n in imports if ast.unparse(n) not in have]
    merged = "".join(extra) + merged
    try:
        ast.parse(merged)
    except SyntaxError:
        return source, []
    return merged, [Repair("merged_into_parent", pieces[0].lineno,
                           f"the answer had no world model, only {', '.join(names)}: put into the "
                           "program it was asked to change")]


# ------------------------------------------------------------------- reward and done defaults

# What a reward or done flag that no branch set means (the skeleton's own defaults).
_RESULT_DEFAULTS = (("reward", "0.0"), ("done flag", "False"))


def _result_name(node: ast.AST) -> str | None:
    """The variable a returned reward or done is: ``reward``, ``float(reward)``, ``bool(done)``."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.func, ast.Name) \
            and node.func.id in ("float", "bool", "int"):
        node = node.args[0]
    return node.id if isinstance(node, ast.Name) else None


def step_function(source: str) -> tuple[ast.Module, ast.FunctionDef] | None:
    """The parsed module and its top-level ``def step`` with a body; None when the source does
    not parse or has no such function (the paper's class form included)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    step = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "step"), None)
    return None if step is None or not step.body else (tree, step)


def _first_line(node: ast.stmt) -> int:
    """The first line of a top-level statement, its decorators included."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def _top_level_names(step: ast.FunctionDef) -> set[str]:
    """The names assigned by statements directly in ``step``'s body (not inside a branch)."""
    names: set[str] = set()
    for node in step.body:
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    names.add(name.id)
    return names


def _first_statement(step: ast.FunctionDef) -> ast.stmt:
    first = step.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(step.body) > 1:
        first = step.body[1]  # after the docstring
    return first


def _state_component_names(step: ast.FunctionDef) -> list[str] | None:
    """The names ``step`` reads the state into at its top (``x = float(state[0])``, ``x, v = state``),
    in the state's order, when they cover components 0..n-1; else None."""
    state = step.args.args[0].arg if step.args.args else "state"
    by_index: dict[int, str] = {}
    for node in step.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Name) and value.id == state \
                and all(isinstance(e, ast.Name) for e in target.elts):
            by_index.update({i: e.id for i, e in enumerate(target.elts)})
            continue
        if not isinstance(target, ast.Name):
            continue
        if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
            value = value.args[0]  # float(state[0]), int(state[1])
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                and value.value.id == state and isinstance(value.slice, ast.Constant) \
                and isinstance(value.slice.value, int) and not isinstance(value.slice.value, bool):
            by_index.setdefault(value.slice.value, target.id)
    if not by_index or sorted(by_index) != list(range(len(by_index))):
        return None
    return [by_index[i] for i in range(len(by_index))]


def _repair_unbound_next_state(source: str) -> tuple[str, list[Repair]]:
    """Give the returned next state a value on the paths where no branch built it: the state's
    named variables as they are at the return (or the state itself, when the program does not name
    its components), so that an update made in such a branch still shows."""
    found = step_function(source)
    if found is None:
        return source, []
    tree, step = found
    returns = [n for n in ast.walk(step) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)
               and len(n.value.elts) == 3 and isinstance(n.value.elts[0], ast.Name)]
    names = {r.value.elts[0].id for r in returns}
    if len(names) != 1:
        return source, []
    name = names.pop()
    stored = {n.id for n in ast.walk(step) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if name not in stored or name in _top_level_names(step) or name in {a.arg for a in step.args.args}:
        return source, []
    lines = source.splitlines(keepends=True)
    if any(not lines[r.lineno - 1][: r.col_offset].isspace() and r.col_offset for r in returns):
        return source, []  # a return that shares its line (``if x: return ...``): leave it
    components = _state_component_names(step)
    state = step.args.args[0].arg if step.args.args else "state"
    value = (f"np.array([{', '.join(components)}], dtype=np.float64)" if components
             else f"np.array({state}, dtype=np.float64)")
    first = _first_statement(step)
    inserts = {first.lineno - 1: f"{lines[first.lineno - 1][: first.col_offset]}{name} = None\n"}
    for r in returns:
        indent = lines[r.lineno - 1][: r.col_offset]
        inserts[r.lineno - 1] = (inserts.get(r.lineno - 1, "")
                                 + f"{indent}if {name} is None:\n{indent}    {name} = {value}\n")
    new = "".join(inserts.get(i, "") + line for i, line in enumerate(lines))
    try:
        ast.parse(new)
    except SyntaxError:
        return source, []
    return new, [Repair("next_state_default", first.lineno,
                        f"`{name}` is built as {value} where no branch built it")]


def _repair_unbound_results(source: str) -> tuple[str, list[Repair]]:
    """Give the returned reward and done a default at the top of ``step`` when only some branches
    set them (the program would raise UnboundLocalError on the others)."""
    found = step_function(source)
    if found is None:
        return source, []
    tree, step = found
    returns = [n for n in ast.walk(step) if isinstance(n, ast.Return)
               and isinstance(n.value, ast.Tuple) and len(n.value.elts) == 3]
    if not returns:
        return source, []
    top_level = _top_level_names(step)
    nested: set[str] = set()
    for node in ast.walk(step):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            nested.add(node.id)
    params = {a.arg for a in step.args.args}
    wanted = []
    for (role, default), index in zip(_RESULT_DEFAULTS, (1, 2)):
        names = {_result_name(r.value.elts[index]) for r in returns}
        for name in sorted(n for n in names if n):
            if name in nested and name not in top_level and name not in params:
                wanted.append((name, default, role))
    if not wanted:
        return source, []
    first = _first_statement(step)
    lines = source.splitlines(keepends=True)
    indent = lines[first.lineno - 1][: first.col_offset]
    block = "".join(f"{indent}{name} = {default}\n" for name, default, _ in wanted)
    new = "".join(lines[: first.lineno - 1]) + block + "".join(lines[first.lineno - 1:])
    try:
        ast.parse(new)
    except SyntaxError:
        return source, []
    return new, [Repair("result_default", first.lineno,
                        f"`{name}` starts as {default} (only some branches set the {role})")
                 for name, default, role in wanted]


# ------------------------------------------------------------------------------------ imports


def repair_imports(source: str) -> tuple[str, list[Repair]]:
    """The program with the imports of the modules and `typing` names it uses without importing
    them added (the repair every world shares, whatever its contract)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    from codeworld.synthesis._checks import pyflakes_messages

    missing = []
    for msg in pyflakes_messages(tree):
        if type(msg).__name__ == "UndefinedName" and msg.message_args[0] in _IMPORTS:
            name = msg.message_args[0]
            if name not in missing:
                missing.append(name)
    if not missing:
        return source, []
    lines = source.splitlines(keepends=True)
    at = _import_position(tree)
    added = [_IMPORTS[name] + "\n" for name in sorted(missing)]
    new = "".join(lines[:at] + added + lines[at:])
    return new, [Repair("missing_import", at + 1, f"added `{_IMPORTS[name]}`") for name in sorted(missing)]


def _import_position(tree: ast.Module) -> int:
    """The 0-based line before which imports go: after a module docstring and ``__future__``."""
    at = 0
    for node in tree.body:
        is_doc = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str) and node is tree.body[0])
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if is_doc or is_future:
            at = node.end_lineno or node.lineno
        else:
            break
    return at


# ------------------------------------------------------------------------------------ returns


def _repair_returns(source: str) -> tuple[str, list[Repair]]:
    found = step_function(source)
    if found is None:
        return source, []
    tree, step = found
    from codeworld.synthesis._checks import own_nodes

    assigned = _assignments(step)
    edits: list[tuple[ast.AST, str, Repair]] = []
    for node in own_nodes(step):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
                and len(node.value.elts) == 3):
            continue
        state, reward, done = node.value.elts
        text = ast.get_source_segment(source, state)
        if text is not None and _is_sequence(state, assigned):
            edits.append((state, f"np.array({text}, dtype=np.float64)",
                          Repair("state_as_array", state.lineno,
                                 "the next state is returned as a float64 numpy array")))
        if isinstance(state, ast.Name):
            for value in assigned.get(state.id, []):
                dtype = _int_dtype_keyword(value, source)
                if dtype is not None:
                    edits.append((dtype, "np.float64", Repair(
                        "float_state_dtype", dtype.lineno,
                        f"`{state.id}` is made with dtype np.float64 (an integer dtype "
                        "truncated the values written into it)")))
        if _is_int_literal(reward):
            edits.append((reward, f"{float(reward.value)!r}", Repair(
                "reward_as_float", reward.lineno, "the reward is returned as a float")))
        if _is_int_literal(done) and done.value in (0, 1):
            edits.append((done, str(bool(done.value)), Repair(
                "done_as_bool", done.lineno, "done is returned as a bool")))
    if not edits:
        return source, []
    unique: dict[tuple, tuple[ast.AST, str, Repair]] = {}
    for node, text, rep in edits:
        unique.setdefault((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset),
                          (node, text, rep))
    new = _apply_edits(source, list(unique.values()))
    try:
        ast.parse(new)
    except SyntaxError:  # never hand back a program that no longer parses
        return source, []
    return new, [rep for _, _, rep in sorted(unique.values(), key=lambda e: (e[0].lineno, e[0].col_offset))]


def _assignments(step: ast.FunctionDef) -> dict[str, list[ast.AST]]:
    """The values each plain name is assigned in `step`'s own body (``=``, ``+=``, ``x: T =``)."""
    from codeworld.synthesis._checks import own_nodes

    assigned: dict[str, list[ast.AST]] = {}
    for node in own_nodes(step):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, []).append(node.value)
    return assigned


def _repair_float_indices(source: str) -> tuple[str, list[Repair]]:
    """An index into a list or tuple made from the state's values, which are floats (a
    `TypeError` when the list is indexed), is taken with ``int(round(...))``: the state's
    components read with ``float(state[i])`` or ``state[i]``, and arithmetic of them with whole
    numbers, indexing a name assigned a list or tuple display."""
    found = step_function(source)
    if found is None:
        return source, []
    tree, step = found
    from codeworld.synthesis._checks import own_nodes

    def reads_state(value: ast.AST) -> bool:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
                value.func.id == "float" and len(value.args) == 1:
            value = value.args[0]
        return (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)
                and value.value.id == "state")

    sequences = {t.id for node in tree.body + list(own_nodes(step)) if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)
                 and isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp))}
    assigned = _assignments(step)
    floats = {name for name, values in assigned.items() if all(reads_state(v) for v in values)}

    def float_valued(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in floats
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            sides = (node.left, node.right)
            return (any(float_valued(x) for x in sides)
                    and all(float_valued(x) or _is_int_literal(x) for x in sides))
        return False

    edits: list[tuple[ast.AST, str, Repair]] = []
    for node in ast.walk(step):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id in sequences and float_valued(node.slice)):
            text = ast.get_source_segment(source, node.slice)
            if text is not None:
                edits.append((node.slice, f"int(round({text}))", Repair(
                    "int_index", node.slice.lineno,
                    f"`{node.value.id}[{text}]` is indexed with int(round(...)): the state's "
                    "values are floats")))
    new = _edited(source, edits)
    return (source, []) if new is None else (new, [rep for _, _, rep in edits])


def _is_int_literal(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, int)
            and not isinstance(node.value, bool))


def _is_sequence(node: ast.AST, assigned: dict[str, list[ast.AST]]) -> bool:
    """A list or tuple display (or comprehension), or a name only ever assigned one."""
    def literal(value: ast.AST) -> bool:
        if isinstance(value, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id in ("list", "tuple"))

    if literal(node):
        return True
    if isinstance(node, ast.Name):
        values = assigned.get(node.id, [])
        return bool(values) and all(literal(v) for v in values)
    return False


def _int_dtype_keyword(value: ast.AST, source: str) -> ast.AST | None:
    """The ``dtype=`` value of ``np.zeros(..., dtype=int)``-like calls with an integer dtype."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in _ARRAY_MAKERS and isinstance(value.func.value, ast.Name)
            and value.func.value.id in ("np", "numpy")):
        return None
    for kw in value.keywords:
        if kw.arg == "dtype" and (ast.get_source_segment(source, kw.value) or "").replace(" ", "") in _INT_DTYPES:
            return kw.value
    return None


def _apply_edits(source: str, edits: list[tuple[ast.AST, str, Repair]]) -> str:
    """Replace each node's source span with its new text (spans do not overlap)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")

    def pos(line: int, col: int) -> int:  # ast columns are UTF-8 byte offsets
        return offsets[line - 1] + col

    spans = sorted(((pos(n.lineno, n.col_offset), pos(n.end_lineno, n.end_col_offset), text)
                    for n, text, _ in edits), reverse=True)
    for start, end, text in spans:
        data = data[:start] + text.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def _edited(source: str, edits: list[tuple[ast.AST, str, Repair]]) -> str | None:
    """The source with `edits` made, or None when there are none or the result does not parse."""
    if not edits:
        return None
    new = _apply_edits(source, edits)
    try:
        ast.parse(new)
    except SyntaxError:
        return None
    return new


def _repair_state_alone(source: str, name: str) -> tuple[str, list[Repair]]:
    """``return state, reward, done`` in the function that returns the next state alone
    becomes ``return state``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        return source, []
    edits = []
    from codeworld.synthesis._checks import own_nodes

    for node in own_nodes(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) > 1:
            first = ast.get_source_segment(source, node.value.elts[0])
            if first is not None:
                edits.append((node.value, first, Repair(
                    "state_alone", node.lineno,
                    f"{name} returned a tuple: it returns `{first}` alone now (the next state)")))
    if not edits:
        return source, []
    return _apply_edits(source, edits), [e[2] for e in edits]


def _repair_borrowed_result(source: str, functions: tuple[str, ...]) -> tuple[str, list[Repair]]:
    """A name that the first function builds and returns (``new = copy.deepcopy(state) ...
    return new``), used but never defined in another function of the contract, which gets that
    result as its third parameter: each use reads the parameter instead. (Written as one
    function, the answer would have been right; split in two, the name is unbound.)"""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    first = defs.get(functions[0])
    if first is None:
        return source, []
    from codeworld.synthesis._checks import own_nodes, pyflakes_messages

    first_params = {a.arg for a in first.args.args}
    results = {n.value.id for n in own_nodes(first) if isinstance(n, ast.Return)
               and isinstance(n.value, ast.Name) and n.value.id not in first_params}
    # where pyflakes finds a name used that nothing defines (1-based line, 0-based column)
    undefined = {(m.lineno, m.col) for m in pyflakes_messages(tree)
                 if type(m).__name__ == "UndefinedName" and m.message_args[0] in results}
    edits = []
    for name in functions[1:]:
        fn = defs.get(name)
        if fn is None or len(fn.args.args) < 3:
            continue
        param = fn.args.args[2].arg
        for node in ast.walk(fn):
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                    and (node.lineno, node.col_offset) in undefined):
                edits.append((node, param, Repair(
                    "borrowed_result", node.lineno,
                    f"`{node.id}` in {name} is what {functions[0]} returns: {name} reads it as "
                    f"`{param}`")))
    new = _edited(source, edits)
    if new is None:
        return source, []
    seen: set[tuple[str, int]] = set()
    repairs = []
    for _, _, r in edits:  # one record a line
        if (r.detail, r.line) not in seen:
            seen.add((r.detail, r.line))
            repairs.append(r)
    return new, sorted(repairs, key=lambda r: r.line)
