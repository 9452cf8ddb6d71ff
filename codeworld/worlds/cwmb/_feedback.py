"""Error summaries: what a program gets wrong over the whole buffer, for the *improve* prompt.

One mispredicted transition says little about a program that is wrong in many ways: a small
model "fixes" that one case and breaks others. `summarize_errors` reads the model's predictions
for every transition (trusted arrays, computed in the sandbox) against the recorded ones and
writes, within a token budget:

* for each state component, by name: the fraction of transitions where it is wrong, the typical
  error (median of predicted minus true over the wrong ones), and whether the prediction kept the
  old value where the true one changed;
* the reward: the confusion of true and predicted values when there are few distinct values, the
  fraction wrong and the typical error otherwise;
* done: terminations missed and terminations predicted where the episode went on;
* a few mispredicted transitions, each from a different error group (the set of things wrong).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

# A token is about this many characters of this kind of text (numbers, names, punctuation).
CHARS_PER_TOKEN = 4
# how every summary starts (`codeworld.worlds.cwmb._cwmb` tells a summary from other feedback by it)
SUMMARY_HEAD = "Over all "


def _num(value: float) -> str:
    from codeworld.llm._prompts import format_number

    return format_number(value)


def _vec(values) -> str:
    return "[" + ", ".join(_num(v) for v in values) + "]"


def summarize_errors(*, states: np.ndarray, actions: np.ndarray, next_states: np.ndarray,
                     rewards: np.ndarray, dones: np.ndarray, predicted_states: np.ndarray,
                     predicted_rewards: np.ndarray, predicted_dones: np.ndarray,
                     names: list[str] | tuple[str, ...], state_atol: float, state_rtol: float,
                     reward_atol: float, reward_rtol: float, discrete: bool,
                     max_tokens: int = 700, max_examples: int = 3) -> str:
    """The error summary (empty when every transition is right).

    Args:
        states, actions, next_states, rewards, dones: the recorded transitions (only those the
            model predicted).
        predicted_states, predicted_rewards, predicted_dones: the model's predictions.
        names: one name per state component.
        state_atol, state_rtol, reward_atol, reward_rtol: the comparison tolerances.
        discrete: whether actions are ints (for how they are shown).
        max_tokens: the budget of the whole summary.
        max_examples: at most this many example transitions.
    """
    if len(states) == 0:
        return ""
    e = _errors(states, next_states, rewards, dones, predicted_states, predicted_rewards,
                predicted_dones, names, state_atol, state_rtol, reward_atol, reward_rtol)
    if not e.wrong_any.any():
        return ""
    budget = max_tokens * CHARS_PER_TOKEN
    lines = [f"{SUMMARY_HEAD}{e.n} recorded transitions, the program is wrong on "
             f"{int(e.wrong_any.sum())} ({_pct(e.wrong_any.mean())})."]

    # State components, the most often wrong first, within the budget.
    component_lines = []
    order = sorted(range(e.d), key=lambda j: (-e.wrong_dims[:, j].mean(), j))
    for j in order:
        frac = e.wrong_dims[:, j].mean()
        if frac == 0:
            continue
        rows = e.wrong_dims[:, j]
        typical = float(np.median(e.err[rows, j]))
        text = (f"- {e.names[j]} (state[{j}]): wrong in {_pct(frac)}, typical error "
                f"{'+' if typical > 0 else ''}{_num(typical)} (predicted minus true)")
        kept = rows & (e.pred[:, j] == e.states[:, j]) & (e.truth[:, j] != e.states[:, j])
        if kept.sum() >= 0.5 * rows.sum():
            text += "; mostly left unchanged where it should change"
        component_lines.append(text)
    right_components = [e.names[j] for j in range(e.d) if e.wrong_dims[:, j].mean() == 0]
    if component_lines:
        lines.append("Next state, per component:")
        lines += component_lines
        if right_components and len(right_components) <= 8:
            lines.append(f"- always right: {', '.join(right_components)}")
        elif right_components:
            lines.append(f"- {len(right_components)} other components always right")
    else:
        lines.append("Next state: always right.")

    # Reward.
    if e.wrong_r.any():
        distinct = np.unique(e.true_r)
        if len(distinct) <= 6:
            pairs = Counter((float(t), float(p))
                            for t, p in zip(e.true_r[e.wrong_r], e.pred_r[e.wrong_r]))
            shown = ", ".join(f"true {_num(t)} predicted {_num(p)}: {c}x"
                              for (t, p), c in pairs.most_common(4))
            more = "" if len(pairs) <= 4 else f", and {len(pairs) - 4} other pairs"
            lines.append(f"Reward: wrong in {_pct(e.wrong_r.mean())} ({shown}{more}).")
        else:
            typical = float(np.median(e.pred_r[e.wrong_r] - e.true_r[e.wrong_r]))
            lines.append(f"Reward: wrong in {_pct(e.wrong_r.mean())}, typical error "
                         f"{'+' if typical > 0 else ''}{_num(typical)} (predicted minus true).")
    else:
        lines.append("Reward: always right.")

    # Done.
    missed = int((e.true_d & ~e.pred_d).sum())
    false_end = int((~e.true_d & e.pred_d).sum())
    if missed or false_end:
        parts = []
        if missed:
            parts.append(f"missed {missed} of {int(e.true_d.sum())} terminations")
        if false_end:
            parts.append(f"said done on {false_end} of {int((~e.true_d).sum())} steps where the "
                         "episode went on")
        lines.append("Done: " + "; ".join(parts) + ".")
    else:
        lines.append("Done: always right.")

    text = _fit("\n".join(lines), budget)

    # Examples: the first transition of each of the largest error groups.
    groups: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(e.wrong_any):
        key = (tuple(np.flatnonzero(e.wrong_dims[i])), bool(e.wrong_r[i]), bool(e.wrong_d[i]))
        groups.setdefault(key, []).append(int(i))
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    examples = []
    for key, rows in ranked[:max_examples]:
        i = rows[0]
        what = ([e.names[j] for j in key[0]] + (["reward"] if key[1] else [])
                + (["done"] if key[2] else []))
        action = actions[i]
        action_text = (_num(float(np.asarray(action).reshape(-1)[0])) if discrete
                       else _vec(np.asarray(action).reshape(-1)))
        block = (f"Example ({len(rows)} transitions wrong in the same way: {', '.join(what)}):\n"
                 f"  state {_vec(e.states[i])}, action {action_text}\n"
                 f"  true:      next_state {_vec(e.truth[i])}, reward {_num(e.true_r[i])}, "
                 f"done {str(bool(e.true_d[i])).lower()}\n"
                 f"  predicted: next_state {_vec(e.pred[i])}, reward {_num(e.pred_r[i])}, "
                 f"done {str(bool(e.pred_d[i])).lower()}")
        if len(text) + len(block) + 2 > budget:
            break
        examples.append(block)
        text += "\n\n" + block
    return text


@dataclass(frozen=True)
class _Errors:
    """What a program gets wrong on each transition, as both summaries read it (`_errors`).

    Attributes:
        n, d: the transitions and the state's components.
        names: one name per component (``s<i>`` where the given names do not fit).
        states, truth, pred: the old states, the true and the predicted new states (``(n, d)``).
        err: predicted minus true new state.
        wrong_dims: per transition and component, outside the state tolerances.
        true_r, pred_r, wrong_r: the true and predicted rewards, and where they differ.
        true_d, pred_d, wrong_d: the true and predicted ends, and where they differ.
        wrong_any: the transitions wrong in any way.
    """

    n: int
    d: int
    names: list
    states: np.ndarray
    truth: np.ndarray
    pred: np.ndarray
    err: np.ndarray
    wrong_dims: np.ndarray
    true_r: np.ndarray
    pred_r: np.ndarray
    wrong_r: np.ndarray
    true_d: np.ndarray
    pred_d: np.ndarray
    wrong_d: np.ndarray
    wrong_any: np.ndarray


def _errors(states, next_states, rewards, dones, predicted_states, predicted_rewards,
            predicted_dones, names, state_atol, state_rtol, reward_atol, reward_rtol) -> _Errors:
    """The arrays both summaries read: sizes, names, values, errors and what is wrong where."""
    n = len(states)
    states = np.asarray(states, dtype=np.float64).reshape(n, -1)
    truth = np.asarray(next_states, dtype=np.float64).reshape(n, -1)
    pred = np.asarray(predicted_states, dtype=np.float64).reshape(n, -1)
    d = truth.shape[1]
    names = list(names) if len(names) == d else [f"s{i}" for i in range(d)]
    err = pred - truth
    wrong_dims = ~(np.abs(err) <= state_atol + state_rtol * np.abs(truth))
    true_r = np.asarray(rewards, dtype=np.float64)
    pred_r = np.asarray(predicted_rewards, dtype=np.float64)
    wrong_r = ~(np.abs(pred_r - true_r) <= reward_atol + reward_rtol * np.abs(true_r))
    true_d = np.asarray(dones, dtype=bool)
    pred_d = np.asarray(predicted_dones, dtype=bool)
    wrong_d = true_d != pred_d
    wrong_any = wrong_dims.any(axis=1) | wrong_r | wrong_d
    return _Errors(n, d, names, states, truth, pred, err, wrong_dims, true_r, pred_r, wrong_r,
                   true_d, pred_d, wrong_d, wrong_any)


def _pct(fraction: float) -> str:
    value = 100.0 * float(fraction)
    return f"{value:.0f}%" if value >= 1 or value == 0 else f"{value:.1f}%"


def _fit(text: str, budget: int) -> str:
    """``text`` cut at a line boundary to fit ``budget`` characters, saying that it was cut."""
    if len(text) <= budget:
        return text
    kept, size = [], 0
    for line in text.splitlines():
        if size + len(line) + 1 > budget - 40:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept) + "\n(... more errors not shown)"


# ------------------------------------------------------------------------------ targeted requests

# the first line of a targeted request's list of what to change (`targeted_errors`)
TARGET_HEAD = "Fix one thing: "
REWARD, DONE = "reward", "done"


@dataclass(frozen=True)
class Targets:
    """What a targeted request says about a component beside its errors (`targeted_errors`).

    Attributes:
        tried: per component (a state component's name, ``"reward"``, ``"done"``), the data
            section's lines about it: the fits already tried for it.
        described: per component, the description's sentences that mention it.
    """

    tried: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    described: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def build_targets(description: str, names, relations=(), data: str = "") -> Targets:
    """The `Targets` of one world: the relations' lines per component (`Relation.line`), the
    data section's reward and episode-end lines, and the description's sentences about each
    component (`mentions`). Built from the texts and names alone."""
    tried: dict[str, tuple[str, ...]] = {}
    for relation in relations:
        tried[relation.name] = (relation.line().splitlines()[0].split("  (`new_x`")[0],)
    lines = [line.strip() for line in data.splitlines()]
    tried[REWARD] = tuple(line for line in lines if line.startswith(("- rewards:", "- reward =")))
    tried[DONE] = tuple(line for line in lines if line.startswith("- done ="))
    described = {name: mentions(description, _words(name)) for name in names}
    described[REWARD] = mentions(description, ("reward",))
    described[DONE] = mentions(description, ("terminat",), prefix=True, limit=3)
    return Targets(tried, described)


def _words(name: str) -> tuple[str, ...]:
    return tuple(w for w in re.split(r"[_\W\d]+", name.lower()) if len(w) > 1)


def mentions(description: str, words, *, prefix: bool = False, limit: int = 2,
             max_chars: int = 200) -> tuple[str, ...]:
    """The description's sentences (a table row counts as one) that hold every one of `words`
    as a word (case ignored; with `prefix`, as the start of a word), at most `limit`, each cut to
    `max_chars`."""
    if not words:
        return ()
    patterns = [re.compile(rf"\b{re.escape(w)}" + ("" if prefix else r"\b"), re.IGNORECASE)
                for w in words]
    found: list[str] = []
    for line in description.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or set(line) <= set("|-: "):
            continue
        units = [line] if line.startswith("|") else re.split(r"(?<=[.!?])\s+", line)
        for unit in units:
            if all(p.search(unit) for p in patterns) and unit not in found:
                found.append(unit if len(unit) <= max_chars else unit[:max_chars - 3] + "...")
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


def targeted_errors(*, states: np.ndarray, actions: np.ndarray, next_states: np.ndarray,
                    rewards: np.ndarray, dones: np.ndarray, predicted_states: np.ndarray,
                    predicted_rewards: np.ndarray, predicted_dones: np.ndarray,
                    names: list[str] | tuple[str, ...], state_atol: float, state_rtol: float,
                    reward_atol: float, reward_rtol: float, discrete: bool,
                    targets: Targets | None = None, max_tokens: int = 700,
                    max_rows: int = 3) -> str:
    """What an *improve* request asks for, aimed at one component (empty when every
    transition is right): the components already right ("keep as is"), then the one the
    program gets wrong most often (a state component, the reward or done) with its rows of
    largest error (state, action, predicted, true), the fits already tried for it and the
    description's sentences about it (`targets`), then the names of the others still wrong,
    for later calls. A small model copies long requests back unchanged: this one stays short.

    The arguments are `summarize_errors`'s; the transitions are those the search sees (the
    training episodes).
    """
    if len(states) == 0:
        return ""
    e = _errors(states, next_states, rewards, dones, predicted_states, predicted_rewards,
                predicted_dones, names, state_atol, state_rtol, reward_atol, reward_rtol)
    if not e.wrong_any.any():
        return ""
    targets = targets or Targets()
    # (name, index or None, wrong rows, error per row, predicted, true), most often wrong first
    parts = [(e.names[j], j, e.wrong_dims[:, j], e.err[:, j], e.pred[:, j], e.truth[:, j])
             for j in range(e.d)]
    parts += [(REWARD, None, e.wrong_r, e.pred_r - e.true_r, e.pred_r, e.true_r),
              (DONE, None, e.wrong_d, np.where(e.true_d & ~e.pred_d, 2.0, 1.0) * e.wrong_d,
               e.pred_d.astype(float), e.true_d.astype(float))]
    wrong = sorted((p for p in parts if p[2].any()), key=lambda p: -p[2].mean())
    right = [p[0] for p in parts if not p[2].any()]
    lines = [f"{SUMMARY_HEAD}{e.n} recorded transitions (training episodes), the program is "
             f"wrong on {int(e.wrong_any.sum())} ({_pct(e.wrong_any.mean())})."]
    if right:
        shown = ", ".join(right[:12]) + (f" and {len(right) - 12} more" if len(right) > 12 else "")
        lines.append(f"Keep as is (right on every transition): {shown}.")
    name, j, rows, error, predicted, true = wrong[0]
    what = "new " + name if j is not None else name
    lines.append(f"{TARGET_HEAD}{what}. Change only the lines that compute it, with the rule "
                 "that the description (or the physics or game it describes) gives; the answer "
                 "must differ from the program above.")
    where = f" (state[{j}])" if j is not None else ""
    text = f"- {name}{where}: wrong on {int(rows.sum())} of {e.n} transitions ({_pct(rows.mean())})"
    if name != DONE:
        typical = float(np.median(error[rows]))
        text += f", typical error {'+' if typical > 0 else ''}{_num(typical)} (predicted minus true)"
        if j is not None:
            kept = rows & (e.pred[:, j] == e.states[:, j]) & (e.truth[:, j] != e.states[:, j])
            if kept.sum() >= 0.5 * rows.sum():
                text += "; mostly left unchanged where it should change"
    else:
        text += (f": missed {int((e.true_d & ~e.pred_d).sum())} of {int(e.true_d.sum())} ends, "
                 f"said done on {int((~e.true_d & e.pred_d).sum())} steps that went on")
    lines.append(text)
    worst = np.flatnonzero(rows)[np.argsort(-np.abs(error[rows]), kind="stable")][:max_rows]
    lines.append("- its largest errors (state, action: predicted, true):")
    for i in worst:
        action = np.asarray(actions[i]).reshape(-1)
        action_text = _num(float(action[0])) if discrete else _vec(action)
        shown = ((str(bool(predicted[i])).lower(), str(bool(true[i])).lower()) if name == DONE
                 else (_num(predicted[i]), _num(true[i])))
        lines.append(f"  {_vec(e.states[i])}, {action_text}: {shown[0]}, true {shown[1]}")
    for line in targets.tried.get(name, ()):
        exact = "right on every recorded transition" in line  # `Relation.line`'s words
        lines.append(("- the recorded data's rule (write it as it is): " if exact else
                      "- tried already (the recorded data's fit; do not write it back): ")
                     + line.lstrip("- "))
    for sentence in targets.described.get(name, ()):
        lines.append(f'- the description says: "{sentence}"')
    if len(wrong) > 1:
        lines.append("Also wrong, for a later call: "
                     + ", ".join(f"{p[0]} ({_pct(p[2].mean())})" for p in wrong[1:6]) + ".")
    return _fit("\n".join(lines), max_tokens * CHARS_PER_TOKEN)


# the first line of the feedback of a program right on every training transition that never
# returns a reward the description states and the data never shows (`unseen_rewards_feedback`)
UNSEEN_HEAD = "Right on every one of "
# a reward with more distinct recorded values than this is a formula, not a list of cases
MAX_REWARD_VALUES = 10
# a sentence about a setting of the environment (``natural=True``, "if natural is True"): its
# values hold only under that setting
_SETTING = re.compile(r"\w\s*=\s*(?:True|False)\b|\bis (?:True|False)\b")
_NUMBER = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?!\w|\.\d)")


def described_rewards(description: str) -> tuple[tuple[float, str], ...]:
    """The reward values the description states, each with its sentence (a list item counts as
    one): the numbers in the sentences of its reward section (a heading that names rewards),
    leaving out sentences about a threshold (a score to reach, not a reward) or about a setting
    (``flag=True``, "if flag is True": another variant of the environment), numbers inside
    names (``v1``, ``x_2``) and bounds of conditions (``< 0.2``). Empty without such a section."""
    found: list[tuple[float, str]] = []
    inside = False
    for line in description.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            inside = re.search(r"\breward", stripped, re.IGNORECASE) is not None
            continue
        if not inside or not stripped:
            continue
        item = re.sub(r"^(?:[-*+]\s+|\|\s*)", "", stripped)  # a list item's or a row's mark
        for unit in re.split(r"(?<=[.!?])\s+", item):
            if not unit or re.search(r"threshold", unit, re.IGNORECASE) or _SETTING.search(unit):
                continue
            text = unit.replace("`", " ")
            for match in _NUMBER.finditer(text):
                if text[:match.start()].rstrip().endswith(("<", ">", "≤", "≥", "<=", ">=")):
                    continue  # a bound in a condition, not a reward
                value = float(match.group())
                if all(value != v for v, _ in found):
                    found.append((value, unit))
    return tuple(found)


def unseen_rewards(described, rewards: np.ndarray, atol: float, rtol: float
                   ) -> tuple[tuple[float, str], ...]:
    """The `described_rewards` that no recorded reward equals (within the scoring tolerance),
    where the recorded rewards take few values (at most `MAX_REWARD_VALUES`): a reward of many
    values is a formula, and its stated numbers are its constants."""
    values = np.unique(np.asarray(rewards, dtype=np.float64))
    if len(values) == 0 or len(values) > MAX_REWARD_VALUES:
        return ()
    return tuple((v, sentence) for v, sentence in described
                 if not np.any(np.abs(values - v) <= atol + rtol * abs(v)))


# a sentence that ties a reward to the episode's end
_AT_END = re.compile(r"\bterminat\w*|\b(?:episode|game|run) (?:ends|is over)\b|\bends the episode\b",
                     re.IGNORECASE)


def end_rewards(unseen) -> tuple[float, ...]:
    """Of the `unseen_rewards` (value, sentence), the values whose sentence ties them to the
    episode's end ("results in termination with a reward of 0"): the reward of an end the
    training episodes never reach."""
    return tuple(value for value, sentence in unseen if _AT_END.search(sentence))


def unseen_rewards_feedback(n: int, missing, stated: int) -> str:
    """What an *improve* request of a program right on all `n` training transitions says when
    it never returns some of the rewards the description states and the data never shows
    (`missing`, each with its sentence; `stated` such rewards in all): those rewards, their
    sentences, and the one thing to change."""
    lines = [f"{UNSEEN_HEAD}{n} recorded transitions (training episodes). But the description "
             f"states {'a reward' if stated == 1 else 'rewards'} that the recorded episodes never "
             "reached, and the program returns "
             f"{'it' if len(missing) == 1 else 'none of these'} on no recorded state with any action:"]
    for value, sentence in missing:
        lines.append(f'- reward {_num(value)}: the description says "{sentence}"')
    lines.append(f"{TARGET_HEAD}reward. Add {'it' if len(missing) == 1 else 'each of them'} with "
                 "the condition the description gives (read the state's parts as the description "
                 "encodes them), and end the episode where the description says it ends; keep "
                 "every other line as it is.")
    return "\n".join(lines)


def unseen_sentence(feedback: str) -> str:
    """The description's sentence of the first reward an `unseen_rewards_feedback` asks for
    (empty for any other feedback)."""
    match = re.search(r'^- reward [^:]+: the description says "(.*)"$', feedback, re.MULTILINE)
    return match.group(1) if match else ""


def target_of(feedback: str) -> str | None:
    """The component a `targeted_errors` text aims at (``new x``, ``reward``, ``done``), or None
    for any other feedback."""
    for line in feedback.splitlines():
        if line.startswith(TARGET_HEAD):
            return line[len(TARGET_HEAD):].split(". ", 1)[0]
    return None
