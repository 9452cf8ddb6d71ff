"""What the recorded data says about each state component: small least-squares fits for the prompts.

A small model rarely derives an update rule from a description alone, but it copies a formula
it is shown. `find_relations` fits, for every state component, the *change* (new value minus old)
as a sparse linear function of the state's components and the action, chosen greedily (forward
selection, at most ``max_terms`` terms beside the intercept), with its coefficients rounded to a
few significant digits. Each fit is then checked the way the scorer checks a prediction: the
fraction of transitions it gets right within the environment's state tolerances. The prompts
show the fits that explain most of the change, marked exact where they are right on every
transition, so the model can write them as code and spend its effort on the rest.

For a discrete action the intercept is one number per action, written as a tuple indexed by the
action (``(-0.2, 0.2)[action]``); a continuous action's entries are candidate terms like the
state's. Nothing here knows an environment: it reads arrays, names and tolerances only.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from codeworld.kernels._check import values_close
from codeworld.scoring._scorer import most_frequent

if TYPE_CHECKING:
    from codeworld.fitting._regression import RegressionConfig

_MIN_GAIN = 0.05        # a term is added only when it removes this fraction of the remaining error
_MIN_EXACT = 0.5        # a fit right on at least this fraction of transitions is shown
_MIN_EXPLAINED = 0.9    # else it must explain this much of the change's variance (real-valued
                        # states only: an approximate rule for whole numbers misleads)
_MAX_CANDIDATES = 24    # terms tried at each step, pre-selected by correlation with the residual
_MAX_LIBRARY_DIM = 16   # states up to this size get the nonlinear terms (sin, cos, squares, ...)
_MAX_PRODUCT_DIM = 8    # ... and pairwise products up to this size
_MAX_REGRESSED = 8      # at most this many components get a symbolic regression
MANY_REWARD_VALUES = 6  # a reward of more distinct values than this gets a formula, not a list
_MAX_EXCEPTION_VALUES = 16  # an exception lists at most this many values


@dataclass(frozen=True)
class Relation:
    """One component's fitted update rule.

    Attributes:
        index: the state component.
        name: its variable name in the scaffold.
        formula: the new value as a Python expression of the names and ``action``.
        explained: the fraction of the change's variance the fit explains (1.0 for a change
            that is constant, 0 if it explains nothing).
        exact: the fraction of transitions the formula predicts within the tolerances.
        constant: the component's change is the same on every transition (0 means it never
            changes).
        exceptions: the decision list for the transitions the formula gets wrong, as prompt
            lines (whole-number rules; see `_with_exceptions`).
        cases: the same list as data: ``(values, outcome)`` pairs, in order: when the formula's
            value is one of ``values``, the new value is ``outcome`` (None: the old value).
        target: the text the line starts with (default ``new <name>``).
        pred: the formula's predictions on the transitions it was checked on.
    """

    index: int
    name: str
    formula: str
    explained: float
    exact: float
    constant: bool = False
    exceptions: tuple[str, ...] = ()
    cases: tuple[tuple[tuple[float, ...], float | None], ...] = ()
    target: str = ""
    pred: np.ndarray | None = field(default=None, compare=False, repr=False)

    def line(self) -> str:
        """The relation as one prompt line (and one line per exception)."""
        if self.exact >= 1.0:
            how = "right on every recorded transition"
        else:
            share = ("over 99.9%" if 0.999 <= self.explained < 1 else f"{self.explained:.1%}"
                     if 0.99 <= self.explained < 1 else f"{self.explained:.0%}")
            how = (f"approximate: explains {share} of the change, right within tolerance on "
                   f"{self.exact:.0%} of transitions")
        text = f"- {self.target or 'new ' + self.name} = {self.formula}  ({how})"
        if not self.target and "new_" in self.formula:
            text += "  (`new_x` is the value x has after the step: compute it first)"
        for exception in self.exceptions:
            text += f"\n  - except {exception}"
        return text


def _round(value: float, digits: int, integer: bool) -> float:
    """`value` to `digits` significant digits (to a whole number when `integer` and close)."""
    if integer and abs(value - round(value)) < 1e-6:
        return float(round(value))
    if value == 0 or not np.isfinite(value):
        return 0.0
    return float(f"{value:.{digits}g}")


def _number(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.4g}"


def _fit(design: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    return coef, float(resid @ resid)


def term_library(x: np.ndarray, names, integer: bool,
                 max_dim: int = _MAX_LIBRARY_DIM) -> tuple[list[np.ndarray], list[str]]:
    """The candidate terms of a fit beyond the components themselves: for real-valued states of
    at most `max_dim` components, ``sin``/``cos`` of each component and of its double and triple,
    its square, its absolute value and sign (where it takes both signs), and pairwise products
    (up to `_MAX_PRODUCT_DIM` components). Whole-number states get none (their rules are steps
    and exceptions). Built from the arrays and names only."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    columns: list[np.ndarray] = []
    labels: list[str] = []
    if integer or d > max_dim:
        return columns, labels
    for j in range(d):
        v, name = x[:, j], names[j]
        if np.ptp(v) == 0:
            continue
        for k in (1, 2, 3):
            arg = name if k == 1 else f"{k}*{name}"
            columns += [np.sin(k * v), np.cos(k * v)]
            labels += [f"math.sin({arg})", f"math.cos({arg})"]
        columns.append(v * v)
        labels.append(f"{name}**2")
        if v.min() < 0 < v.max():
            columns += [np.abs(v), np.sign(v)]
            labels += [f"abs({name})", f"np.sign({name})"]
    if d <= _MAX_PRODUCT_DIM:
        for j in range(d):
            for m in range(j + 1, d):
                if np.ptp(x[:, j]) and np.ptp(x[:, m]):
                    columns.append(x[:, j] * x[:, m])
                    labels.append(f"{names[j]}*{names[m]}")
    return columns, labels


