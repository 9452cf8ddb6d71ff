"""Symbolic regression of one quantity from a table of inputs, where a sparse linear fit fails.

`codeworld.worlds.cwmb._relations` fits each state component's change as a sparse linear
function of a term library. That misses dynamics such as a cart-pole's accelerations (a quotient
of sines, cosines and a squared speed) or a body's joint speeds. `regress_component` searches
free-form expressions for one target instead, with Operon (the `pyoperon` package: genetic
programming over expression trees, each tree's constants tuned by Levenberg-Marquardt; chosen
over PySINDy's sparse dictionaries and gplearn by the measurement in
``benchmarks/regression_libraries.py``), then

* refits the expression's constants in float64 (Operon evaluates in float32) and writes them
  with the fewest digits that keep it as right;
* keeps it only where it lowers the error on held-out episodes of the data it was given (the
  rows of every k-th episode, as `split_buffer` splits a buffer), against a baseline;
* emits it as one plain Python expression of the inputs' names (``math`` and arithmetic only),
  so that a program written from it stays a code world model that Numba compiles.

Its time is bounded by a wall-clock budget per target (`RegressionConfig.budget_s`). The search
itself stops at a number of evaluations, so a run that ends within its budget is the same for
the same seed; one cut by the budget says so (`Expression.budget_hit`). Nothing here knows an
environment or a program: it reads arrays, names and tolerances only, and never runs generated
code (the expression is built here from the tree Operon returns).

`pyoperon` is an optional dependency (the ``regression`` extra): without it, `regress_component`
returns None and `unavailable` says why.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field

import numpy as np

from codeworld.fitting._fit import heldout_rows
from codeworld.kernels._check import values_close

LIBRARY = "pyoperon"
DEFAULT_BUDGET_S = 10.0
_DIGITS = (4, 6, 8, 10, 12, 17)  # significant digits tried when writing the constants


@dataclass(frozen=True)
class RegressionConfig:
    """How one target is searched.

    Attributes:
        budget_s: the wall-clock budget of one target's search, refit included (the search
            is cut when it is reached; the best expression so far is used).
        max_evaluations: the search stops after this many evaluations of a candidate (the
            deterministic bound: a search that stops here is the same for the same seed).
        population: candidates per generation.
        max_length: the most nodes (operations, inputs and constants) of an expression.
        symbols: the operations an expression may use (Operon's names; each has a plain Python
            form here: add, sub, mul, div, sin, cos, square, exp, log, sqrt, tanh, abs).
        local_iterations: Levenberg-Marquardt steps on each candidate's constants.
        heldout_fraction: the share of episodes (groups) held out to decide whether an
            expression is kept.
    """

    budget_s: float = DEFAULT_BUDGET_S
    max_evaluations: int = 500_000
    population: int = 500
    max_length: int = 40
    symbols: str = "add,sub,mul,div,sin,cos,square"
    local_iterations: int = 10
    heldout_fraction: float = 0.3

    def __post_init__(self) -> None:
        if not self.budget_s > 0:
            raise ValueError(f"budget_s must be positive, not {self.budget_s}")
        if self.max_evaluations < 1 or self.population < 2 or self.max_length < 3:
            raise ValueError("max_evaluations, population and max_length are too small")
        if not 0.0 < self.heldout_fraction < 1.0:
            raise ValueError("heldout_fraction must be between 0 and 1")
        unknown = set(self.symbols.split(",")) - set(_UNARY) - set(_NARY)
        if unknown:
            raise ValueError(f"symbols without a Python form here: {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class Expression:
    """A regressed expression and how right it is.

    Attributes:
        source: the target as one Python expression of `names` (``math`` and arithmetic only).
        names: the inputs it reads, in the order of the table's columns.
        form: ``change`` (the target is the `base` input plus the expression, an integrator
            step ``x + dt * f(...)``, written out in `source`) or ``value``.
        train_right, heldout_right: the shares of the fitted and the held-out rows it predicts
            within the tolerances.
        train_error, heldout_error: its mean squared errors there.
        baseline_error, baseline_right: the baseline's held-out error and share right.
        seconds: wall time spent on this target; budget_s: its budget; budget_hit: the search
            was cut by the budget (the result may then differ between runs of the same seed).
        n_train, n_heldout: rows fitted and held out.
        library: what searched.
    """

    source: str
    names: tuple[str, ...]
    form: str
    train_right: float
    heldout_right: float
    train_error: float
    heldout_error: float
    baseline_error: float
    baseline_right: float
    seconds: float
    budget_s: float
    budget_hit: bool = False
    n_train: int = 0
    n_heldout: int = 0
    library: str = LIBRARY
    template: str = field(default="", repr=False, compare=False)
    columns: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def function(self, name: str = "regressed") -> str:
        """The expression as the source of a function of its inputs (a module needs
        ``import math``); the names must be identifiers."""
        return f"def {name}({', '.join(self.names)}):\n    return {self.source}\n"

    def predict(self, inputs, names) -> np.ndarray:
        """The expression's values on a table of inputs (columns named by `names`, which must
        include every name it reads), in float64."""
        x = np.asarray(inputs, dtype=np.float64)
        names = list(names)
        xs = [x[:, names.index(name)] for name in self.columns]
        with np.errstate(all="ignore"):
            out = _vectorized(self.template, len(xs))((), *xs)
        return np.broadcast_to(np.asarray(out, dtype=np.float64), (x.shape[0],)).copy()

    def to_json(self) -> dict:
        return {"source": self.source, "names": list(self.names), "form": self.form,
                "train_right": self.train_right, "heldout_right": self.heldout_right,
                "train_error": self.train_error, "heldout_error": self.heldout_error,
                "baseline_error": self.baseline_error, "baseline_right": self.baseline_right,
                "seconds": round(self.seconds, 3), "budget_s": self.budget_s,
                "budget_hit": self.budget_hit, "n_train": self.n_train,
                "n_heldout": self.n_heldout, "library": self.library}


def unavailable() -> str | None:
    """Why symbolic regression cannot run here (None when it can)."""
    try:
        import pyoperon.sklearn  # noqa: F401
    except ImportError:
        return ("symbolic regression skipped: pyoperon is not installed "
                "(pip install 'codeworld[regression]')")
    return None


def regress_component(inputs, names, target, *, atol: float, rtol: float,
                      budget_s: float | None = None, seed: int = 0, base: int | None = None,
                      groups=None, baseline=None,
                      config: RegressionConfig | None = None) -> Expression | None:
    """Search an expression of `inputs` for `target`, kept only where it beats `baseline` on
    held-out groups.

    Args:
        inputs: ``(N, k)`` the candidate inputs (e.g. the old state, the action, the new values
            of components already known).
        names: ``k`` Python expressions that stand for the columns in the emitted source
            (``theta``, ``new_v``, ``action``, ``action[0]``).
        target: ``(N,)`` the values to predict (e.g. a component's new value).
        atol, rtol: a prediction is right when ``|pred - target| <= atol + rtol * |target|``.
        budget_s: the wall-clock budget (default `config.budget_s`).
        seed: the search's seed.
        base: the column the target moves from (the component's old value): the expression
            is then searched for the change, ``target - inputs[:, base]``, the integrator form.
        groups: ``(N,)`` the episode of each row, for the held-out split (default: the last
            rows are held out).
        baseline: ``(N,)`` the prediction to beat (e.g. the linear fit's); default the `base`
            column (unchanged), or the target's mean on the fitted rows.
        config: the search's settings (`RegressionConfig`).

    Returns:
        The `Expression`, or None: regression unavailable (`unavailable`), too few rows, or no
        expression whose held-out error is below the baseline's without being right on fewer
        held-out rows. The same question asked again (in this process, or on this machine:
        the user cache) gets the same answer without a second search.
    """
    config = config or RegressionConfig()
    budget = float(config.budget_s if budget_s is None else budget_s)
    if not budget > 0:
        raise ValueError(f"budget_s must be positive, not {budget}")
    x = np.asarray(inputs, dtype=np.float64)
    y = np.asarray(target, dtype=np.float64).reshape(-1)
    names = tuple(str(name) for name in names)
    if x.ndim != 2 or x.shape[0] != len(y) or x.shape[1] != len(names):
        raise ValueError(f"inputs {x.shape}, {len(names)} names and target {y.shape} disagree")
    if unavailable() is not None or len(y) < 8:
        return None
    key = hashlib.sha256(repr((_FORMAT, _version(), names, atol, rtol, budget, seed, base,
                               config)).encode())
    for array in (x, y, groups, baseline):
        key.update(b"|" if array is None else np.ascontiguousarray(array).tobytes())
    digest = key.hexdigest()
    if digest not in _ANSWERS:
        found, answer = _load(digest)
        if not found:
            answer = _regress(x, names, y, atol=atol, rtol=rtol, budget=budget, seed=seed,
                              base=base, groups=groups, baseline=baseline, config=config)
            _store(digest, answer)
        if len(_ANSWERS) >= _MAX_ANSWERS:
            _ANSWERS.pop(next(iter(_ANSWERS)))
        _ANSWERS[digest] = answer
    return _ANSWERS[digest]


# Answers already given: in this process, and on disk in the user cache (``regression/``), so
# that a resumed run or a rebuilt world states the same rules even where a search was cut by its
# budget (`Expression.budget_hit`). A new library version or format asks again.
_ANSWERS: dict[str, Expression | None] = {}
_MAX_ANSWERS = 256
_FORMAT = 1


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyoperon")
    except PackageNotFoundError:
        return ""


def _cache_file(digest: str):
    from codeworld._paths import cache_root

    return cache_root() / "regression" / f"{digest}.json"


def _load(digest: str) -> tuple[bool, Expression | None]:
    """(found, answer) from the disk cache; an unreadable entry is not found."""
    try:
        data = json.loads(_cache_file(digest).read_text())
        if data is None:
            return True, None
        return True, Expression(**{**data, "names": tuple(data["names"]),
                                   "columns": tuple(data["columns"])})
    except (OSError, ValueError, TypeError, KeyError):
        return False, None


def _store(digest: str, answer: Expression | None) -> None:
    """Writes an answer to the disk cache (atomically; a cache that cannot be written is
    skipped)."""
    path = _cache_file(digest)
    data = None if answer is None else {**answer.to_json(), "seconds": answer.seconds,
                                        "template": answer.template,
                                        "columns": list(answer.columns)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass


def _regress(x: np.ndarray, names: tuple[str, ...], y: np.ndarray, *, atol: float, rtol: float,
             budget: float, seed: int, base: int | None, groups, baseline,
             config: RegressionConfig) -> Expression | None:
    """One search (`regress_component` without the remembered answers)."""
    started = time.perf_counter()
    finite = np.isfinite(x).all(axis=1) & np.isfinite(y)
    held = heldout_rows(np.zeros(len(y)) if groups is None else groups, config.heldout_fraction)
    fitted, held = ~held & finite, held & finite
    if fitted.sum() < 4 or held.sum() < 1:
        return None
    offset = x[:, base] if base is not None else np.zeros_like(y)
    if baseline is None:
        baseline = offset if base is not None else np.full_like(y, float(np.mean(y[fitted])))
    baseline = np.asarray(baseline, dtype=np.float64).reshape(-1)
    used = [j for j in range(x.shape[1]) if np.ptp(x[fitted, j]) > 0]
    if not used:
        return None
    trees, columns, hit = _search(x[fitted][:, used], (y - offset)[fitted], config, budget, seed)
    cols = used + ([base] if base is not None and base not in used else [])
    xs = [x[:, j] for j in cols]

    def share(pred: np.ndarray, rows: np.ndarray) -> float:
        return float(np.mean(values_close(pred[rows], y[rows], atol, rtol)))

    best = None  # (rank, template, predict, values)
    deadline = started + budget
    # the front of accuracy against length, the most accurate first: each refitted (while the
    # budget lasts), the best kept
    for tree in trees:
        if time.perf_counter() > deadline and best is not None:
            hit = True
            break
        body, values = _emit(tree, columns)
        template = (f"{{x{cols.index(base)}}} + " if base is not None else "") + body
        evaluate = _vectorized(template, len(cols))

        def predict(c, evaluate=evaluate) -> np.ndarray:
            with np.errstate(all="ignore"):
                return np.broadcast_to(evaluate(np.asarray(c, dtype=np.float64), *xs), y.shape)

        values = _refit(predict, values, y, fitted)
        pred = predict(values)
        if not np.isfinite(pred[finite]).all():
            continue
        right, error = share(pred, fitted), float(np.mean((pred[fitted] - y[fitted]) ** 2))
        # right on more fitted rows first; of those right on all, the shortest; else the closest
        rank = (right, -len(tree.Nodes) if right >= 1.0 else -error)
        if best is None or rank > best[0]:
            best = (rank, template, predict, values)
    if best is None:
        return None
    _, template, predict, values = best
    written = _written(template, _shortest(predict, values, y, fitted, share))
    with np.errstate(all="ignore"):  # judged as written
        pred = np.broadcast_to(_vectorized(written, len(cols))((), *xs), y.shape)
    err = (pred - y) ** 2
    base_err = float(np.mean((baseline[held] - y[held]) ** 2))
    read = [k for k in range(len(cols)) if f"{{x{k}}}" in written]
    expression = Expression(
        source=written.format(**{f"x{k}": names[j] for k, j in enumerate(cols)}),
        names=tuple(names[cols[k]] for k in read), form="change" if base is not None else "value",
        train_right=share(pred, fitted), heldout_right=share(pred, held),
        train_error=float(err[fitted].mean()), heldout_error=float(err[held].mean()),
        baseline_error=base_err, baseline_right=share(baseline, held),
        seconds=time.perf_counter() - started, budget_s=budget, budget_hit=hit,
        n_train=int(fitted.sum()), n_heldout=int(held.sum()), template=written,
        columns=tuple(names[j] for j in cols))
    if not (np.isfinite(pred[finite]).all() and expression.heldout_error < base_err
            and expression.heldout_right >= expression.baseline_right):
        return None
    return expression


def _search(x: np.ndarray, y: np.ndarray, config: RegressionConfig, budget: float, seed: int):
    """Operon's front of trees for ``y`` from the columns of ``x`` (scale and offset included),
    two objectives: accuracy (R squared) and length. Operon evaluates in float32, where many
    trees look equally right; the shorter ones on the front are more often the true law.

    Returns:
        (the trees, the column of each variable hash, whether the budget cut the search)
    """
    from pyoperon.sklearn import SymbolicRegressor

    started = time.perf_counter()
    limit = max(1, int(math.floor(0.7 * budget)))  # the rest: refits and checks
    search = SymbolicRegressor(
        allowed_symbols=config.symbols + ",constant,variable", population_size=config.population,
        max_evaluations=config.max_evaluations, generations=10 ** 6,
        optimizer_iterations=config.local_iterations, max_length=config.max_length,
        n_threads=1, random_state=int(seed) % 2 ** 63, objectives=["r2", "length"],
        epsilon=1e-14, max_time=limit)
    search.fit(np.asfortranarray(x), y)
    hit = time.perf_counter() - started >= limit - 0.05
    columns = {h: k for k, h in enumerate(search.variables_)}
    front = sorted(search.pareto_front_, key=lambda m: (m["mean_squared_error"], m["length"]))
    return [m["tree"] for m in front], columns, hit


# Each operation's Python form: a unary one wraps its argument, an n-ary one joins its operands.
_UNARY = {"sin": "math.sin({})", "cos": "math.cos({})", "exp": "math.exp({})",
          "log": "math.log({})", "sqrt": "math.sqrt({})", "tanh": "math.tanh({})",
          "abs": "abs({})", "square": "({})**2"}
_NARY = {"add": " + ", "sub": " - ", "mul": " * ", "div": " / "}


def _emit(tree, columns: dict) -> tuple[str, list[float]]:
    """The tree (postfix nodes, each operation after its operands, the first operand nearest)
    as an expression whose constants are ``{c0}``, ``{c1}``, ... and inputs ``{x0}``, ...,
    with the constants' values."""
    nodes = list(tree.Nodes)
    values: list[float] = []

    def constant(value: float) -> str:
        values.append(float(value))
        return f"{{c{len(values) - 1}}}"

    def emit(i: int) -> str:
        node = nodes[i]
        kind = str(node.Type).rsplit(".", 1)[-1].lower()
        if node.IsVariable:
            column = columns[node.HashValue]
            return f"{constant(node.Value)}*{{x{column}}}"
        if node.IsConstant:
            return constant(node.Value)
        operands, j = [], i - 1
        for _ in range(node.Arity):
            operands.append(emit(j))
            j -= nodes[j].Length + 1
        if kind in _UNARY and node.Arity == 1:
            return _UNARY[kind].format(operands[0])
        if kind in ("sub", "div") and node.Arity == 1:
            return f"(-{operands[0]})" if kind == "sub" else f"(1.0 / {operands[0]})"
        if kind in _NARY:
            return "(" + _NARY[kind].join(operands) + ")"
        raise ValueError(f"operation {kind!r} has no Python form here")

    return emit(len(nodes) - 1), values


def _vectorized(template: str, n_inputs: int):
    """A function ``f(c, x0, x1, ...)`` that evaluates `template` on arrays (``math`` read as
    numpy). The text is built here from a tree, never taken from a program."""
    body = template.format(**{f"c{k}": f"c[{k}]" for k in range(template.count("{c"))},
                           **{f"x{k}": f"x{k}" for k in range(n_inputs)})
    args = ", ".join(["c"] + [f"x{k}" for k in range(n_inputs)])
    namespace = {"math": np, "abs": np.abs, "__builtins__": {}}
    return eval(f"lambda {args}: {body}", namespace)  # noqa: S307


def _refit(predict, values: list[float], y: np.ndarray, rows: np.ndarray) -> list[float]:
    """The constants refitted in float64 by least squares on `rows` (kept when the error falls)."""
    from scipy.optimize import least_squares

    if not values:
        return values
    start = np.asarray(values, dtype=np.float64)

    def residuals(c):
        r = predict(c)[rows] - y[rows]
        return np.where(np.isfinite(r), r, 1e6)

    before = float(np.sum(residuals(start) ** 2))
    try:
        found = least_squares(residuals, start, method="lm", max_nfev=50 * (len(start) + 1),
                              xtol=1e-15, ftol=1e-15, gtol=1e-15)
    except (ValueError, np.linalg.LinAlgError):
        return values
    after = float(np.sum(residuals(found.x) ** 2))
    return [float(v) for v in found.x] if np.isfinite(after) and after < before else values


def _shortest(predict, values: list[float], y: np.ndarray, rows: np.ndarray, share) -> list[float]:
    """The constants with the fewest significant digits (of `_DIGITS`), those below 1e-12 of
    the largest written as 0, that keep the share of `rows` right and the squared error within
    1% (or within a millionth of the target's squared scale)."""
    full = predict(values)
    right = share(full, rows)
    allowed = (float(np.mean((full[rows] - y[rows]) ** 2)) * 1.01
               + 1e-12 * float(np.mean(y[rows] ** 2)))
    largest = max((abs(v) for v in values), default=0.0)
    for digits in _DIGITS:
        short = [0.0 if abs(v) < 1e-12 * largest else float(f"{v:.{digits}g}") for v in values]
        pred = predict(short)
        if float(np.mean((pred[rows] - y[rows]) ** 2)) <= allowed and share(pred, rows) >= right:
            return short
    return values


class _Keep(dict):
    """Format fields not given stay as they are (``{x0}``)."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _written(template: str, values: list[float]) -> str:
    """The template with its constants written out (its inputs still ``{x0}``, ...), tidied:
    a multiplication by one dropped, an added zero dropped, a factor of minus one a minus."""
    def number(v: float) -> str:
        text = repr(float(v))
        text = text[:-2] if text.endswith(".0") and abs(v) < 1e15 else text
        return f"({text})" if v < 0 else text

    text = template.format_map(_Keep({f"c{k}": number(v) for k, v in enumerate(values)}))
    text = re.sub(r"(?<![\w.])1\*(?=[{(])", "", text)
    text = re.sub(r"\(0 \+ ", "(", text)
    text = re.sub(r" \+ 0\)", ")", text)
    return re.sub(r"\(-1\)\*(?=[{(])", "-", text)
