"""Static checks of a CWMB world-model program against its contract, before anything runs it.

Most programs a small model writes fail on their first transition for reasons of form that can be
read off the source: the state unpacked into more names than it has numbers, an index past its
end, an int action indexed like an array, state kept between calls, no ``step`` at all.
`static_problems` finds these (and the checks that fit any program,
`codeworld.synthesis._checks.code_problems`) with `ast` and pyflakes only (the program is
untrusted: nothing here executes it) and says each in a sentence the *fix* prompt can show.
"""

from __future__ import annotations

import ast

from codeworld._model import CLASS, ModelSourceError, check_model_source
from codeworld.synthesis._checks import StaticProblem, code_problems, own_nodes, unique_problems

_GLOBAL_MESSAGE = ("this keeps state between calls, but a world model's step is pure (the same "
                   "state and action always give the same answer, whatever was called before): "
                   "read everything from `state` and `action`, and return every new value")


def _globals(tree: ast.AST) -> list[StaticProblem]:
    """``global`` and ``nonlocal`` statements: state kept outside the arguments."""
    return [StaticProblem(node.lineno, _GLOBAL_MESSAGE, "global") for node in ast.walk(tree)
            if isinstance(node, (ast.Global, ast.Nonlocal))]


def static_problems(source: str, *, state_dim: int, discrete: bool, action_dim: int = 1,
                    n_actions: int = 0, max_problems: int = 5) -> list[StaticProblem]:
    """The problems static checks find in a world-model program (empty when none).

    Args:
        source: the program.
        state_dim: the number of values in the state.
        discrete: whether the action is an int (else a float64 array of ``action_dim``).
        action_dim: the length of a continuous action.
        n_actions: the number of discrete actions (for the messages).
        max_problems: report at most this many.
    """
    try:
        info = check_model_source(source)
    except ModelSourceError as exc:
        message = str(exc)
        if exc.line is not None and message.startswith(f"line {exc.line}: "):
            message = message[len(f"line {exc.line}: "):]
        return [StaticProblem(exc.line, message, "no_model")]
    tree = ast.parse(source)
    problems = code_problems(tree) + _globals(tree)
    state_fn, state_param, action_fn, action_param = _contract_params(tree, info.form)
    n_word = f"exactly {state_dim} number{'s' if state_dim != 1 else ''}"
    if state_fn is not None and state_param and not _rebinds(state_fn, state_param):
        for node in own_nodes(state_fn):
            count = _unpacked_count(node, state_param)
            if count is not None and count != state_dim:
                problems.append(StaticProblem(node.lineno, (
                    f"this unpacks the state into {count} names, but the state holds {n_word}"
                    + (" (one number that encodes the whole state)" if state_dim == 1 else "")),
                    "state_unpacking"))
            index = _constant_index(node, state_param)
            if index is not None and not -state_dim <= index < state_dim:
                valid = (f"only {state_param}[0] exists" if state_dim == 1 else
                         f"{state_param}[0] to {state_param}[{state_dim - 1}]")
                problems.append(StaticProblem(node.lineno, (
                    f"{state_param}[{index}] is past the end of the state, which holds {n_word} "
                    f"({valid})"), "state_index"))
    if action_fn is not None and action_param and not _rebinds(action_fn, action_param):
        for node in own_nodes(action_fn):
            if discrete:
                if (_constant_index(node, action_param) is not None
                        or _is_subscript_of(node, action_param)
                        or _unpacked_count(node, action_param) is not None):
                    problems.append(StaticProblem(node.lineno, (
                        f"the action is a plain int (0..{max(n_actions - 1, 0)}), not an array: "
                        f"use `{action_param}` itself, not `{action_param}[...]` or unpacking"),
                        "action_form"))
            else:
                index = _constant_index(node, action_param)
                if index is not None and not -action_dim <= index < action_dim:
                    problems.append(StaticProblem(node.lineno, (
                        f"{action_param}[{index}] is past the end of the action, which holds "
                        f"{action_dim} value{'s' if action_dim != 1 else ''}"), "action_form"))
                count = _unpacked_count(node, action_param)
                if count is not None and count != action_dim:
                    problems.append(StaticProblem(node.lineno, (
                        f"this unpacks the action into {count} names, but it holds {action_dim} "
                        f"value{'s' if action_dim != 1 else ''}"), "action_form"))
    return unique_problems(problems, max_problems)



# ------------------------------------------------------------------------------------ helpers


def _contract_params(tree: ast.Module, form: str):
    """(function reading the state, its state parameter, function reading the action, its
    action parameter): ``step(state, action)``, or the class form's ``set_state(self, state)``
    and ``step(self, action)``."""
    def params(fn):
        args = list(fn.args.posonlyargs) + list(fn.args.args)
        return [a.arg for a in args]

    if form == CLASS:
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment")
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        set_state, step = methods.get("set_state"), methods.get("step")
        sp = params(set_state)[1] if set_state and len(params(set_state)) > 1 else None
        ap = params(step)[1] if step and len(params(step)) > 1 else None
        return set_state, sp, step, ap
    step = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "step")
    names = params(step)
    return (step, names[0] if names else None, step, names[1] if len(names) > 1 else None)


def _rebinds(fn: ast.FunctionDef, name: str) -> bool:
    """Whether the function assigns to ``name`` (then its form is no longer the parameter's)."""
    for node in own_nodes(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
    return False


def _unwrap(value: ast.AST) -> ast.AST:
    """``x`` from ``list(x)``, ``tuple(x)``, ``np.array(x)``, ``np.asarray(x)``, ``x.tolist()``,
    ``x.flatten()``, ``x.ravel()`` (the same values, so the same count)."""
    if isinstance(value, ast.Call):
        fn = value.func
        if (isinstance(fn, ast.Name) and fn.id in ("list", "tuple") and len(value.args) == 1):
            return _unwrap(value.args[0])
        if (isinstance(fn, ast.Attribute) and fn.attr in ("array", "asarray", "asanyarray", "copy")
                and isinstance(fn.value, ast.Name) and fn.value.id in ("np", "numpy") and value.args):
            return _unwrap(value.args[0])
        if (isinstance(fn, ast.Attribute) and fn.attr in ("tolist", "flatten", "ravel", "copy")
                and not value.args):
            return _unwrap(fn.value)
    return value


def _unpacked_count(node: ast.AST, name: str) -> int | None:
    """How many names an assignment or loop-free unpacking of ``name`` binds, if it is one."""
    targets: list = []
    value = None
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        targets, value = [node.targets[0]], node.value
    if value is None:
        return None
    target = targets[0]
    if not isinstance(target, (ast.Tuple, ast.List)):
        return None
    if any(isinstance(e, ast.Starred) for e in target.elts):
        return None
    source = _unwrap(value)
    if isinstance(source, ast.Name) and source.id == name:
        return len(target.elts)
    return None


def _constant_index(node: ast.AST, name: str) -> int | None:
    """``k`` for a subscript ``name[k]`` with an integer literal ``k``."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == name):
        return None
    index = node.slice
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant):
        value = index.operand.value
        return -value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool):
        return index.value
    return None


def _is_subscript_of(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == name)
