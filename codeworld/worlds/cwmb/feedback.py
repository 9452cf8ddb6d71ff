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

from collections import Counter

import numpy as np

# A token is about this many characters of this kind of text (numbers, names, punctuation).
CHARS_PER_TOKEN = 4


def _num(value: float) -> str:
    from codeworld.llm.prompts import format_number

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
    n = len(states)
    if n == 0:
        return ""
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
    if not wrong_any.any():
        return ""
    budget = max_tokens * CHARS_PER_TOKEN
    lines = [f"Over all {n} recorded transitions, the program is wrong on {int(wrong_any.sum())} "
             f"({_pct(wrong_any.mean())})."]

    # State components, the most often wrong first, within the budget.
    component_lines = []
    order = sorted(range(d), key=lambda j: (-wrong_dims[:, j].mean(), j))
    for j in order:
        frac = wrong_dims[:, j].mean()
        if frac == 0:
            continue
        rows = wrong_dims[:, j]
        typical = float(np.median(err[rows, j]))
        text = (f"- {names[j]} (state[{j}]): wrong in {_pct(frac)}, typical error "
                f"{'+' if typical > 0 else ''}{_num(typical)} (predicted minus true)")
        kept = rows & (pred[:, j] == states[:, j]) & (truth[:, j] != states[:, j])
        if kept.sum() >= 0.5 * rows.sum():
            text += "; mostly left unchanged where it should change"
        component_lines.append(text)
    right_components = [names[j] for j in range(d) if wrong_dims[:, j].mean() == 0]
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
    if wrong_r.any():
        distinct = np.unique(true_r)
        if len(distinct) <= 6:
            pairs = Counter((float(t), float(p)) for t, p in zip(true_r[wrong_r], pred_r[wrong_r]))
            shown = ", ".join(f"true {_num(t)} predicted {_num(p)}: {c}x"
                              for (t, p), c in pairs.most_common(4))
            more = "" if len(pairs) <= 4 else f", and {len(pairs) - 4} other pairs"
            lines.append(f"Reward: wrong in {_pct(wrong_r.mean())} ({shown}{more}).")
        else:
            typical = float(np.median(pred_r[wrong_r] - true_r[wrong_r]))
            lines.append(f"Reward: wrong in {_pct(wrong_r.mean())}, typical error "
                         f"{'+' if typical > 0 else ''}{_num(typical)} (predicted minus true).")
    else:
        lines.append("Reward: always right.")

    # Done.
    missed = int((true_d & ~pred_d).sum())
    false_end = int((~true_d & pred_d).sum())
    if missed or false_end:
        parts = []
        if missed:
            parts.append(f"missed {missed} of {int(true_d.sum())} terminations")
        if false_end:
            parts.append(f"said done on {false_end} of {int((~true_d).sum())} steps where the "
                         "episode went on")
        lines.append("Done: " + "; ".join(parts) + ".")
    else:
        lines.append("Done: always right.")

    text = _fit("\n".join(lines), budget)

    # Examples: the first transition of each of the largest error groups.
    groups: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(wrong_any):
        key = (tuple(np.flatnonzero(wrong_dims[i])), bool(wrong_r[i]), bool(wrong_d[i]))
        groups.setdefault(key, []).append(int(i))
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    examples = []
    for key, rows in ranked[:max_examples]:
        i = rows[0]
        what = [names[j] for j in key[0]] + (["reward"] if key[1] else []) + (["done"] if key[2] else [])
        action = actions[i]
        action_text = (_num(float(np.asarray(action).reshape(-1)[0])) if discrete
                       else _vec(np.asarray(action).reshape(-1)))
        block = (f"Example ({len(rows)} transitions wrong in the same way: {', '.join(what)}):\n"
                 f"  state {_vec(states[i])}, action {action_text}\n"
                 f"  true:      next_state {_vec(truth[i])}, reward {_num(true_r[i])}, "
                 f"done {str(bool(true_d[i])).lower()}\n"
                 f"  predicted: next_state {_vec(pred[i])}, reward {_num(pred_r[i])}, "
                 f"done {str(bool(pred_d[i])).lower()}")
        if len(text) + len(block) + 2 > budget:
            break
        examples.append(block)
        text += "\n\n" + block
    return text


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
