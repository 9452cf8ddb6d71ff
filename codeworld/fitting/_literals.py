"""A program's fittable numeric literals: finding them, rewriting them, parametrizing them.

Everything here reads and writes program text with `ast` only and never runs the program, so it
is safe in the parent process.

Which literals are fitted (one rule for every program, whatever it models): float literals, that
is numbers written with a decimal point or an exponent (``9.8``, ``0.02``, ``1e-3``), except

* ``0.0`` and ``1.0``, which are nearly always structural (an initial value, ``1.0 - x``, a
  constant reward of one per step);
* the exponent of ``**`` (``x ** 2.0`` is a square, not a physical constant);
* literals inside a subscript (an index or a slice);
* literals in default argument values, decorators and annotations (evaluated once, at
  definition time).

Integers and booleans are never fitted: they count, index, shape arrays and name discrete
actions. A literal's sign is not part of it (``-9.8`` is ``-`` applied to ``9.8``), so a fitted
value that changes sign is written in parentheses.
"""

from __future__ import annotations

import ast
import copy
import math
from dataclasses import dataclass

PARAM_FUNCTION = "_cw_param"


@dataclass(frozen=True)
class Literal:
    """One fittable literal of a program.

    Attributes:
        index: its position among the program's fittable literals (source order).
        value: the value written in the program.
        line: 1-based line.
        col, end_col: UTF-8 byte offsets of the literal on its line (as `ast` gives them).
        text: the literal as written.
        context: the stripped source line, for reports.
    """

    index: int
    value: float
    line: int
    col: int
    end_col: int
    text: str
    context: str

    def to_json(self) -> dict:
        return {"index": self.index, "value": self.value, "line": self.line, "text": self.text,
                "context": self.context}


def _excluded_nodes(tree: ast.AST) -> set[int]:
    """ids of Constant nodes that the rule leaves alone (see the module docstring)."""
    excluded: set[int] = set()

    def exclude(node: ast.AST | None) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant):
                excluded.add(id(sub))

    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exclude(node.right)
        elif isinstance(node, ast.Subscript):
            exclude(node.slice)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for default in list(node.args.defaults) + [d for d in node.args.kw_defaults if d]:
                exclude(default)
            if not isinstance(node, ast.Lambda):
                for decorator in node.decorator_list:
                    exclude(decorator)
                exclude(node.returns)
        elif isinstance(node, ast.arg):
            exclude(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            exclude(node.annotation)
        elif isinstance(node, ast.ClassDef):
            for decorator in node.decorator_list:
                exclude(decorator)
        elif isinstance(node, ast.JoinedStr):
            exclude(node)
    return excluded


def _is_fittable_value(value: object) -> bool:
    return (type(value) is float and math.isfinite(value) and value not in (0.0, 1.0))


def _fittable_nodes(tree: ast.AST) -> list[ast.Constant]:
    excluded = _excluded_nodes(tree)
    nodes = [n for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and _is_fittable_value(n.value) and id(n) not in excluded
             and getattr(n, "end_col_offset", None) is not None]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset))
    return nodes


def find_literals(source: str) -> list[Literal]:
    """The program's fittable literals in source order.

    Raises:
        SyntaxError: the program does not parse.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    out = []
    for index, node in enumerate(_fittable_nodes(tree)):
        if node.lineno != node.end_lineno:
            continue  # a number never spans lines; anything else is not ours to rewrite
        raw = lines[node.lineno - 1].encode("utf-8")
        text = raw[node.col_offset:node.end_col_offset].decode("utf-8")
        out.append(Literal(len(out), float(node.value), node.lineno, node.col_offset,
                           node.end_col_offset, text, lines[node.lineno - 1].strip()))
    return out


def format_value(value: float) -> str:
    """A float as program text: the shortest exact repr, in parentheses when negative."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"cannot write {value!r} into a program")
    text = repr(value)
    return f"({text})" if value < 0 or text.startswith("-") else text