def find_relations(obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, names, *,
                   discrete: bool, n_actions: int, atol: float, rtol: float,
                   mask: np.ndarray | None = None, max_terms: int = 3,
                   digits: int = 4, structure: bool = True,
                   angles: bool = False, regression: RegressionConfig | None = None,
                   episodes: np.ndarray | None = None, terms=()) -> list[Relation]:
    """Sparse linear fits of each component's change (see the module docstring).

    Args:
        obs, actions, next_obs: the recorded transitions (``(N, d)``, ``(N,)`` or ``(N, k)``,
            ``(N, d)``).
        names: one variable name per state component.
        discrete: whether actions are ints in ``0..n_actions-1``.
        atol, rtol: the state tolerances a prediction is checked with.
        mask: the transitions to fit and check (default all), e.g. those not ending an episode.
        max_terms: at most this many terms besides the intercept.
        digits: significant digits the coefficients are rounded to.
        structure: also the term library, clips, wraps and exceptions (else plain linear fits).
        angles: (with `structure`) a cosine-sine pair of components (`cos_sin_pairs`) may be
            fitted through its angle: the change of ``atan2(sine, cosine)``, each component the
            cosine or the sine of the new angle, where that is right more often.
        regression: (with `structure`) a `codeworld.fitting.RegressionConfig`: a component no
            fit gets right everywhere gets a symbolic regression where that is right more
            often (`_regressed`); None: none.
        episodes: the episode of each transition (``episode_start``), for the regression's
            held-out episodes.
        terms: (with `structure`) more candidate terms, formulas of the names and ``action``
            (`formula_values`): the description's equations (`description_terms`).

    Returns:
        One `Relation` per component, in component order, whose fit is right on at least half
        of the transitions or (real-valued states only) explains at least 90% of the change's
        variance.
    """
    x = np.asarray(obs, dtype=np.float64)
    y_next = np.asarray(next_obs, dtype=np.float64)
    a = np.asarray(actions)
    if mask is not None:
        x, y_next, a = x[mask], y_next[mask], a[mask]
    n, d = x.shape
    if n < 2:
        return []
    integer = atol == 0 and rtol == 0
    intercept, seen, action_columns, action_labels = _action_terms(a, n, discrete, n_actions)
    columns = [x[:, j] for j in range(d)] + action_columns
    labels = list(names[:d]) + action_labels
    extra_columns, extra_labels = (term_library(x, names, integer) if structure
                                   else ([], []))  # after the plain terms
    columns += extra_columns
    labels += extra_labels
    for term in terms if structure else ():
        try:
            column = formula_values(term, x, a, names, discrete=discrete)
        except (ArithmeticError, LookupError, NameError, TypeError, ValueError):  # not of this data
            continue
        if np.all(np.isfinite(column)) and np.ptp(column) > 0 and term not in labels:
            columns.append(column)
            labels.append(term)
    candidates = np.stack(columns, axis=1) if columns else np.zeros((n, 0))
    relations: dict[int, Relation] = {}
    for i in range(d):
        y = y_next[:, i] - x[:, i]
        fit = (i, names[i], x[:, i], y, y_next[:, i], intercept, seen, candidates, labels,
               integer, atol, rtol, max_terms, digits)
        relation = _relation(*fit)
        if structure and not integer:
            relation = _clipped(relation, fit)
            relation = _wrapped(relation, y_next[:, i], atol, rtol)
            relation = _angle(relation, fit)
        if structure and relation is not None and integer and relation.exact < 1.0:
            relation = _with_exceptions(relation, x[:, i], y_next[:, i], atol, rtol, names[i])
        if relation is not None:
            relations[i] = relation
    paired: list[tuple[int, int]] = []  # the pairs whose rules are their one angle's
    if structure and angles and not integer:
        for pair in cos_sin_pairs(x):
            if all(i in relations and relations[i].exact >= 1.0 for i in pair):
                continue  # both already right everywhere
            if _angle_pair(relations, pair, x, y_next, (intercept, seen, candidates, labels,
                                                        atol, rtol, max_terms, digits), names):
                paired.append(pair)
    found = [relations[i] for i in sorted(relations)]
    if mask is not None and not np.all(mask):
        # a rule is called right where it is checked: on every recorded transition, also those
        # the fit left out (a clip fitted without the steps that end an episode must not be
        # called exact when one of them crosses it)
        found = [checked(r, obs, actions, next_obs, names, discrete=discrete, atol=atol, rtol=rtol)
                 for r in found]
    if regression is not None and structure and not integer:
        found = _regressed(found, obs, actions, next_obs, names, mask=mask, episodes=episodes,
                           config=regression, discrete=discrete, atol=atol, rtol=rtol,
                           keep=paired)
    return found


def checked(relation: Relation, obs, actions, next_obs, names, *, discrete: bool, atol: float,
            rtol: float) -> Relation:
    """`relation` with its ``exact`` share (and ``pred``) measured on the given transitions: its
    formula as written, evaluated on every one of them (`relation_values`)."""
    truth = np.asarray(next_obs, dtype=np.float64)[:, relation.index]
    pred = relation_values(relation, obs, actions, names, discrete=discrete, new_obs=next_obs)
    exact = float(np.mean(values_close(pred, truth, atol, rtol)))
    return replace(relation, exact=exact, pred=pred)


