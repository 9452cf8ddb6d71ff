"""Mechanical ports: rewrites that let Numba compile a correct program, without changing what it
predicts.

Pure `ast` on program text: nothing here runs the program, so it is safe in the parent process.
Each rewrite is general (it knows nothing of any environment) and named in the port's record:

* ``class_to_function``: the paper's ``class Environment`` (``set_state`` then ``step``) becomes a
  ``step(state, action)`` function: attributes set only in ``__init__`` become module constants,
  attributes set in ``set_state`` or ``step`` become local variables, methods that set no
  attribute become module functions. Programs outside that shape are left alone.
* ``array_copies``: ``np.array(x, dtype=D)`` of an array ``x`` (which Numba cannot type) becomes
  ``np.asarray(x).astype(D)``, the same copy.
* ``jit_helpers``: module-level functions other than ``step`` are compiled too (``numba.njit``),
  so that a compiled ``step`` can call them.
* ``global_lists_to_arrays``: a module-level list or tuple of numbers that nothing mutates
  becomes a numpy array (Numba cannot read global lists).
* ``builtin_dtypes``: ``dtype=float`` / ``int`` / ``bool`` become numpy's ``float64`` / ``int64`` /
  ``bool_``.

A port is only a candidate: `codeworld._speed` keeps it only when it predicts exactly as the
original on every transition of the buffer.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

CLASS_PREFIX = "_Environment_"
STATE_PREFIX = "self_"


@dataclass
class Port:
    """A candidate port: the rewritten program and the rewrites that made it."""

    source: str
    rewrites: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.rewrites)


def _self_attr(node: ast.AST) -> str | None:
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "self"):
        return node.attr
    return None


def _assigned_attrs(fn: ast.FunctionDef) -> set[str]:
    out = set()
    for node in ast.walk(fn):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                name = _self_attr(sub)
                if name is not None and isinstance(sub.ctx, ast.Store):
                    out.add(name)
        # a mutated attribute (self.x[0] = ..., self.x.append(...)) is state too
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            name = _self_attr(node.value)
            if name is not None:
                out.add(name)
    return out


class _SelfRewriter(ast.NodeTransformer):
    """self.X -> local or module name; self.m(...) -> module function; any other self: refuse."""

    def __init__(self, constants: set[str], state: set[str], methods: set[str]):
        self.constants, self.state, self.methods = constants, state, methods
        self.failed = False

    def visit_Call(self, node: ast.Call):
        name = _self_attr(node.func)
        if name is not None and name in self.methods:
            node.func = ast.Name(CLASS_PREFIX + name, ast.Load())
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        name = _self_attr(node)
        if name is None:
            return self.generic_visit(node)
        if name in self.state:
            return ast.copy_location(ast.Name(STATE_PREFIX + name, node.ctx), node)
        if name in self.constants and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(CLASS_PREFIX + name, ast.Load()), node)
        self.failed = True
        return node

    def visit_Name(self, node: ast.Name):
        if node.id == "self":
            self.failed = True
        return node


def _class_to_function(tree: ast.Module) -> bool:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Environment"]
    if len(classes) != 1 or any(isinstance(n, ast.FunctionDef) and n.name == "step" for n in tree.body):
        return False
    cls = classes[0]
    if cls.bases or cls.decorator_list or cls.keywords:
        return False
    methods = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            methods[node.name] = node
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return False  # class attributes, properties, nested classes: not this rewrite's shape
    if "set_state" not in methods or "step" not in methods:
        return False
    init = methods.get("__init__")
    set_state, step = methods["set_state"], methods["step"]
    for fn in (set_state, step):
        if len(fn.args.args) != 2 or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
            return False
    helpers = {name: fn for name, fn in methods.items() if name not in ("__init__", "set_state", "step")}
    if any(_assigned_attrs(fn) for fn in helpers.values()):
        return False
    state = _assigned_attrs(set_state) | _assigned_attrs(step)
    init_values: dict[str, ast.expr] = {}
    if init is not None:
        for stmt in init.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and _self_attr(stmt.targets[0]) is not None):
                return False
            init_values[_self_attr(stmt.targets[0])] = stmt.value
    constants = set(init_values) - state
    init_params = set()
    if init is not None:
        init_params = {a.arg for a in init.args.args[1:] + init.args.kwonlyargs}

    def reads_init_params(expr: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id in init_params for n in ast.walk(expr))

    set_in_set_state = {_self_attr(s.targets[0]) for s in set_state.body
                        if isinstance(s, ast.Assign) and len(s.targets) == 1
                        and _self_attr(s.targets[0]) is not None}
    rewriter = _SelfRewriter(constants, state, set(helpers))
    new_body: list[ast.stmt] = []
    # Constants, in __init__'s order.
    for name, value in init_values.items():
        if name in constants:
            if reads_init_params(value):
                return False
            new_body.append(ast.Assign([ast.Name(CLASS_PREFIX + name, ast.Store())],
                                       rewriter.visit(copy.deepcopy(value))))
    for name, fn in helpers.items():
        if not fn.args.args or fn.args.args[0].arg != "self":
            return False
        fn = copy.deepcopy(fn)
        fn.name = CLASS_PREFIX + name
        fn.args.args = fn.args.args[1:]
        fn.body = [rewriter.visit(s) for s in fn.body]
        new_body.append(fn)
    body: list[ast.stmt] = [
        ast.Assign([ast.Name(set_state.args.args[1].arg, ast.Store())], ast.Name("_cw_state", ast.Load())),
    ]
    # State attributes that step may read before set_state or step sets them start from __init__.
    for name in sorted(state - set_in_set_state):
        value = init_values.get(name)
        if value is None or reads_init_params(value):
            return False
        body.append(ast.Assign([ast.Name(STATE_PREFIX + name, ast.Store())],
                               rewriter.visit(copy.deepcopy(value))))
    body += [rewriter.visit(copy.deepcopy(s)) for s in set_state.body]
    body.append(ast.Assign([ast.Name(step.args.args[1].arg, ast.Store())],
                           ast.Name("_cw_action", ast.Load())))
    body += [rewriter.visit(copy.deepcopy(s)) for s in step.body]
    if rewriter.failed or any(isinstance(n, ast.Return) and n.value is not None
                              for s in set_state.body for n in ast.walk(s)):
        return False
    function = ast.FunctionDef(
        name="step",
        args=ast.arguments(posonlyargs=[], args=[ast.arg("_cw_state"), ast.arg("_cw_action")],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body, decorator_list=[], returns=None, type_params=[])
    index = tree.body.index(cls)
    tree.body[index:index + 1] = new_body + [function]
    return True


def _mutated_names(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name):
                out.add(node.value.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name)):
            out.add(node.func.value.id)  # a method call may mutate: leave the name alone
        elif isinstance(node, ast.Global):
            out.update(node.names)
    return out


def _global_lists_to_arrays(tree: ast.Module) -> bool:
    mutated = _mutated_names(tree)
    changed = False
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            continue
        value = stmt.value
        if not isinstance(value, (ast.List, ast.Tuple)) or not value.elts:
            continue
        if stmt.targets[0].id in mutated:
            continue

        def numeric(node: ast.expr) -> bool:
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
                node = node.operand
            if isinstance(node, (ast.List, ast.Tuple)):
                return bool(node.elts) and all(numeric(e) for e in node.elts)
            return (isinstance(node, ast.Constant) and type(node.value) in (int, float))

        if not all(numeric(e) for e in value.elts):
            continue
        as_list = ast.List([copy.deepcopy(e) for e in value.elts], ast.Load())
        stmt.value = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "array", ast.Load()),
                              [as_list], [ast.keyword("dtype", ast.Attribute(
                                  ast.Name("np", ast.Load()), "float64", ast.Load()))])
        changed = True
    return changed


_DTYPES = {"float": "float64", "int": "int64", "bool": "bool_"}


def _builtin_dtypes(tree: ast.Module) -> bool:
    changed = False
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "dtype" and isinstance(node.value, ast.Name):
            if node.value.id in _DTYPES:
                node.value = ast.Attribute(ast.Name("np", ast.Load()), _DTYPES[node.value.id], ast.Load())
                changed = True
    return changed


def _numpy_aliases(tree: ast.Module) -> set[str]:
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
            for a in n.names if a.name == "numpy"}


def _array_copies(tree: ast.Module) -> bool:
    """``np.array(x, dtype=D)`` of a non-literal ``x`` -> ``np.asarray(x).astype(D)`` (a copy)."""
    aliases = _numpy_aliases(tree)
    changed = False
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "array" and isinstance(node.func.value, ast.Name)
                and node.func.value.id in aliases and len(node.args) == 1
                and len(node.keywords) == 1 and node.keywords[0].arg == "dtype"
                and not isinstance(node.args[0], (ast.List, ast.Tuple, ast.ListComp))):
            continue
        alias = node.func.value.id
        inner = ast.Call(ast.Attribute(ast.Name(alias, ast.Load()), "asarray", ast.Load()),
                         [node.args[0]], [])
        node.func = ast.Attribute(inner, "astype", ast.Load())
        node.args = [node.keywords[0].value]
        node.keywords = []
        changed = True
    return changed


def _jit_helpers(tree: ast.Module) -> bool:
    changed = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name != "step" and not node.decorator_list:
            node.decorator_list = [ast.Attribute(ast.Name("_cw_numba", ast.Load()), "njit", ast.Load())]
            changed = True
    return changed


def _ensure_import(tree: ast.Module, module: str, alias: str) -> None:
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name == module and (a.asname or a.name) == alias
                                                for a in node.names):
            return
    index = 0
    while index < len(tree.body) and isinstance(tree.body[index], (ast.Import, ast.ImportFrom, ast.Expr)):
        index += 1
    tree.body.insert(index, ast.Import([ast.alias(module, None if module == alias else alias)]))


def mechanical_port(source: str) -> Port:
    """The program with every applicable mechanical rewrite (see the module docstring).

    Returns a `Port` whose ``rewrites`` is empty when nothing applied (or the program does not
    parse); its ``source`` is then the original.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return Port(source)
    rewrites = []
    if _class_to_function(tree):
        rewrites.append("class_to_function")
    if _global_lists_to_arrays(tree):
        rewrites.append("global_lists_to_arrays")
    if _builtin_dtypes(tree):
        rewrites.append("builtin_dtypes")
    if _array_copies(tree):
        rewrites.append("array_copies")
    if _jit_helpers(tree):
        rewrites.append("jit_helpers")
        _ensure_import(tree, "numba", "_cw_numba")
    if not rewrites:
        return Port(source)
    if any(r in rewrites for r in ("global_lists_to_arrays", "builtin_dtypes")):
        _ensure_import(tree, "numpy", "np")
    ast.fix_missing_locations(tree)
    return Port(ast.unparse(tree) + "\n", rewrites)
