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

from dataclasses import dataclass

import numpy as np

from codeworld.kernels.check import values_close
from codeworld.scoring.scorer import most_frequent

_MIN_GAIN = 0.05        # a term is added only when it removes this fraction of the remaining error
_MIN_EXACT = 0.5        # a fit right on at least this fraction of transitions is shown
_MIN_EXPLAINED = 0.9    # else it must explain this much of the change's variance (real-valued
                        # states only: an approximate rule for whole numbers misleads)
_MAX_CANDIDATES = 24    # terms tried at each step, pre-selected by correlation with the residual


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
    """

    index: int
    name: str
    formula: str
    explained: float
    exact: float
    constant: bool = False

    def line(self) -> str:
        """The relation as one prompt line."""
        if self.exact >= 1.0:
            how = "right on every recorded transition"
        else:
            share = ("over 99.9%" if 0.999 <= self.explained < 1 else f"{self.explained:.1%}"
                     if 0.99 <= self.explained < 1 else f"{self.explained:.0%}")
            how = (f"approximate: explains {share} of the change, right within tolerance on "
                   f"{self.exact:.0%} of transitions")
        return f"- new {self.name} = {self.formula}  ({how})"


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


def find_relations(obs: np.ndarray, actions: np.ndarray, next_obs: np.ndarray, names, *,
                   discrete: bool, n_actions: int, atol: float, rtol: float,
                   mask: np.ndarray | None = None, max_terms: int = 3,
                   digits: int = 4) -> list[Relation]:
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
    columns, labels = [], []
    for j in range(d):
        columns.append(x[:, j])
        labels.append(names[j])
    if discrete:
        a = a.reshape(n).astype(np.int64)
        k = max(int(n_actions), int(a.max()) + 1)
        intercept = (a[:, None] == np.arange(k)[None, :]).astype(np.float64)
        seen = intercept.any(axis=0)
    else:
        a = a.reshape(n, -1).astype(np.float64)
        for j in range(a.shape[1]):
            columns.append(a[:, j])
            labels.append(f"action[{j}]")
        intercept = np.ones((n, 1))
        seen = np.ones(1, dtype=bool)
    candidates = np.stack(columns, axis=1) if columns else np.zeros((n, 0))
    relations = []
    for i in range(d):
        y = y_next[:, i] - x[:, i]
        relation = _relation(i, names[i], x[:, i], y, y_next[:, i], intercept, seen, candidates,
                             labels, integer, atol, rtol, max_terms, digits)
        if relation is not None:
            relations.append(relation)
    return relations


def _relation(i, name, old, y, truth, intercept, seen, candidates, labels, integer, atol, rtol,
              max_terms, digits) -> Relation | None:
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
    chosen, coef = _greedy(y, intercept, candidates, max_terms)
    if n >= 4 * (k + len(chosen)):
        base = [_round(c, digits, integer) if seen[m] else 0.0 for m, c in enumerate(coef[:k])]
        slopes = [_round(c, digits, integer) for c in coef[k:]]
        options.append(_prune(base, chosen, slopes, seen, score))
    # The most frequent change for each action (a whole-number state moves in fixed steps).
    modal = [most_frequent(y[intercept[:, m] > 0]) if seen[m] else 0.0 for m in range(k)]
    options.append(_prune(modal, [], [], seen, score))
    base, chosen, slopes, exact, explained = max(options, key=lambda o: (o[3], o[4]))
    if exact < _MIN_EXACT and (integer or explained < _MIN_EXPLAINED):
        return None
    # a slope of -1 on the component itself cancels it: the new value does not depend on the old
    own = [m for m, j in enumerate(chosen) if j == i and slopes[m] == -1]
    terms = [] if own else [name]
    for m, (j, s) in enumerate(zip(chosen, slopes)):
        if m not in own:
            terms.append(labels[j] if s == 1 else f"{_number(s)}*{labels[j]}")
    if len(set(base)) > 1:
        terms.append("(" + ", ".join(_number(b) for b in base) + ")[action]")
    elif base[0] != 0:
        terms.append(_number(base[0]))
    formula = " + ".join(terms).replace("+ -", "- ") or "0"
    if formula.startswith("-"):
        formula = "-" + formula[1:].lstrip()
    return Relation(i, name, formula, explained, exact, not chosen and len(set(base)) == 1)


def _greedy(y, intercept, candidates, max_terms) -> tuple[list[int], np.ndarray]:
    """Forward selection of at most `max_terms` candidate columns (always with the intercept)."""
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
            if best is None or s < best[2]:
                best = (j, c, s)
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


def _threshold(low: float, high: float) -> float:
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
                t = _threshold(stay.max(), end[end > stay.max()].min())
                conds.append((f"{label} > {_number(t)}", f > t))
            if not kind and end.min() < stay.min():
                t = _threshold(end[end < stay.min()].max(), stay.min())
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
