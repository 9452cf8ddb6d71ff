"""Rules learned from the recorded transitions, written as code: small decision trees as ``if`` chains.

A reward that takes a few values, an episode end that happens on a few transitions, a whole-number
component that a linear fit gets right except on a few transitions (a key picked up in one cell,
a wall): none of these is a regression. `learn_tree` fits a small scikit-learn decision tree on
`Features` of the transition (the new state, the old state and the action; for whole-number
components also their quotients and remainders by small constants, since one integer often packs
several parts: a cell, a passenger, a destination), the smallest tree that is right on every
training transition, and `Tree` writes it as conditions a program can hold (``new_s0 > 7.5 and
action == 1``). `reward_rule`, `done_rule` and `component_rule` build on it; each returns a `Rule`,
code lines with the share of transitions they get right. A rule that is true on no training
transition is not written (a tree's leaves each hold some).

Nothing here knows an environment: it reads arrays, names and tolerances only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from codeworld.kernels._check import values_close
from codeworld.worlds.cwmb._relations import between

_MAX_DEPTH = 6          # the deepest tree tried
_MAX_LEAVES = 16        # and at most this many leaves
_MODULI = tuple(range(2, 11))   # remainders by these
_MAX_DECODED = 4000     # at most this many decoded features in all
_FEW_INPUTS = 2         # a rule over this many inputs is sought first ...
_FEW_FROM = 40          # ... among at most this many plain and place-value features
FEW_VALUES = 16         # a reward of at most this many values is learned as a tree


@dataclass(frozen=True)
class Rule:
    """A learned rule as code.

    Attributes:
        code: lines of Python at the indentation of ``step``'s body, assigning the target.
        exact: the share of training transitions it gets right (within the tolerances).
        kind: how it was made: ``"constant"``, ``"formula"``, ``"threshold"``, ``"tree"``,
            ``"described"`` (the description's stated condition, checked on the data).
        text: the rule in one line, for records.
    """

    code: str
    exact: float
    kind: str
    text: str = ""

    def to_json(self) -> dict:
        return {"exact": self.exact, "kind": self.kind, "text": self.text or self.code.strip()}


@dataclass(frozen=True)
class Features:
    """Candidate inputs of a rule: one column per feature and the Python expression of each.

    Attributes:
        values: ``(N, F)`` array.
        exprs: the expression of each column, in the program's names (``new_x``, ``x``,
            ``action == 2``, ``(x // 20) % 5``).
        binary: per column, whether it only takes 0 and 1 (a condition: ``action == 2``).
        whole: per column, whether its values are whole numbers.
        level: per column, how far it is from the plain names: 0 for a component, a new one, a
            change or an action; 1 for a part of a packed code at the place values its changes
            show (`place_values`); 2 for any other quotient or remainder. Rules are learned on
            the lowest levels that make them right (`_learn`).
    """

    values: np.ndarray
    exprs: tuple[str, ...]
    binary: tuple[bool, ...]
    whole: tuple[bool, ...]
    level: tuple[int, ...] = ()

    def select(self, keep: np.ndarray) -> "Features":
        keep = np.flatnonzero(keep)
        level = self.level or (0,) * len(self.exprs)
        return Features(self.values[:, keep], tuple(self.exprs[k] for k in keep),
                        tuple(self.binary[k] for k in keep), tuple(self.whole[k] for k in keep),
                        tuple(level[k] for k in keep))

    def upto(self, level: int) -> "Features":
        """The features of at most `level`."""
        return self.select(np.array([v <= level for v in self.level or (0,) * len(self.exprs)],
                                    dtype=bool))


def _smooth(limit: int, primes=(2, 3, 5, 7)) -> list[int]:
    """The numbers from 2 up to `limit` with no prime factor beyond `primes` (the small
    constants a packed code is built from: 4, 20, 100 ...)."""
    found = {1}
    for p in primes:
        for v in sorted(found):
            while v * p <= limit:
                v *= p
                found.add(v)
    return sorted(found - {1})


def place_values(obs, next_obs, *, min_count: int = 2, most: int = 4,
                 cover: float = 0.9) -> dict[int, tuple[int, ...]]:
    """Per whole-number component that moves like a packed code, the sizes of its changes
    (``abs(new - old)``): where one integer packs several parts, a change of one part moves it
    by that part's place value (a step along a row by the row's), so its parts are ``x // k``
    and ``(x // k) % (K // k)`` for two such sizes ``k < K``. A component moves like a packed
    code when at most `most` sizes (each seen on `min_count` transitions or more) make up
    `cover` of its changes; a sum that grows by many different amounts does not."""
    old = np.asarray(obs, dtype=np.float64)
    new = np.asarray(next_obs, dtype=np.float64)
    out: dict[int, tuple[int, ...]] = {}
    for j in range(old.shape[1] if old.ndim == 2 else 0):
        a, b = old[:, j], new[:, j]
        if not (np.all(a == np.round(a)) and np.all(b == np.round(b))):
            continue
        steps = np.abs(b - a)
        steps = steps[steps > 0].astype(np.int64)
        if not len(steps):
            continue
        sizes, counts = np.unique(steps, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        covered = np.cumsum(counts[order]) / len(steps)
        needed = int(np.searchsorted(covered, cover - 1e-12)) + 1
        keep = [int(sizes[i]) for i in order[:needed] if counts[i] >= min_count]
        if needed <= most and keep:
            out[j] = tuple(sorted(keep))
    return out


def _place_parts(name: str, sizes: tuple[int, ...]) -> list[tuple[str, int, int]]:
    """The parts of a packed code at place values `sizes`: ``(expr, k, m)`` for ``(x // k) % m``
    (``m`` 0: no remainder; ``k`` 1: no quotient)."""
    sizes = tuple(sorted(set(sizes)))
    parts = []
    for k in sizes:
        if k > 1:
            parts.append((f"{name} // {k}", k, 0))
        for big in sizes:
            if big > k and big % k == 0:
                parts.append((f"({name} // {k}) % {big // k}" if k > 1 else f"{name} % {big}",
                              k, big // k))
    small = sizes[0] if sizes else 1
    if small > 1:
        parts.append((f"{name} % {small}", 1, small))
    return parts


def _paren(expr: str) -> str:
    return expr if expr.isidentifier() or re.fullmatch(r"[\w\[\]]+", expr) else f"({expr})"


def features(obs, actions, *, names, discrete: bool, n_actions: int = 0, next_obs=None,
             decode: bool = True, places: dict[int, tuple[int, ...]] | None = None) -> Features:
    """The candidate inputs of a rule: each old component (its name), each new one
    (``new_<name>``, with `next_obs`) and its change (``new_<name> - <name>``), the action
    (``action == k`` for each discrete action, ``action[j]`` for a continuous one); with
    `decode`, for every whole-number component of at least 4 values, its parts at the place
    values `places` gives it (`place_values`; level 1), then ``x % m`` and ``x // k`` and
    ``(x // k) % m`` for small ``m`` and ``k`` (level 2)."""
    old = np.asarray(obs, dtype=np.float64)
    n, d = old.shape
    columns: list[np.ndarray] = []
    exprs: list[str] = []
    parts = [("", old)] + ([("new_", np.asarray(next_obs, dtype=np.float64))]
                           if next_obs is not None else [])
    for prefix, values in parts:
        for j in range(d):
            if np.ptp(values[:, j]):
                columns.append(values[:, j])
                exprs.append(prefix + names[j])
    if next_obs is not None:
        change = parts[1][1] - old
        for j in range(d):
            if np.ptp(change[:, j]) and np.ptp(old[:, j]) and np.ptp(parts[1][1][:, j]):
                columns.append(change[:, j])
                exprs.append(f"new_{names[j]} - {names[j]}")
    a = np.asarray(actions)
    if discrete:
        a = a.reshape(n).astype(np.int64)
        for k in range(max(int(n_actions), int(a.max()) + 1 if n else 0)):
            if (a == k).any() and not (a == k).all():
                columns.append((a == k).astype(np.float64))
                exprs.append(f"action == {k}")
    else:
        a = a.reshape(n, -1).astype(np.float64)
        for j in range(a.shape[1]):
            if np.ptp(a[:, j]):
                columns.append(a[:, j])
                exprs.append(f"action[{j}]")
    level = [0] * len(columns)
    if decode:
        for prefix, values in parts:
            for j, sizes in (places or {}).items():
                v = values[:, j]
                if not (np.all(v == np.round(v)) and v.min() >= 0 and np.ptp(v) >= 4):
                    continue
                name = _paren(prefix + names[j])
                for expr, k, m in _place_parts(name, sizes):
                    q = v // k if k > 1 else v
                    col = q % m if m else q
                    if np.ptp(col) and expr not in exprs:
                        columns.append(col)
                        exprs.append(expr)
                        level.append(1)
        decoded = 0
        seen = set(exprs)
        for prefix, values in parts:
            for j in range(d):
                v = values[:, j]
                if not (np.all(v == np.round(v)) and v.min() >= 0 and np.ptp(v) >= 4):
                    continue
                name = prefix + names[j]
                top = int(v.max())
                for k in [1] + _smooth(top // 2):
                    q = v // k if k > 1 else v
                    base = f"{_paren(name)} // {k}" if k > 1 else name
                    if k > 1 and np.ptp(q) and base not in seen:
                        columns.append(q)
                        exprs.append(base)
                        level.append(2)
                    for m in _MODULI:
                        if m <= q.max():
                            r = q % m
                            expr = f"{_paren(base)} % {m}"
                            if np.ptp(r) and expr not in seen:
                                columns.append(r)
                                exprs.append(expr)
                                level.append(2)
                    decoded += 1
                    if len(columns) > _MAX_DECODED:
                        break
                if decoded and len(columns) > _MAX_DECODED:
                    break
    values = np.stack(columns, axis=1) if columns else np.zeros((n, 0))
    binary = tuple(bool(np.isin(c, (0.0, 1.0)).all()) for c in columns)
    whole = tuple(bool(np.all(c == np.round(c))) for c in columns)
    return Features(values, tuple(exprs), binary, whole, tuple(level))


def literal(value: float) -> str:
    """A number as a Python literal that reads back as the same float (``-1``, ``0.25``,
    ``1234567``), short where that loses nothing."""
    value = float(value)
    if value == round(value) and abs(value) < 2 ** 53:
        return str(int(value))
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


class Tree:
    """A fitted decision tree's leaves as conditions in the features' expressions.

    Attributes:
        leaves: per leaf, ``(conditions, class index, transitions)``; the conditions joined by
            ``and`` select exactly the training transitions of that leaf.
        classes: the class labels the indices stand for.
        pred: the class index the tree gives each training transition.
    """

    def __init__(self, model, feats: Features, classes: np.ndarray):
        tree = model.tree_
        self.model = model
        self.classes = classes
        self.carried = float("nan")  # set by `_learn`: the share right when learned without them
        x = feats.values
        # the class of each transition as the written conditions give it (sklearn compares in
        # float32; the conditions compare in float64 at a cut between the two sides' values)
        self.pred = np.zeros(len(x), dtype=np.int64)
        self.leaves: list[tuple[list[str], int, int]] = []

        def walk(node: int, bounds: dict, rows: np.ndarray) -> None:
            left, right = tree.children_left[node], tree.children_right[node]
            if left == right:  # a leaf
                if rows.any():
                    label = int(np.argmax(tree.value[node][0]))
                    self.pred[rows] = label
                    self.leaves.append((self._conditions(bounds, feats), label, int(rows.sum())))
                return
            f, t = int(tree.feature[node]), float(tree.threshold[node])
            col = x[:, f]
            below, above = col[rows & (col <= t)], col[rows & (col > t)]
            cut = between(below.max(), above.min()) if len(below) and len(above) else t
            low, high = bounds.get(f, (-np.inf, np.inf))
            walk(left, {**bounds, f: (low, min(high, cut))}, rows & (col <= t))
            walk(right, {**bounds, f: (max(low, cut), high)}, rows & (col > t))

        walk(0, {}, np.ones(len(x), dtype=bool))

    @staticmethod
    def _conditions(bounds: dict, feats: Features) -> list[str]:
        out = []
        for f, (low, high) in sorted(bounds.items()):
            expr = feats.exprs[f]
            if feats.binary[f]:
                if " == " in expr:
                    out.append(expr if low > -np.inf else expr.replace(" == ", " != "))
                else:
                    out.append(f"{expr} == {1 if low > -np.inf else 0}")
                continue
            if feats.whole[f] and low > -np.inf and high < np.inf and np.floor(high) - np.ceil(low) == 0:
                out.append(f"{expr} == {int(np.ceil(low))}")
                continue
            if low > -np.inf:
                out.append(f"{expr} > {literal(low)}")
            if high < np.inf:
                out.append(f"{expr} < {literal(high)}")
        return out

    def selector(self, label: int) -> str:
        """The condition under which the tree gives class `label`: the leaves' conditions,
        joined by ``or`` (``False`` when no leaf gives it)."""
        paths = [" and ".join(c) or "True" for c, k, _ in self.leaves if k == label]
        if not paths:
            return "False"
        return " or ".join(f"({p})" if len(paths) > 1 and " and " in p else p for p in paths)

    @property
    def n_leaves(self) -> int:
        return len(self.leaves)


def learn_tree(feats: Features, labels: np.ndarray, *, max_depth: int = _MAX_DEPTH,
               weight: np.ndarray | None = None) -> Tree | None:
    """The smallest decision tree (depth 1, 2, ... `max_depth`, at most `_MAX_LEAVES` leaves)
    over `feats` that gives every training transition its label, else the deepest one tried;
    None when there is nothing to learn (one label, no features). Deterministic."""
    from sklearn.tree import DecisionTreeClassifier

    classes, y = np.unique(labels, return_inverse=True)
    if len(classes) < 2 or feats.values.shape[1] == 0:
        return None
    best = None
    for depth in range(1, max_depth + 1):
        model = DecisionTreeClassifier(max_depth=depth, max_leaf_nodes=_MAX_LEAVES, random_state=0)
        model.fit(feats.values, y, sample_weight=weight)
        tree = Tree(model, feats, classes)
        right = float(np.mean(tree.pred == y))
        if best is None or right > best[0]:
            best = (right, tree)
        if right >= 1.0 or model.get_depth() < depth:  # exact, or it stopped growing
            break
    return best[1]


def _few_inputs(feats: Features, labels: np.ndarray, **kwargs) -> tuple[Tree, np.ndarray] | None:
    """The tree right on every transition over the fewest features (one, then two: at most
    `_FEW_INPUTS`), of those the one with the fewest leaves, with the mask of its features; None
    when no such tree is right on every transition or there are more than `_FEW_FROM` features
    to choose from. A rule in few inputs is the one likely to hold beyond the recorded
    transitions (a wall is where a row and a column are, not where some remainder of the code
    is)."""
    from itertools import combinations

    n = len(feats.exprs)
    if n == 0 or n > _FEW_FROM:
        return None
    for size in range(1, min(_FEW_INPUTS, n) + 1):
        found = None
        for keep in combinations(range(n), size):
            mask = np.zeros(n, dtype=bool)
            mask[list(keep)] = True
            tree = learn_tree(feats.select(mask), labels, **kwargs)
            if tree is not None and np.all(tree.classes[tree.pred] == labels) and (
                    found is None or tree.n_leaves < found[0].n_leaves):
                found = (tree, mask)
        if found is not None:
            return found
    return None


def _held_out_right(feats: Features, labels: np.ndarray, folds: int = 5, **kwargs) -> float:
    """The share of transitions a tree over `feats` gets right when learned without them
    (`folds`-fold, the folds fixed by position): how well a rule learned this way carries to
    transitions it was not learned on, from the training transitions alone."""
    n = len(labels)
    if n < 2 * folds:
        return float("nan")
    fold = np.arange(n) % folds
    right = 0
    for k in range(folds):
        fit, test = fold != k, fold == k
        part = Features(feats.values[fit], feats.exprs, feats.binary, feats.whole, feats.level)
        tree = learn_tree(part, labels[fit], **kwargs)
        if tree is None:  # one label on the rest: predict it
            right += int(np.sum(labels[test] == labels[fit][0]))
            continue
        pred = tree.classes[tree.model.predict(feats.values[test])]
        right += int(np.sum(pred == labels[test]))
    return right / n


def _learn(feats: Features, labels: np.ndarray, **kwargs) -> Tree | None:
    """The rule in the plainest terms the transitions allow. Candidates: a tree over one or two
    of the plain and place-value features right on every transition (`_few_inputs`), and
    `learn_tree` on the features of level 0 (the plain names), then up to level 1 (the parts of
    packed codes at their place values), then all, while transitions are left wrong (the first
    tree right on every transition, else the most often right). Of the two, the one that
    carries better to transitions it was not learned on (`_held_out_right`, on the training
    transitions), then the one right more often; of equals, the one in fewer inputs."""
    candidates = []
    few = _few_inputs(feats.upto(1), labels, **kwargs)
    if few is not None:
        candidates.append((few[0], feats.upto(1).select(few[1])))
    best = None
    for level in sorted(set(feats.level or (0,))):
        some = feats.upto(level)
        if best is not None and len(some.exprs) == len(best[2].exprs):
            continue
        tree = learn_tree(some, labels, **kwargs)
        if tree is None:
            continue
        right = float(np.mean(tree.classes[tree.pred] == labels))
        if best is None or right > best[0]:
            best = (right, tree, some)
        if right >= 1.0:
            break
    if best is not None:
        candidates.append((best[1], best[2]))
    if not candidates:
        return None

    def merit(candidate):
        tree, used = candidate
        carried = _held_out_right(used, labels, **kwargs)
        tree.carried = carried
        return (0.0 if np.isnan(carried) else carried,
                float(np.mean(tree.classes[tree.pred] == labels)))

    scored = [merit(c) for c in candidates]
    return candidates[int(np.argmax([s[0] * 2 + s[1] * 1e-3 for s in scored]))][0]


def _carries(tree: Tree, labels: np.ndarray) -> bool:
    """Whether a learned tree carries to transitions it was not learned on better than its most
    frequent label does (`_held_out_right`, on the training transitions): a rule that does not
    is a fit to the few transitions it was learned on (a random monster's move, a card draw)."""
    carried = getattr(tree, "carried", float("nan"))
    if np.isnan(carried):
        return True  # too few transitions to tell
    _, counts = np.unique(labels, return_counts=True)
    return carried > counts.max() / len(labels)


def done_code(rule_text: str) -> str:
    """A done rule as `codeworld.worlds.cwmb._relations.find_done_rule` says it (``new x > t``)
    in the program's names (``new_x > t``)."""
    return re.sub(r"\bnew ([A-Za-z_]\w*(?:\[\d+\])?)", r"new_\1", rule_text)


def done_rule(obs, actions, next_obs, terminated, names, *, discrete: bool,
              n_actions: int) -> Rule:
    """``done``: the one-condition rule of the data section where one is right on every
    transition (`find_done_rule`), else a small tree's conditions for an end, where they are
    right more often than never ending; else never done."""
    from codeworld.worlds.cwmb._relations import find_done_rule

    ends = np.asarray(terminated, dtype=bool)
    never = Rule("    done = False\n", float(np.mean(~ends)), "constant", "never done")
    if not ends.any():
        return never
    if ends.all():
        return Rule("    done = True\n", 1.0, "constant", "always done")
    text = find_done_rule(next_obs, actions, ends, names, discrete=discrete, n_actions=n_actions)
    if text is not None:
        code = done_code(text)
        return Rule(f"    done = bool({code})\n", 1.0, "threshold", code)
    feats = features(obs, actions, names=names, discrete=discrete, n_actions=n_actions,
                     next_obs=next_obs, places=place_values(obs, next_obs))
    tree = _learn(feats, ends)
    if tree is None or not _carries(tree, ends):
        return never
    right = float(np.mean(tree.classes[tree.pred] == ends))
    if right <= never.exact or True not in tree.classes:
        return never
    condition = tree.selector(int(np.flatnonzero(tree.classes)[0]))
    return Rule(f"    done = bool({condition})\n", right, "tree", condition)


def reward_rule(obs, actions, next_obs, rewards, names, *, discrete: bool, n_actions: int,
                atol: float, rtol: float, formula: str | None = None) -> Rule:
    """``reward``: the best on the training transitions of the most frequent value, a tree over
    the values (a reward of at most `FEW_VALUES` values: a goal, a penalty, a step cost) and the
    data section's formula (`formula`, a reward of many values).

    The best is the one right (within the tolerance) most often; but where the reward takes more
    than `FEW_VALUES` values and none is right on half the transitions, the one of least mean
    error: a constant right on the few transitions that repeat a value would tie every plan
    (a planner needs the reward to move with the action), where a formula that explains
    most of the reward's change steers it."""
    from codeworld.scoring._scorer import most_frequent
    from codeworld.worlds.cwmb._relations import formula_values

    r = np.asarray(rewards, dtype=np.float64)
    modal = most_frequent(r)

    def right(pred: np.ndarray) -> float:
        return float(np.mean(values_close(pred, r, atol, rtol)))

    options = [Rule(f"    reward = {literal(modal)}\n", right(np.full_like(r, modal)), "constant",
                    f"the most frequent reward, {literal(modal)}")]
    fitted = None
    if formula is not None:
        fitted = np.asarray(formula_values(formula, obs, actions, names, discrete=discrete,
                                           new_obs=next_obs), dtype=np.float64)
        options.append(Rule(f"    reward = {formula}\n", right(fitted), "formula", formula))
    values = np.unique(r)
    if 1 < len(values) <= FEW_VALUES:
        feats = features(obs, actions, names=names, discrete=discrete, n_actions=n_actions,
                         next_obs=next_obs, places=place_values(obs, next_obs))
        tree = _learn(feats, r)
        if tree is not None and _carries(tree, r):
            pred = tree.classes[tree.pred]
            default = int(np.argmax(np.bincount(tree.pred, minlength=len(tree.classes))))
            lines = [f"    reward = {literal(float(tree.classes[default]))}\n"]
            text = []
            for label, value in enumerate(tree.classes):
                if label != default and (tree.pred == label).any():
                    condition = tree.selector(label)
                    lines.append(f"    if {condition}:\n        reward = {literal(float(value))}\n")
                    text.append(f"{literal(float(value))} if {condition}")
            options.append(Rule("".join(lines), right(pred), "tree",
                                "; ".join(text) + f"; else {literal(float(tree.classes[default]))}"))
    # the most often right; of equals, the simpler (the order above)
    best = max(options, key=lambda o: o.exact)
    if len(values) > FEW_VALUES and best.exact < 0.5 and fitted is not None:
        error = float(np.mean(np.abs(fitted - r)))
        if np.isfinite(error) and error < float(np.mean(np.abs(modal - r))):
            return options[1]
    return best


def _outcomes(ok: np.ndarray, rule: np.ndarray, old: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """The outcome of each transition as a label: ``"rule"`` (the rule is right), ``"old"`` (the
    value stays), ``"=v"`` (it is set to ``v``: a value the wrong transitions land on from
    different steps, as a fall that sends one back to the start) or ``"+d"`` (the rule's value
    plus a fixed step)."""
    labels = np.full(len(rule), "rule", dtype=object)
    wrong = ~ok
    labels[wrong & (truth == old)] = "old"
    rest = wrong & (truth != old)
    for v in np.unique(truth[rest]):
        hits = rest & (truth == v)
        if hits.sum() >= 2 and len(np.unique(truth[hits] - rule[hits])) > 1:
            labels[hits] = f"={literal(float(v))}"
    for k in np.flatnonzero(rest & (labels == "rule")):
        labels[k] = f"+{literal(float(truth[k] - rule[k]))}"
    return labels.astype(str)


def component_rule(index: int, names, rule: np.ndarray, obs, actions, next_obs, *,
                   discrete: bool, n_actions: int, atol: float, rtol: float) -> Rule | None:
    """For a whole-number component whose rule (`rule`: its values on the transitions) is wrong
    on some transitions: a tree over the old state (and the action) that tells where the new
    value is the old one instead, a value it is set to, or the rule's value plus a fixed step
    (`_outcomes`); as lines that follow the rule's ``new_<name> = ...``. With discrete actions,
    one tree per action (over the old state: what blocks one move is not what blocks another).
    None where the trees are right no more often than the rule."""
    obs = np.asarray(obs, dtype=np.float64)
    next_obs = np.asarray(next_obs, dtype=np.float64)
    old = obs[:, index]
    truth = next_obs[:, index]
    ok = values_close(rule, truth, atol, rtol)
    if ok.all():
        return None
    places = place_values(obs, next_obs)
    # the rule's own value is a feature too (``_rule``): a move off the edge is where the rule
    # gives a value past it
    own = rule.reshape(-1, 1).astype(np.float64)
    groups: list[tuple[str, np.ndarray]] = [("", np.ones(len(old), dtype=bool))]
    if discrete:
        a = np.asarray(actions).reshape(-1).astype(np.int64)
        groups = [(f"action == {k}", a == k) for k in np.unique(a)]
    outcome = np.full(len(old), "rule", dtype=object)
    codes = np.full(len(old), "rule", dtype=object)
    for _, rows in groups:  # outcomes per group: a value set by one action is not another's
        codes[rows] = _outcomes(ok[rows], rule[rows], old[rows], truth[rows])
    codes = codes.astype(str)
    name = names[index]
    lines, text = [], []
    for guard, rows in groups:
        if not (codes[rows] != "rule").any():
            continue
        if len(np.unique(codes[rows])) == 1:  # the same outcome on every transition of the action
            tree, pred, chosen = None, np.zeros(int(rows.sum()), dtype=np.int64), codes[rows][:1]
        else:
            feats = features(obs[rows], np.asarray(actions)[rows], names=names,
                             discrete=discrete and not guard, n_actions=n_actions, places=places)
            if np.ptp(own[rows]):
                feats = Features(np.hstack([own[rows], feats.values]), ("_rule",) + feats.exprs,
                                 (False,) + feats.binary, (bool(np.all(own == np.round(own))),)
                                 + feats.whole, (0,) + feats.level)
            tree = _learn(feats, codes[rows])
            if tree is None or not _carries(tree, codes[rows]):
                continue
            pred, chosen = tree.pred, tree.classes
        outcome[rows] = chosen[pred]
        for label, value in enumerate(chosen):
            if value == "rule" or not (pred == label).any():
                continue
            condition = tree.selector(label) if tree is not None else "True"
            if guard:
                condition = guard if condition == "True" else (
                    f"{guard} and ({condition})" if " or " in condition else f"{guard} and {condition}")
            then = (name if value == "old" else value[1:] if value[0] == "=" else
                    f"new_{name} + {value[1:]}".replace("+ -", "- "))
            lines.append(f"    if {condition}:\n        new_{name} = {then}\n")
            text.append(f"{then} if {condition}")
    if not lines:
        return None
    if any(re.search(r"\b_rule\b", line.split("\n")[0]) for line in lines):
        lines.insert(0, f"    _rule = new_{name}\n")  # before any line changes it
    pred = rule.astype(np.float64).copy()
    for k, value in enumerate(outcome):
        if value == "old":
            pred[k] = old[k]
        elif value[0] == "=":
            pred[k] = float(value[1:])
        elif value[0] == "+":
            pred[k] = rule[k] + float(value[1:])
    exact = float(np.mean(values_close(pred, truth, atol, rtol)))
    if exact <= float(np.mean(ok)):
        return None
    return Rule("".join(lines), exact, "tree", "; ".join(text))