class _Vector(ast.NodeTransformer):
    """A formula's tuples made arrays, so that ``(a, b)[action]`` indexes by an array of actions."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Tuple):
            node.value = ast.Call(ast.Name("_array", ast.Load()), [node.value], [])
        return node


# what a formula's ``math.``, ``min``, ``max`` and ``abs`` mean on arrays
_ARRAY_MATH = SimpleNamespace(sin=np.sin, cos=np.cos, tan=np.tan, atan2=np.arctan2, exp=np.exp,
                              log=np.log, sqrt=np.sqrt, tanh=np.tanh, floor=np.floor, pi=np.pi)


class _PerTransition:
    """``np`` in a formula evaluated on every transition at once (`formula_values`), where a
    vector's components are stacked on the first axis: a sum over a vector (``np.sum(action**2)``,
    a control cost) is the sum on each transition, not over all of them."""

    def __getattr__(self, name: str):
        return getattr(np, name)

    @staticmethod
    def sum(x, *args, **kwargs):
        x = np.asarray(x)
        if args or kwargs:
            return np.sum(x, *args, **kwargs)
        return x.sum(axis=0) if x.ndim > 1 else x


def formula_values(formula: str, obs, actions, names, *, discrete: bool,
                   new_obs=None) -> np.ndarray:
    """The value of a formula of this module (`Relation.formula`, a reward formula) on every
    transition at once: the names of the state's components (or ``s[i]``), ``new_<name>`` with
    `new_obs`, ``action`` (or ``action[j]``), numbers, ``math``, ``np``, ``min``, ``max``, ``abs``.
    The formula is codeworld's own (built by the fits here), never a program's."""
    x = np.asarray(obs, dtype=np.float64)
    n = len(x)
    a = np.asarray(actions)
    scope: dict = {"np": _PerTransition(), "math": _ARRAY_MATH, "min": np.minimum, "max": np.maximum,
                   "abs": np.abs, "_array": np.asarray,
                   "action": a.reshape(n).astype(np.int64) if discrete
                   else a.reshape(n, -1).astype(np.float64).T}
    for prefix, values in (("", x), ("new_", new_obs)):
        if values is None:
            continue
        values = np.asarray(values, dtype=np.float64)
        scope[prefix + "s"] = values.T  # ``s[i]`` of a state too long to unpack
        for j, name in enumerate(names[:values.shape[1]]):
            if name.isidentifier():
                scope[prefix + name] = values[:, j]
    tree = ast.fix_missing_locations(_Vector().visit(ast.parse(formula, mode="eval")))
    with np.errstate(all="ignore"):
        value = eval(compile(tree, "<formula>", "eval"), {"__builtins__": {}}, scope)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy()


def relation_values(relation: Relation, obs, actions, names, *, discrete: bool,
                    new_obs=None) -> np.ndarray:
    """A relation's new values on every transition: its formula, then its exceptions. A formula
    that reads other components' new values (``new_<name>``, a regression's) needs `new_obs`."""
    rule = formula_values(relation.formula, obs, actions, names, discrete=discrete,
                          new_obs=new_obs)
    out = rule.copy()
    old = np.asarray(obs, dtype=np.float64)[:, relation.index]
    for values, outcome in relation.cases:
        hits = np.isin(rule, values)
        out[hits] = old[hits] if outcome is None else outcome
    return out


def _regressed(found: list[Relation], obs, actions, next_obs, names, *, mask, episodes, config,
               discrete: bool, atol: float, rtol: float, keep=()) -> list[Relation]:
    """`found` with a symbolic regression (`codeworld.fitting._regression`) of each real component
    that no fit gets right on every transition, where it is right on more of them: the new value
    from the old state, the action and the new values (``new_<name>``) of the components whose
    rules are right everywhere (those regressed so far included), in the integrator form
    ``x + f(...)``, kept only where it lowers the error on held-out episodes (`episodes`, the
    episode of each transition). A component tried before a rule it could read was found is
    tried once more with it (a position moved by the new speed). At most `_MAX_REGRESSED`
    searches, each within ``config.budget_s``; none beyond `_MAX_LIBRARY_DIM` components. A
    pair in `keep` (the cosine and sine of one angle, `_angle_pair`) is regressed as one, through
    its angle (`_regressed_pair`): each component on its own would leave the unit circle that
    every recorded state is on."""
    from codeworld.fitting._regression import regress_component

    x, nxt = np.asarray(obs, dtype=np.float64), np.asarray(next_obs, dtype=np.float64)
    n, d = x.shape
    rows = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if d > _MAX_LIBRARY_DIM or rows.sum() < 8:
        return found
    by_index = {r.index: r for r in found}
    a = np.asarray(actions, dtype=np.float64).reshape(n, -1)
    plain = list(names[:d]) + (["action"] if discrete else [f"action[{k}]" for k in range(a.shape[1])])

    def exact_everywhere(j: int) -> bool:
        r = by_index.get(j)
        return (r is not None and r.exact >= 1.0 and not r.exceptions and str(names[j]).isidentifier()
                and not (r.constant and r.formula == r.name))

    in_pairs = {i for pair in keep for i in pair}
    todo = [i for i in range(d) if not exact_everywhere(i) and i not in in_pairs
            and np.ptp(nxt[rows, i] - x[rows, i]) > 0]
    tried: dict[int, tuple] = {}
    searches = 0
    for i in todo + todo:  # a second pass where more new values are known
        known = tuple(j for j in range(d) if j != i and exact_everywhere(j))
        if exact_everywhere(i) or tried.get(i) == known or searches >= _MAX_REGRESSED:
            continue
        tried[i], searches = known, searches + 1
        inputs = np.column_stack([x, a, nxt[:, list(known)]])
        labels = plain + [f"new_{names[j]}" for j in known]
        current = by_index.get(i)
        baseline = x[rows, i]  # unchanged, or the current rule's predictions where it has them
        if current is not None and current.pred is not None:
            pred = np.asarray(current.pred, dtype=np.float64)
            baseline = pred[rows] if len(pred) == n else pred if len(pred) == rows.sum() else baseline
        expression = regress_component(
            inputs[rows], labels, nxt[rows, i], atol=atol, rtol=rtol, base=i, seed=0,
            groups=None if episodes is None else np.asarray(episodes)[rows], baseline=baseline,
            config=config)
        if expression is None:
            continue
        pred = expression.predict(inputs, labels)
        exact = float(np.mean(values_close(pred, nxt[:, i], atol, rtol)))
        if current is not None and exact <= current.exact:
            continue
        change = nxt[rows, i] - x[rows, i]
        sst = float(((change - change.mean()) ** 2).sum())
        explained = max(0.0, 1.0 - float(((nxt[rows, i] - pred[rows]) ** 2).sum()) / sst)
        if exact < _MIN_EXACT and explained < _MIN_EXPLAINED:
            continue
        by_index[i] = Relation(i, names[i], expression.source, explained, exact, pred=pred)
    for pair in keep:
        if searches >= _MAX_REGRESSED or all(exact_everywhere(i) for i in pair):
            continue
        searches += 1
        known = tuple(j for j in range(d) if j not in pair and exact_everywhere(j))
        inputs = np.column_stack([x, a, nxt[:, list(known)]])
        labels = plain + [f"new_{names[j]}" for j in known]
        _regressed_pair(by_index, pair, inputs, labels, x, nxt, rows, names, episodes=episodes,
                        config=config, atol=atol, rtol=rtol)
    return [by_index[i] for i in sorted(by_index)]


def _regressed_pair(by_index: dict, pair: tuple[int, int], inputs, labels, x, nxt, rows, names, *,
                    episodes, config, atol: float, rtol: float) -> None:
    """A symbolic regression of a cosine-sine pair's new angle (unwrapped, in the integrator form
    from the old angle ``math.atan2(sine, cosine)``), beside `inputs`; both components then the
    cosine and the sine of it, in `by_index`, where that is right on more of the pair's values
    than the current rules."""
    from codeworld.fitting._regression import regress_component

    j, m = pair
    n = len(x)
    angle = np.arctan2(x[:, m], x[:, j])
    new_angle = _unwrapped(np.arctan2(nxt[:, m], nxt[:, j]), angle)
    inputs = np.column_stack([inputs, angle])
    labels = list(labels) + [f"math.atan2({names[m]}, {names[j]})"]
    current = [by_index.get(i) for i in pair]
    baseline = None
    if all(r is not None and r.pred is not None and len(r.pred) == n for r in current):
        baseline = _unwrapped(np.arctan2(current[1].pred, current[0].pred), angle)[rows]
    expression = regress_component(
        inputs[rows], labels, new_angle[rows], atol=atol, rtol=0.0, base=len(labels) - 1, seed=0,
        groups=None if episodes is None else np.asarray(episodes)[rows], baseline=baseline,
        config=config)
    if expression is None:
        return
    made = _pair_relations(pair, expression.predict(inputs, labels), expression.source, x, nxt,
                           names, atol, rtol, rows)
    if sum(r.exact for r in made.values()) > sum(0.0 if r is None else r.exact for r in current):
        by_index.update(made)


def _action_terms(a: np.ndarray, n: int, discrete: bool, n_actions: int):
    """How the action enters a fit: a discrete action as one intercept per action (and which
    actions were seen), a continuous one as an intercept and one term per entry.

    Returns:
        (intercept columns, seen, action term columns, their labels)
    """
    if discrete:
        a = a.reshape(n).astype(np.int64)
        k = max(int(n_actions), int(a.max()) + 1)
        intercept = (a[:, None] == np.arange(k)[None, :]).astype(np.float64)
        return intercept, intercept.any(axis=0), [], []
    a = a.reshape(n, -1).astype(np.float64)
    return (np.ones((n, 1)), np.ones(1, dtype=bool), [a[:, j] for j in range(a.shape[1])],
            [f"action[{j}]" for j in range(a.shape[1])])


def _clipped(relation: Relation | None, fit: tuple) -> Relation | None:
    """The fit refitted without the transitions whose new value sits at a bound that several
    reach (the recorded minimum or maximum), then clipped to it, when that is right more often."""
    i, name, old, y, truth, intercept, seen, candidates = fit[:8]
    rest = fit[8:]
    if relation is not None and relation.exact >= 1.0:
        return relation
    lo, hi = float(truth.min()), float(truth.max())
    at_lo, at_hi = truth == lo, truth == hi
    use_lo, use_hi = int(at_lo.sum()) >= 2, int(at_hi.sum()) >= 2
    if not (use_lo or use_hi):
        return relation
    inner = ~((at_lo & use_lo) | (at_hi & use_hi))
    if inner.sum() < 4:
        return relation
    inside = _relation(i, name, old[inner], y[inner], truth[inner], intercept[inner], seen,
                       candidates[inner], *rest, params=True)
    if inside is None:
        return relation
    inside, (base, chosen, slopes) = inside
    pred = old + intercept @ np.asarray(base, dtype=np.float64)
    if chosen:
        pred = pred + candidates[:, chosen] @ np.asarray(slopes, dtype=np.float64)
    pred = np.clip(pred, lo if use_lo else -np.inf, hi if use_hi else np.inf)
    atol, rtol = rest[2], rest[3]
    exact = float(np.mean(values_close(pred, truth, atol, rtol)))
    if relation is not None and exact <= relation.exact:
        return relation
    if exact < _MIN_EXACT and inside.explained < _MIN_EXPLAINED:
        return relation
    formula = inside.formula
    if use_hi:
        formula = f"min({formula}, {_number(hi)})"
    if use_lo:
        formula = f"max({formula}, {_number(lo)})"
    return replace(inside, formula=formula, exact=exact, pred=pred)


def _wrapped(relation: Relation | None, truth: np.ndarray, atol: float,
             rtol: float) -> Relation | None:
    """The fit taken modulo a period, when the transitions it gets wrong are all off by one
    period (the same amount, either way): an angle kept in [-m/2, m/2) or a value in [0, m)."""
    if relation is None or relation.exact >= 1.0 or relation.pred is None:
        return relation
    pred = relation.pred
    wrong = ~values_close(pred, truth, atol, rtol)
    if wrong.sum() < 2:
        return relation
    gaps = np.abs(truth[wrong] - pred[wrong])
    period = float(np.median(gaps))
    if period <= 0 or not np.all(np.abs(gaps - period) <= 1e-3 * period + atol):
        return relation
    for digits in (4, 6, 12):  # the period as written, then as computed
        m = float(f"{period:.{digits}g}")
        if abs(m - 2 * np.pi) < 1e-3:
            m, m_text = 2 * np.pi, "2*math.pi"
        else:
            m_text = _number(m)
        for lo, lo_text in ((-m / 2, f"-{m_text}/2" if m_text != "2*math.pi" else "-math.pi"),
                            (0.0, "0")):
            wrapped = (pred - lo) % m + lo
            exact = float(np.mean(values_close(wrapped, truth, atol, rtol)))
            if exact > relation.exact and exact >= 0.999:
                shift = f" - {lo_text.lstrip('-')}" if lo < 0 else ""
                inner = f"({relation.formula}{' + ' + lo_text.lstrip('-') if lo < 0 else ''})"
                formula = f"{inner} % ({m_text}){shift}" if lo < 0 else f"({relation.formula}) % ({m_text})"
                return replace(relation, formula=formula, exact=exact, pred=wrapped)
    return relation


def _angle(relation: Relation | None, fit: tuple) -> Relation | None:
    """For a component whose recorded values span an angle's range, [-pi, pi] or [0, 2 pi]:
    the fit of its change taken modulo 2 pi, and the new value wrapped back into that range,
    when that is right more often (a wrap on many transitions spoils a plain fit)."""
    i, name, old, y, truth = fit[:5]
    rest = fit[5:]
    atol, rtol = rest[6], rest[7]
    if relation is not None and relation.exact >= 1.0:
        return relation
    values = np.concatenate([old, truth])
    tau = 2 * np.pi
    for lo, inner in ((-np.pi, "{} + math.pi"), (0.0, "{}")):
        if values.min() < lo - 1e-6 or values.max() > lo + tau + 1e-6 or np.ptp(values) < 0.75 * tau:
            continue
        change = (y + np.pi) % tau - np.pi  # the change, unwrapped
        found = _relation(i, name, old, change, old + change, *rest)
        if found is None:
            continue
        pred = (found.pred - lo) % tau + lo
        exact = float(np.mean(values_close(pred, truth, atol, rtol)))
        if relation is not None and exact <= relation.exact:
            continue
        shift = " - math.pi" if lo < 0 else ""
        formula = f"({inner.format(found.formula)}) % (2*math.pi){shift}"
        return replace(found, formula=formula, exact=exact, pred=pred)
    return relation


def _with_exceptions(relation: Relation, old: np.ndarray, truth: np.ndarray, atol: float,
                     rtol: float, name: str, max_exceptions: int = 4) -> Relation:
    """A whole-number rule with a decision list for the transitions it gets wrong: "when the
    rule's value is one of {...}, the value is unchanged" (a move that is refused), then "...,
    the new value is c" for each value c those transitions have; a rule value is listed only
    where no
    transition with one of its rule values has another outcome; at most `max_exceptions`, the
    largest first."""
    pred = relation.pred
    if pred is None:
        return relation
    wrong = ~values_close(pred, truth, atol, rtol)
    found = []  # (transitions, text, hits, new values)
    stays = wrong & (truth == old)
    groups = [(stays, "unchanged", None)] + [(wrong & ~stays & (truth == c), None, c)
                                             for c in np.unique(truth[wrong & ~stays])]
    for these, kind, c in groups:
        if not these.any():
            continue
        outcome = old if kind else np.full_like(truth, c)
        # the rule values after which every recorded transition has this outcome
        values = [v for v in np.unique(pred[these])
                  if (truth[pred == v] == outcome[pred == v]).all()]
        hits = np.isin(pred, values)
        if not values or len(values) > _MAX_EXCEPTION_VALUES:
            continue
        these = these & hits
        if these.sum() < 2:  # one transition is an observation, not a rule
            continue
        listed = ", ".join(_number(float(v)) for v in values)
        then = f"new {name} = {name} (unchanged)" if kind else f"new {name} = {_number(float(c))}"
        found.append((int(these.sum()), f"when that value is one of {{{listed}}}: {then} "
                                        f"({int(these.sum())} transitions)", hits, outcome,
                      (tuple(float(v) for v in values), None if kind else float(c))))
    found.sort(key=lambda f: -f[0])
    exceptions, cases, fixed = [], [], pred.copy()
    for _, text, hits, outcome, case in found[:max_exceptions]:
        exceptions.append(text)
        cases.append(case)
        fixed[hits] = outcome[hits]
    if not exceptions:
        return relation
    exact = float(np.mean(values_close(fixed, truth, atol, rtol)))
    return replace(relation, exceptions=tuple(exceptions), cases=tuple(cases), exact=exact,
                   pred=fixed)


def angle_pairs(x: np.ndarray, names, atol: float = 1e-6) -> tuple[list[np.ndarray], list[str]]:
    """For each pair of real components whose squares sum to 1 on every row (the cosine and sine
    of one angle), the angle ``math.atan2(second, first)`` and its square: a rule on an angle
    that the state holds as its cosine and sine (a cost on the angle's size) is then a term of
    the library. Built from the arrays alone; the first of the pair is read as the cosine (the
    other order gives pi/2 minus the angle, which a fit of its square does not undo)."""
    x = np.asarray(x, dtype=np.float64)
    columns: list[np.ndarray] = []
    labels: list[str] = []
    for j, m in cos_sin_pairs(x, atol):
        angle = np.arctan2(x[:, m], x[:, j])
        text = f"math.atan2({names[m]}, {names[j]})"
        columns += [angle, angle * angle]
        labels += [text, f"{text}**2"]
    return columns, labels


def cos_sin_pairs(x: np.ndarray, atol: float = 1e-6) -> list[tuple[int, int]]:
    """The pairs ``(j, m)``, ``j < m``, of real components that vary and whose squares sum to 1
    on every row: the cosine and the sine of one angle (states of at most `_MAX_LIBRARY_DIM`)."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    if d > _MAX_LIBRARY_DIM or n == 0:
        return []
    return [(j, m) for j in range(d) for m in range(j + 1, d)
            if np.ptp(x[:, j]) and np.ptp(x[:, m])
            and np.max(np.abs(x[:, j] ** 2 + x[:, m] ** 2 - 1.0)) <= atol]


def _angle_pair(relations: dict, pair: tuple[int, int], x: np.ndarray, y_next: np.ndarray,
                fit: tuple, names) -> bool:
    """For a cosine-sine pair of components, a fit of the change of their angle (unwrapped), each
    component then the cosine or sine of the new angle: the rule of a pendulum's state, which no
    fit of the cosine's or the sine's own change gets right. Replaces the pair's relations in
    `relations` (by index) together, so that the new state stays on the unit circle, when that
    is right on more of the pair's values; True where it did."""
    j, m = pair
    intercept, seen, candidates, labels, atol, rtol, max_terms, digits = fit
    angle = np.arctan2(x[:, m], x[:, j])
    change = (np.arctan2(y_next[:, m], y_next[:, j]) - angle + np.pi) % (2 * np.pi) - np.pi
    text = f"math.atan2({names[m]}, {names[j]})"
    found = _relation(-1, text, angle, change, angle + change, intercept, seen, candidates, labels,
                      False, atol, rtol, max_terms, digits)
    if found is None or found.pred is None:
        return False
    made = _pair_relations(pair, found.pred, found.formula, x, y_next, names, atol, rtol)
    now = sum(relations[i].exact if i in relations else 0.0 for i in pair)
    if sum(r.exact for r in made.values()) <= now or not all(
            r.exact >= _MIN_EXACT or r.explained >= _MIN_EXPLAINED for r in made.values()):
        return False
    relations.update(made)
    return True


def _unwrapped(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """An angle `new` moved by a whole number of turns to lie within half a turn of `old`."""
    return old + (new - old + np.pi) % (2 * np.pi) - np.pi


def _pair_relations(pair: tuple[int, int], new_angle: np.ndarray, formula: str, x, y_next, names,
                    atol: float, rtol: float, rows=None) -> dict[int, Relation]:
    """The relations of a cosine-sine pair computed from one predicted angle (`new_angle`, given
    by `formula`): the cosine and the sine of it, each with its share right on every transition
    and the share of its change explained (on `rows`, default all)."""
    rows = slice(None) if rows is None else rows
    made = {}
    for i, wave, fn in ((pair[0], np.cos, "math.cos"), (pair[1], np.sin, "math.sin")):
        pred, truth = wave(new_angle), y_next[:, i]
        exact = float(np.mean(values_close(pred, truth, atol, rtol)))
        y = (truth - x[:, i])[rows]
        sst = float(((y - y.mean()) ** 2).sum())
        explained = 1.0 if sst <= 1e-12 else max(
            0.0, 1.0 - float(((truth[rows] - pred[rows]) ** 2).sum()) / sst)
        made[i] = Relation(i, names[i], f"{fn}({formula})", explained, exact, pred=pred)
    return made


def find_reward_relation(next_obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
                         names, *, discrete: bool, n_actions: int, atol: float, rtol: float,
                         max_terms: int = 3, digits: int = 4,
                         obs: np.ndarray | None = None, terms=()) -> Relation | None:
    """A fit of the reward as a function of the new state (``new x``) and the action, with the
    same terms as the state's fits (`term_library`), or None where none is good. For rewards
    with many values; a reward of a few values is listed value by value instead.

    With ``obs`` (the states the steps started from), the old state's components, their terms
    and the angles of their cosine-sine pairs (`angle_pairs`) are candidates too: a reward is
    often a cost on where the step started (an angle's size, a speed) rather than where it
    ended.

    ``terms``: more candidate terms, formulas of the names and ``action`` (the description's
    equations, `description_terms`), each read on the new state (its names as ``new_<name>``)
    and, with ``obs``, on the old state as well: a description rarely says which."""
    nxt = np.asarray(next_obs, dtype=np.float64)
    r = np.asarray(rewards, dtype=np.float64)
    n, d = nxt.shape
    if n < 8:
        return None
    new_names = [f"new_{name}" for name in names]
    intercept, seen, action_columns, action_labels = _action_terms(
        np.asarray(actions), n, discrete, n_actions)
    columns = [nxt[:, j] for j in range(d)] + action_columns
    labels = new_names + action_labels
    if obs is not None:
        old = np.asarray(obs, dtype=np.float64)
        columns += [old[:, j] for j in range(d) if np.ptp(old[:, j])]
        labels += [names[j] for j in range(d) if np.ptp(old[:, j])]
    extra_columns, extra_labels = term_library(nxt, new_names, False)  # after the plain terms
    columns += extra_columns + [c ** 2 for c in action_columns]
    labels += extra_labels + [f"{label}**2" for label in action_labels]
    if obs is not None:
        for made in (term_library(old, list(names), False), angle_pairs(old, list(names))):
            columns += made[0]
            labels += made[1]
    if len(action_columns) > 1:  # a control cost is usually on the action's squared norm
        columns.append(np.sum(np.square(action_columns), axis=0))
        labels.append("np.sum(action**2)")
    for term in terms:
        for label in [_on_new_state(term, names)] + ([term] if obs is not None else []):
            try:
                column = formula_values(label, nxt if obs is None else obs, actions, names,
                                        discrete=discrete, new_obs=nxt)
            except (ArithmeticError, LookupError, NameError, TypeError, ValueError):
                continue  # not of this data
            if np.all(np.isfinite(column)) and np.ptp(column) > 0 and label not in labels:
                columns.append(column)
                labels.append(label)
    candidates = np.stack(columns, axis=1)
    relation = _relation(-1, "reward", np.zeros(n), r, r, intercept, seen, candidates, labels,
                         False, atol, rtol, max_terms, digits)
    if relation is None or relation.explained < _MIN_EXPLAINED:
        return None
    formula = relation.formula
    if formula.startswith("reward + "):
        formula = formula[len("reward + "):]
    elif formula.startswith("reward - "):
        formula = "-" + formula[len("reward - "):]
    elif formula == "reward":
        formula = "0"
    return replace(relation, formula=formula, target="reward", name="reward")


def _on_new_state(formula: str, names) -> str:
    """`formula` with each component's name read as its new value (``x`` as ``new_x``)."""
    known = {str(name) for name in names if str(name).isidentifier()}

    class New(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Name(f"new_{node.id}", node.ctx) if node.id in known else node

    tree = New().visit(ast.parse(formula, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def _relation(i, name, old, y, truth, intercept, seen, candidates, labels, integer, atol, rtol,
              max_terms, digits, params: bool = False):
    n = len(y)
    sst = float(((y - y.mean()) ** 2).sum())
    k = intercept.shape[1]

    def score(base, chosen, slopes):
        change = intercept @ np.asarray(base, dtype=np.float64)
        if chosen:
            change = change + candidates[:, chosen] @ np.asarray(slopes, dtype=np.float64)
        pred = old + change
        exact = float(np.mean(values_close(pred, truth, atol, rtol)))
        resid = y - change
        explained = 1.0 if sst <= 1e-12 else max(0.0, 1.0 - float(resid @ resid) / sst)
        if sst <= 1e-12 and exact < 1.0:
            explained = exact
        return exact, explained

    options = []
    # The least-squares fit, terms chosen greedily, coefficients rounded and then pruned.
    chosen, coef = _greedy(y, intercept, candidates, max_terms, n_plain=len(old_names(labels)))
    if n >= 4 * (k + len(chosen)):
        scale = max([abs(float(c)) for c in coef[:k]] + [0.0])
        base = [_round(c, digits, integer) if seen[m] and abs(c) > 1e-6 * scale else 0.0
                for m, c in enumerate(coef[:k])]
        slopes = [_round(c, digits, integer) for c in coef[k:]]
        options.append(_prune(base, chosen, slopes, seen, score))
    # The most frequent change for each action (a whole-number state moves in fixed steps).
    modal = [most_frequent(y[intercept[:, m] > 0]) if seen[m] else 0.0 for m in range(k)]
    options.append(_prune(modal, [], [], seen, score))
    # right on most transitions first; else (real values) the larger share of the change explained:
    # a constant right on a handful of 700 distinct values is no fit
    base, chosen, slopes, exact, explained = max(options, key=lambda o: (
        o[3] >= _MIN_EXACT or integer, o[3] if o[3] >= _MIN_EXACT or integer else o[4], o[4]))
    if exact < _MIN_EXACT and (integer or explained < _MIN_EXPLAINED):
        return None
    pred = old + intercept @ np.asarray(base, dtype=np.float64)
    if chosen:
        pred = pred + candidates[:, chosen] @ np.asarray(slopes, dtype=np.float64)
    # a slope of -1 on the component itself cancels it: the new value does not depend on the old
    own = [m for m, j in enumerate(chosen) if j == i and slopes[m] == -1]
    terms = [] if own else [name]
    for m, (j, s) in enumerate(zip(chosen, slopes)):
        if m not in own:
            terms.append(labels[j] if s == 1 else f"-{labels[j]}" if s == -1
                         else f"{_number(s)}*{labels[j]}")
    if len(set(base)) > 1:
        terms.append("(" + ", ".join(_number(b) for b in base) + ")[action]")
    elif base[0] != 0:
        terms.append(_number(base[0]))
    formula = " + ".join(terms).replace("+ -", "- ") or "0"
    if formula.startswith("-"):
        formula = "-" + formula[1:].lstrip()
    relation = Relation(i, name, formula, explained, exact, not chosen and len(set(base)) == 1,
                        pred=pred)
    return (relation, (base, chosen, slopes)) if params else relation


def old_names(labels) -> list[str]:
    """The labels that are plain names (a component or an action entry), not library terms."""
    return [label for label in labels if label.replace("_", "").replace("[", "").replace(
        "]", "").isalnum()]


def _greedy(y, intercept, candidates, max_terms, n_plain: int = 0) -> tuple[list[int], np.ndarray]:
    """Forward selection of at most `max_terms` candidate columns (always with the intercept).

    A library term (column `n_plain` on) is taken over a plain one only when it fits better by
    more than a rounding margin: of two near-equal explanations, the simpler one."""
    sst = float(((y - y.mean()) ** 2).sum())
    chosen: list[int] = []
    coef, sse = _fit(intercept, y)
    while len(chosen) < max_terms and sse > 1e-12 * max(sst, 1.0):
        resid = y - np.concatenate([intercept, candidates[:, chosen]], axis=1) @ coef
        free = [j for j in range(candidates.shape[1]) if j not in chosen]
        if not free:
            break
        cols = candidates[:, free]
        centred = cols - cols.mean(axis=0)
        norms = np.sqrt((centred ** 2).sum(axis=0))
        corr = np.abs(centred.T @ resid) / np.where(norms > 0, norms, np.inf)
        order = [free[j] for j in np.argsort(-corr)[:_MAX_CANDIDATES] if norms[j] > 0]
        best = None
        for j in order:
            c, s = _fit(np.concatenate([intercept, candidates[:, chosen + [j]]], axis=1), y)
            cost = s * (1.0 + 1e-3) + 1e-15 if j >= n_plain else s
            if best is None or cost < best[3]:
                best = (j, c, s, cost)
        if best is None or best[2] > (1 - _MIN_GAIN) * sse:
            break
        chosen.append(best[0])
        coef, sse = best[1], best[2]
    return chosen, coef


def _prune(base, chosen, slopes, seen, score):
    """Drops the terms (and per-action differences) the fit does as well without, as scored."""
    base, chosen, slopes = list(base), list(chosen), list(slopes)
    exact, explained = score(base, chosen, slopes)

    def as_good(e, x):
        return e >= exact and x >= explained - 1e-3

    for m in range(len(chosen) - 1, -1, -1):
        e, x = score(base, chosen[:m] + chosen[m + 1:], slopes[:m] + slopes[m + 1:])
        if as_good(e, x):
            chosen, slopes = chosen[:m] + chosen[m + 1:], slopes[:m] + slopes[m + 1:]
            exact, explained = e, x
    values = [b for b, s in zip(base, seen) if s]
    if len(set(base)) > 1 and values:
        for common in (0.0, most_frequent(np.asarray(values)), float(np.mean(values))):
            e, x = score([common] * len(base), chosen, slopes)
            if as_good(e, x):
                base, exact, explained = [common] * len(base), e, x
                break
    elif base and base[0] != 0:
        e, x = score([0.0] * len(base), chosen, slopes)
        if as_good(e, x):
            base, exact, explained = [0.0] * len(base), e, x
    return base, chosen, slopes, exact, explained


def between(low: float, high: float) -> float:
    """The number with the fewest significant digits strictly between `low` and `high`."""
    mid = (low + high) / 2
    for d in range(1, 17):
        t = float(f"{mid:.{d}g}")
        if low < t < high:
            return t
    return mid


def find_done_rule(next_obs, actions, terminated, names, *, discrete: bool, n_actions: int,
                   max_terms: int = 3) -> str | None:
    """A rule for ``done`` that is right on every recorded transition, or None.

    The rule is an "or" of at most `max_terms` conditions, each on one component of the new
    state (``new x == v`` for whole numbers, ``new x > t``, ``new x < t`` or ``abs(new x) > t``)
    or on the action (``action == a``), chosen greedily (the first of equally good ones, a
    bound on a magnitude before a one-sided bound): each condition is false on every transition that does not end the
    episode, and covers as many of the remaining ends as it can; its threshold lies halfway
    between the values of the two kinds of transition.
    """
    nxt = np.asarray(next_obs, dtype=np.float64)
    ends = np.asarray(terminated, dtype=bool)
    if not ends.any() or ends.all():
        return None
    conds: list[tuple[str, np.ndarray]] = []
    for j, name in enumerate(names[:nxt.shape[1]]):
        f = nxt[:, j]
        if np.all(f == np.round(f)):  # whole numbers: an end at one value reads as equality
            for v in np.unique(f[ends]):
                if not (f[~ends] == v).any():
                    conds.append((f"new {name} == {_number(float(v))}", f == v))
        # a bound on the magnitude first: where it is as consistent as a one-sided bound (the
        # data saw ends on one side only), it is the one that also predicts the other side
        for kind, f in (("abs", np.abs(nxt[:, j])), ("", nxt[:, j])):
            if kind == "abs" and nxt[:, j].min() >= 0:
                continue
            label = f"abs(new {name})" if kind else f"new {name}"
            stay, end = f[~ends], f[ends]
            if end.max() > stay.max():
                t = between(stay.max(), end[end > stay.max()].min())
                conds.append((f"{label} > {_number(t)}", f > t))
            if not kind and end.min() < stay.min():
                t = between(end[end < stay.min()].max(), stay.min())
                conds.append((f"{label} < {_number(t)}", f < t))
    if discrete:
        a = np.asarray(actions).reshape(len(ends), -1)[:, 0].astype(np.int64)
        for k in range(n_actions):
            fires = a == k
            if fires.any() and not (fires & ~ends).any():
                conds.append((f"action == {k}", fires))
    chosen, covered = [], np.zeros_like(ends)
    while len(chosen) < max_terms and not covered[ends].all():
        best = max(conds, key=lambda c: int((c[1] & ends & ~covered).sum()), default=None)
        if best is None or not (best[1] & ends & ~covered).any():
            return None
        chosen.append(best[0])
        covered |= best[1]
    if not covered[ends].all():
        return None
    return " or ".join(f"({c})" if len(chosen) > 1 else c for c in chosen)


def outcomes_text(obs, actions, next_obs, rewards, terminated, *, discrete: bool,
                  max_values: int = 6, names=None, n_actions: int = 0,
                  max_example_dim: int = 16) -> str:
    """The recorded rewards and episode ends, as prompt lines, with an example of each rare one.

    A reward that takes at most `max_values` values is listed value by value, most frequent
    first, with the first transition that gave each of the others; a reward with more values
    by its range. Episode ends (``terminated``, never a time limit) are counted, with the first,
    and with `names` given, a rule that is right on every transition (`find_done_rule`) when
    there is one. A discrete action is shown as the int the model receives; states longer than
    `max_example_dim` get no example (it would fill the prompt).
    """
    from codeworld.llm import format_value

    obs, next_obs = np.asarray(obs), np.asarray(next_obs)
    rewards = np.asarray(rewards, dtype=np.float64)
    ends = np.asarray(terminated, dtype=bool)
    n = len(rewards)
    if n == 0:
        return ""

    def example(k: int, what: str) -> str:
        if obs.ndim > 1 and obs.shape[1] > max_example_dim:
            return ""
        shown = {"reward": f"reward {format_value(float(rewards[k]))}",
                 "done": f"done {format_value(bool(ends[k]))}"}
        rest = ", ".join(v for key, v in shown.items() if key != what)
        action = int(np.asarray(actions[k]).reshape(-1)[0]) if discrete else actions[k]
        return (f"for example state {format_value(obs[k])}, action {format_value(action)} -> "
                f"next state {format_value(next_obs[k])}, {rest}")

    values, counts = np.unique(rewards, return_counts=True)
    if len(values) <= max_values:
        parts = []
        for rank, j in enumerate(np.argsort(-counts, kind="stable")):
            text = f"{format_value(float(values[j]))} on {counts[j]:,} transition{'s' if counts[j] != 1 else ''}"
            shown = example(int(np.flatnonzero(rewards == values[j])[0]), "reward")
            if rank > 0 and shown:
                text += f" ({shown})"
            parts.append(text)
        lines = ["- rewards: " + "; ".join(parts)]
    else:
        lines = [f"- rewards: {len(values):,} different values from {format_value(float(values[0]))} "
                 f"to {format_value(float(values[-1]))}"]
    k = int(ends.sum())
    if k == 0:
        lines.append("- no recorded transition ends the episode")
    else:
        shown = example(int(np.flatnonzero(ends)[0]), "done")
        lines.append(f"- the episode ends (done) on {k:,} of {n:,} transitions"
                     + (f" ({shown})" if shown else ""))
        rule = None if names is None else find_done_rule(
            next_obs, actions, ends, names, discrete=discrete, n_actions=n_actions)
        if rule is not None:
            lines.append(f"- done = {rule}  (right on every recorded transition; `new x` is the "
                         "value x has after the step)")
    return "\n".join(lines) + "\n"


def relations_text(relations: list[Relation], n_transitions: int, max_lines: int = 16,
                   max_listed: int = 8, max_names: int = 40, outcomes: str = "") -> str:
    """The prompt section for `relations` and the `outcomes` lines (empty when both are).

    At most `max_lines` fits are shown, the most exact first. When more than `max_listed`
    components never change, they are named on one line (at most `max_names` of them) instead.
    """
    if not relations and not outcomes:
        return ""
    parts = [f"## What the recorded data shows\n\nOver the {n_transitions:,} recorded transitions."]
    if relations:
        still = [r for r in relations if r.constant and r.formula == r.name and r.exact >= 1.0]
        grouped = len(still) > max_listed
        rest = [r for r in relations if not (grouped and r in still)]
        shown = sorted(rest, key=lambda r: (-r.exact, -r.explained))[:max_lines]
        shown.sort(key=lambda r: r.index)
        lines = [r.line() for r in shown]
        if grouped:
            names = ", ".join(r.name for r in still[:max_names])
            more = f" and {len(still) - max_names} more" if len(still) > max_names else ""
            lines.append(f"- these {len(still)} components never change (right on every recorded "
                         f"transition): {names}{more}")
        parts.append("Least-squares fits of each component's change (components without a good "
                     "linear fit are left out). Each right-hand side uses the old values, those "
                     "read at the top of `step`: compute every new value from them before you "
                     "overwrite a name. Write the fits that are right on every transition as they "
                     "are; the approximate ones are a start that the true rule refines.\n\n"
                     + "\n".join(lines))
    if outcomes:
        parts.append("Rewards and episode ends:\n\n" + outcomes.rstrip("\n"))
    return "\n\n".join(parts) + "\n"


# an equation as descriptions write it: in backticks, between dollar signs, or in italics
_EQUATION = re.compile(r"`([^`\n]+)`|\$([^$\n]+)\$|^\*(\S[^\n]*\S)\*[.,]?$|(?<![*\w])\*([^*\n]+)\*(?![*\w])",
                       re.MULTILINE)
_CONSTANT = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)(?!\w|\.\d)(?!\s*[-+*/(])")
_FUNCTIONS = {"sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "atan2", "floor"}


def description_terms(description: str, names, *, discrete: bool) -> list[str]:
    """The candidate terms of the fits that the description's equations state: each equation
    written in code or math form (``x_dot = ...``, ``$...$``, ``*...*``) is parsed, and every
    additive term of its right-hand side that reads the state's components (by their names, or
    a name with a time subscript such as ``xt``) and the action, with the description's named
    constants (``where g = 9.8``) filled in, becomes a term of the library (its numeric factor
    left to the fit). A term with any other name, or one that is a bare component, is left out.
    Built from the text and the names alone."""
    names = [str(n) for n in names]
    constants = {m.group(1): m.group(2) for m in _CONSTANT.finditer(description)}
    terms: list[str] = []
    for match in _EQUATION.finditer(description):
        text = next(g for g in match.groups() if g is not None)
        if text.count("=") != 1 or any(op in text for op in ("==", "<=", ">=", "!=")):
            continue
        rhs = text.split("=", 1)[1].strip().replace("^", "**").replace("·", "*").replace("×", "*")
        try:
            tree = ast.parse(rhs, mode="eval").body
        except SyntaxError:
            continue
        for term in _additive(tree):
            label = _term_label(term, names, constants, discrete)
            if label is not None and label not in terms:
                terms.append(label)
    return terms


# a heading of the section that says when an episode ends
_END_HEADING = re.compile(r"\b(?:ends?|ending|terminat\w*|done)\b", re.IGNORECASE)
_COMPARISONS = (ast.Gt, ast.GtE, ast.Lt, ast.LtE)
_ANGLE_WORDS = {"cos", "cosine", "sin", "sine", "of", "the"}


def named_angles(x: np.ndarray, names) -> dict[str, tuple[str, str]]:
    """The angles the state holds as a cosine-sine pair of components (`cos_sin_pairs`), by the
    name their two components share once the words cosine and sine are taken out
    (``cosine_theta1`` and ``sine_theta1``: ``theta1``), each as its pair ``(cos, sin)``. A pair
    whose names do not share one is left out."""
    found: dict[str, tuple[str, str]] = {}
    names = [str(n) for n in names]
    for j, m in cos_sin_pairs(np.asarray(x, dtype=np.float64)):
        if not (names[j].isidentifier() and names[m].isidentifier()):
            continue
        rests = ["_".join(w for w in names[k].split("_") if w.lower() not in _ANGLE_WORDS)
                 for k in (j, m)]
        first = {w.lower() for w in names[j].split("_")}
        second = {w.lower() for w in names[m].split("_")}
        if (rests[0] and rests[0] == rests[1] and rests[0].isidentifier()
                and first & {"cos", "cosine"} and second & {"sin", "sine"}):
            found[rests[0]] = (names[j], names[m])
    return found


def described_ends(description: str, names, angles: dict | None = None) -> list[str]:
    """The conditions for the episode's end that the description states as equations (in code or
    math form, in a section whose heading names the end or termination): each comparison of an
    expression of the state's components (`_Names`: their names, the angles of `named_angles`,
    the description's named constants, ``math`` functions), read on the new state (the names as
    ``new_<name>``), as a Python condition of the program. A chained comparison becomes an
    ``and`` of its links; an ``and`` or ``or`` of comparisons is kept as one condition. Built from
    the text and the names alone; whether the data agrees is for the caller to check
    (`end_values`)."""
    names = [str(n) for n in names]
    constants = {m.group(1): m.group(2) for m in _CONSTANT.finditer(description)}
    found: list[str] = []
    inside = False
    for line in description.splitlines():
        if line.lstrip().startswith("#"):
            inside = _END_HEADING.search(line) is not None
            continue
        if not inside:
            continue
        for match in _EQUATION.finditer(line):
            text = next(g for g in match.groups() if g is not None)
            text = (text.replace("^", "**").replace("≥", ">=").replace("≤", "<=")
                    .replace("·", "*").replace("×", "*"))
            try:
                tree = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                continue
            condition = _condition(tree)
            if condition is None:
                continue
            visitor = _Names(names, constants, prefix="new_", angles=angles)
            condition = visitor.visit(condition)
            reads = any(isinstance(n, ast.Name) and n.id.startswith("new_")
                        for n in ast.walk(condition))
            if visitor.ok and reads:
                label = ast.unparse(ast.fix_missing_locations(condition))
                if label not in found:
                    found.append(label)
    return found


def _condition(node: ast.AST) -> ast.AST | None:
    """An ``and``/``or`` of single comparisons (``<``, ``<=``, ``>``, ``>=``), a chained one split
    into its links; None for anything else."""
    if isinstance(node, ast.BoolOp):
        parts = [_condition(v) for v in node.values]
        return None if any(p is None for p in parts) else ast.BoolOp(node.op, parts)
    if isinstance(node, ast.Compare) and all(isinstance(op, _COMPARISONS) for op in node.ops):
        sides = [node.left, *node.comparators]
        links = [ast.Compare(sides[k], [op], [sides[k + 1]]) for k, op in enumerate(node.ops)]
        return links[0] if len(links) == 1 else ast.BoolOp(ast.And(), links)
    return None


class _Elementwise(ast.NodeTransformer):
    """A condition's ``and``/``or`` as ``&``/``|``, so that it reads arrays."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        op = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
        out = node.values[0]
        for value in node.values[1:]:
            out = ast.BinOp(out, op, value)
        return out


def end_values(condition: str, obs, actions, next_obs, names, *, discrete: bool) -> np.ndarray:
    """A `described_ends` condition on every transition (False where it cannot be computed)."""
    tree = _Elementwise().visit(ast.parse(condition, mode="eval"))
    text = ast.unparse(ast.fix_missing_locations(tree))
    value = formula_values(text, obs, actions, names, discrete=discrete, new_obs=next_obs)
    return np.nan_to_num(value, nan=0.0) > 0.5


def _additive(node: ast.AST) -> list[ast.AST]:
    """The additive terms of an expression, signs dropped."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _additive(node.left) + _additive(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _additive(node.operand)
    return [node]


def _factors(node: ast.AST) -> list[ast.AST]:
    """The factors of a product (the node itself when it is none)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


class _Names(ast.NodeTransformer):
    """A description's expression read in the program's names: a component's name (or the name
    with a time subscript, ``xt``, ``x_t``) as ``<prefix><name>``, ``action``, the description's
    named constants filled in, ``pi``, the functions of `_FUNCTIONS` as ``math.<f>``, and the
    angles of `named_angles` as the ``math.atan2`` of their pair; ``ok`` turns False on any other
    name, call or attribute."""

    def __init__(self, names: list[str], constants: dict, prefix: str = "",
                 angles: dict | None = None):
        self.names, self.constants, self.prefix = names, constants, prefix
        self.angles = angles or {}
        self.ok = True

    def _component(self, name: str) -> ast.AST:
        return ast.Name(self.prefix + name, ast.Load())

    def visit_Name(self, node: ast.Name) -> ast.AST:
        name = node.id
        if name in self.names:
            return self._component(name)
        if name == "action":
            return node
        for suffix in ("_t", "t"):  # a time subscript written inline: xt, x_t
            if name.endswith(suffix) and name[:-len(suffix)] in self.names:
                return self._component(name[:-len(suffix)])
        if name in self.constants:
            return ast.Constant(float(self.constants[name]))
        if name == "pi":
            return ast.Attribute(ast.Name("math", ast.Load()), "pi", ast.Load())
        if name in self.angles:
            cos, sin = self.angles[name]
            return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), "atan2", ast.Load()),
                            [self._component(sin), self._component(cos)], [])
        self.ok = False
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
            node.args = [self.visit(a) for a in node.args]
            node.func = ast.Attribute(ast.Name("math", ast.Load()), node.func.id, ast.Load())
            return node
        self.ok = False
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.ok = False
        return node


def _term_label(term: ast.AST, names: list[str], constants: dict, discrete: bool) -> str | None:
    """One term as a formula of `formula_values` (numeric factors dropped), or None."""
    names_seen = {n.id for n in ast.walk(term) if isinstance(n, ast.Name)}
    if isinstance(term, (ast.Constant, ast.Name)) or not names_seen:
        return None  # a number or a bare name: the fits have it already
    visitor = _Names(names, constants)
    term = visitor.visit(term)
    if not visitor.ok:
        return None
    factors = _factors(term)
    kept = [f for f in factors if not isinstance(f, ast.Constant)]
    if kept and len(kept) < len(factors):
        term = kept[0]
        for factor in kept[1:]:
            term = ast.BinOp(term, ast.Mult(), factor)
    label = ast.unparse(ast.fix_missing_locations(term))
    if not discrete and re.search(r"\baction\b(?!\[)", label):
        return None  # a continuous action is a vector: only its entries are terms
    return label