def _replace_spans(source: str, spans: list[tuple[int, int, int, str]]) -> str:
    """Replace (line, col, end_col, text) byte spans, each within one line."""
    lines = source.splitlines(keepends=True)
    by_line: dict[int, list[tuple[int, int, str]]] = {}
    for line, col, end_col, text in spans:
        by_line.setdefault(line, []).append((col, end_col, text))
    for line, items in by_line.items():
        raw = lines[line - 1].encode("utf-8")
        for col, end_col, text in sorted(items, reverse=True):
            raw = raw[:col] + text.encode("utf-8") + raw[end_col:]
        lines[line - 1] = raw.decode("utf-8")
    return "".join(lines)


def rewrite_literals(source: str, literals: list[Literal], values) -> str:
    """The program with each literal replaced by its new value (formatting and comments kept).

    Args:
        source: the program the literals were found in.
        literals: literals of `source` (all of them or a subset).
        values: one new value per literal, in the same order.
    """
    values = [float(v) for v in values]
    if len(values) != len(literals):
        raise ValueError(f"{len(literals)} literals but {len(values)} values")
    spans = []
    for literal, value in zip(literals, values):
        text = literal.text if value == literal.value else format_value(value)
        spans.append((literal.line, literal.col, literal.end_col, text))
    return _replace_spans(source, spans)


def _function_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names bound inside a function (parameters, assignments, loops, imports...), not globals."""
    names = set()
    args = fn.args
    for arg in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs):
        names.add(arg.arg)
    for arg in (args.vararg, args.kwarg):
        if arg is not None:
            names.add(arg.arg)
    declared_global = set()
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                declared_global.update(node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
    return names - declared_global


class _Inline(ast.NodeTransformer):
    """Replaces reads of parameter-dependent module names by their expressions inside functions."""

    def __init__(self, exprs: dict[str, ast.expr]):
        self.exprs = exprs
        self.shadowed: list[set[str]] = []

    def _visit_function(self, node):
        self.shadowed.append(_function_locals(node))
        if isinstance(node, ast.Lambda):
            node.body = self.visit(node.body)
        else:
            node.body = [self.visit(stmt) for stmt in node.body]
        self.shadowed.pop()
        return node

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_Name(self, node: ast.Name):
        if (self.shadowed and isinstance(node.ctx, ast.Load) and node.id in self.exprs
                and not any(node.id in scope for scope in self.shadowed)):
            return ast.copy_location(copy.deepcopy(self.exprs[node.id]), node)
        return node


def parametrize(source: str, literals: list[Literal]) -> str | None:
    """The program with each literal read at run time as ``_cw_param(i)``, for the fit's fast path.

    A module-level name computed from fitted literals (``TOTAL_MASS = MASS_CART + MASS_POLE``) is
    evaluated once when the module runs; a compiled function would freeze it. So inside functions,
    reads of such names are replaced by their defining expressions, which then read the
    parameters on every call. Returns None when the program defines such a name in a way this
    cannot follow (assigned twice, by unpacking, by augmented assignment, inside a block): the
    fit then runs on the rewrite-and-reload path, which is slower but exact for every program.
    """
    spans = [(lit.line, lit.col, lit.end_col, f"{PARAM_FUNCTION}({lit.index})") for lit in literals]
    tree = ast.parse(_replace_spans(source, spans))

    def uses(node: ast.AST, names: set[str] | dict) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == PARAM_FUNCTION:
                return True
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in names:
                return True
        return False

    exprs: dict[str, ast.expr] = {}
    inliner = _Inline(exprs)
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                             ast.ImportFrom)):
            continue
        targets: list[ast.expr] = []
        value = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            targets, value = [stmt.target], stmt.value
        elif isinstance(stmt, ast.AugAssign):
            targets, value = [stmt.target], stmt.value
        bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if bound & set(exprs):
            return None  # a parameter-dependent name assigned again
        if value is not None and uses(value, exprs):
            simple = (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and len(targets) == 1
                      and isinstance(targets[0], ast.Name))
            if not simple:
                return None
            substituted = _Inline(exprs)
            substituted.shadowed.append(set())
            exprs[targets[0].id] = substituted.visit(copy.deepcopy(value))
            continue
        if not targets and uses(stmt, exprs) and not isinstance(stmt, ast.Expr):
            return None  # e.g. an `if` or a loop at module level over parameter-dependent names
    tree = inliner.visit(tree)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)
