"""The data model: a complete world model written by the machine from the training episodes.

Before the first LLM call, `build_data_model` assembles what the data section's fits found into
a program of the `step(state, action) -> (next_state, reward, done)` contract, in the scaffold's
form (its head reads the state into the same names; its tail builds ``next_state`` from them):

* each component's fitted update rule (`codeworld.worlds.cwmb._relations.find_relations`: the
  exact one, else the best approximate; its exceptions as ``if`` lines), checked on every training
  transition; a whole-number component the rule gets wrong on some transitions gets a small
  decision tree for them (`codeworld.worlds.cwmb._rules.component_rule`); a real-valued one may be
  given to a symbolic regression (`regress`, below); a component with no fit stays unchanged;
* the reward (`rules.reward_rule`: a formula, a tree over a few values, or the most frequent
  value) and the done rule (`rules.done_rule`), on the new state, the old state and the action.

The search takes it as a seed program of its own (labelled ``data``: no LLM call, scored on the
training and held-out episodes like any program) and the first calls improve it
(`codeworld.synthesis.types.Seed`).

**Symbolic regression.** A real-valued component that no sparse linear fit gets right is given
a symbolic regression by the data section's own fits when the world turns it on
(`find_relations(..., regression=...)`, `codeworld.fitting._regression`): the data model takes
the relations as the world found them. `build_data_model(..., regress=f)` is a further hook for
the components still not right on every transition, called as::

    f(obs, actions, next_obs, index, names, discrete=..., atol=..., rtol=...) -> (formula, pred) | None

``obs``, ``actions``, ``next_obs`` are the training transitions, ``index`` the component,
``names`` the program's names of the components (``s[i]`` for a long state); ``formula`` is a
Python expression of those names, ``action`` (``action[j]``), ``math`` and ``np`` for the new
value, and ``pred`` its value on each transition. It is kept where it is right on more
transitions than the fit (or, where neither is, where its squared error is smaller).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from codeworld.kernels._check import values_close

if TYPE_CHECKING:
    from codeworld.scoring._scorer import Scorer
    from codeworld.synthesis.config import AssistConfig
    from codeworld.worlds.cwmb._rules import Rule
    from codeworld.worlds.cwmb._scaffold import Scaffold

# the seed's label, in the run directory, ``codeworld show`` and the report page
DATA_LABEL = "data"


@dataclass(frozen=True)
class DataModel:
    """A program built from the data, and what each of its parts is.

    Attributes:
        source: the program.
        prefix_lines: its first lines that hold nothing approximate (the head and the rules
            right on every transition): a *generate* from it continues them.
        components: per state component, ``{index, name, kind, exact, rule}`` (kind:
            ``"fit"``, ``"fit+tree"``, ``"regression"`` or ``"unchanged"``).
        reward: the reward rule's record (`Rule.to_json`).
        done: the done rule's record.
        bounded: why its approximate components are held to their recorded range (the failure
            of the model without that, beyond the recorded data), or None where they are not.
    """

    source: str
    prefix_lines: int
    components: list[dict] = field(default_factory=list)
    reward: dict = field(default_factory=dict)
    done: dict = field(default_factory=dict)
    bounded: dict | None = None

    def to_json(self) -> dict:
        out = {"prefix_lines": self.prefix_lines, "components": self.components,
               "reward": self.reward, "done": self.done}
        if self.bounded is not None:
            out["bounded"] = self.bounded
        return out

    @property
    def approximate(self) -> bool:
        """Whether a real-valued component's rule is approximate (it may run away where the
        recorded data does not go)."""
        return any(c.get("real") and c["exact"] < 1.0 and c["kind"] != "unchanged"
                   for c in self.components)


def _new(ref: str) -> str:
    """The program's name of a component's new value: ``new_x``, or ``new_s[i]``."""
    return f"new_{ref}"


def build_data_model(scaffold: Scaffold, obs, actions, next_obs, rewards, terminated, *,
                     state_atol: float, state_rtol: float, reward_atol: float,
                     reward_rtol: float, relations: list | None = None, structure: bool = True,
                     angles: bool = True, reward_from_old: bool = True,
                     regress: Callable | None = None, terms=(), stated_ends=(),
                     end_rewards=(), bounded: bool = False) -> DataModel:
    """The data model of the training transitions (see the module docstring).

    Args:
        scaffold: the env's `Scaffold` (names, head, tail).
        obs, actions, next_obs, rewards, terminated: the training transitions.
        state_atol, state_rtol, reward_atol, reward_rtol: the tolerances a prediction is checked
            with (the run's scoring mode).
        relations: the data section's relations (`find_relations` on these transitions, checked
            on all of them), when already found; else they are found here.
        structure, angles, reward_from_old: the data section's switches (`AssistConfig`).
        regress: a regression for the real-valued components the fits still miss (see the
            module docstring); None: none.
        terms: more candidate terms of the fits, the reward's included: the description's
            equations (`codeworld.worlds.cwmb._relations.description_terms`).
        stated_ends: the description's conditions for the end (`_relations.described_ends`): the
            first right on every training transition is the done rule.
        end_rewards: the rewards the description ties to the end and the data never shows
            (`codeworld.worlds.cwmb._feedback.end_rewards`): where there is one, and the done
            rule is a described end that no training transition reaches, the reward at that
            end.
        bounded: hold each real-valued component whose rule is approximate to its recorded range
            widened by that range's width on both sides (``min(max(...))`` after its rule): an
            approximate rule stepped many times may run away where the data does not go.
    """
    from codeworld.worlds.cwmb._relations import (MANY_REWARD_VALUES, find_relations,
                                                 find_reward_relation, formula_values,
                                                 relation_values)
    from codeworld.worlds.cwmb._rules import component_rule, done_rule, literal, reward_rule

    obs = np.asarray(obs, dtype=np.float64)
    next_obs = np.asarray(next_obs, dtype=np.float64)
    rewards = np.asarray(rewards, dtype=np.float64)
    ends = np.asarray(terminated, dtype=bool)
    refs = list(scaffold.references)
    discrete, n_actions = scaffold.discrete, scaffold.n_actions
    unpacked = scaffold.state_dim <= scaffold.max_unpacked
    if relations is None:
        relations = find_relations(obs, actions, next_obs, refs, discrete=discrete,
                                   n_actions=n_actions, atol=state_atol, rtol=state_rtol,
                                   mask=~ends, structure=structure, angles=angles,
                                   terms=terms)
    by_index = {r.index: r for r in relations}
    parts: list[tuple[int, bool, list[str]]] = []  # (component, right everywhere, its lines)
    components = []
    for i, ref in enumerate(refs):
        new = _new(ref)
        truth = next_obs[:, i]
        relation = by_index.get(i)
        if relation is not None:
            rule = relation_values(relation, obs, actions, refs, discrete=discrete,
                                   new_obs=next_obs)
            if relation.cases:
                lines = [f"    _rule = {relation.formula}\n", f"    {new} = _rule\n"]
                for values, outcome in relation.cases:
                    listed = ", ".join(literal(v) for v in values)
                    lines.append(f"    if _rule in ({listed}{',' if len(values) == 1 else ''}):\n"
                                 f"        {new} = {ref if outcome is None else literal(outcome)}\n")
            else:
                lines = [f"    {new} = {relation.formula}\n"]
            kind, text = "fit", relation.formula
        else:
            rule = obs[:, i].copy()
            lines = [f"    {new} = {ref}\n"] if unpacked else []
            kind, text = "unchanged", ref
        exact = float(np.mean(values_close(rule, truth, state_atol, state_rtol)))
        if exact < 1.0 and scaffold.is_int(i):
            fix = component_rule(i, refs, rule, obs, actions, next_obs, discrete=discrete,
                                 n_actions=n_actions, atol=state_atol, rtol=state_rtol)
            if relation is not None and relation.cases:
                # the exceptions as a tree over the state and the rule's value, not as a list of
                # the values seen, where that is right as often (it holds on values not seen)
                plain_rule = formula_values(relation.formula, obs, actions, refs,
                                            discrete=discrete, new_obs=next_obs)
                other = component_rule(i, refs, plain_rule, obs, actions, next_obs,
                                       discrete=discrete, n_actions=n_actions, atol=state_atol,
                                       rtol=state_rtol)
                if other is not None and other.exact >= (exact if fix is None else fix.exact):
                    lines, fix = [f"    {new} = {relation.formula}\n"], other
            if fix is not None:
                if not lines:
                    lines = [f"    {new} = {ref}\n"]
                lines.append(fix.code.replace("new_" + ref, new))
                exact, kind, text = fix.exact, kind + "+tree", f"{text}; {fix.text}"
        elif exact < 1.0 and regress is not None:
            found = regress(obs, actions, next_obs, i, refs, discrete=discrete, atol=state_atol,
                            rtol=state_rtol)
            if found is not None:
                formula, pred = found
                pred = np.asarray(pred, dtype=np.float64)
                right = float(np.mean(values_close(pred, truth, state_atol, state_rtol)))
                better = right > exact or (right == exact and np.nanmean((pred - truth) ** 2)
                                           < np.nanmean((rule - truth) ** 2))
                if better:
                    lines = [f"    {new} = {formula}\n"]
                    exact, kind, text = right, "regression", formula
        real = not scaffold.is_int(i)
        entry = {"index": i, "name": ref, "kind": kind, "exact": exact, "rule": text, "real": real}
        if bounded and real and exact < 1.0 and kind != "unchanged":
            low, high = float(np.min(truth)), float(np.max(truth))
            width = high - low
            if width > 0:
                low, high = low - width, high + width
                lines = lines + [f"    {new} = min(max({new}, {low!r}), {high!r})\n"]
                entry["bounds"] = [low, high]
        parts.append((i, exact >= 1.0, lines))
        components.append(entry)

    formula = None
    if structure and len(np.unique(rewards)) > MANY_REWARD_VALUES:
        found = find_reward_relation(next_obs, actions, rewards, refs, discrete=discrete,
                                     n_actions=n_actions, atol=reward_atol, rtol=reward_rtol,
                                     obs=obs if reward_from_old else None, terms=terms)
        formula = None if found is None else found.formula
    reward = reward_rule(obs, actions, next_obs, rewards, refs, discrete=discrete,
                         n_actions=n_actions, atol=reward_atol, rtol=reward_rtol, formula=formula)
    done = done_rule(obs, actions, next_obs, ends, refs, discrete=discrete, n_actions=n_actions)
    done, at_end = _described_end(done, stated_ends, obs, actions, next_obs, ends, refs,
                                  discrete=discrete, end_rewards=end_rewards)
    done_record = done.to_json()
    if at_end is not None:  # the reward the description gives that end
        done_record["reward"] = at_end

    ordered = _in_order(parts, refs)
    head = scaffold.head()
    body = ["    new_s = s.copy()\n"] if not unpacked else []
    body += [line for _, _, lines in ordered for line in lines]
    body.append("    # the reward and the episode's end, from the new values\n")
    body += [reward.code, done.code]
    if at_end is not None:
        body.append(f"    if done:\n        reward = {literal(at_end)}\n")
    if unpacked:
        body += [f"    {ref} = {_new(ref)}\n" for ref in refs]
    else:
        body.append("    s = new_s\n")
    source = (head + "    # written from the recorded data: each component's fitted rule\n"
              + "".join(body) + scaffold.tail())
    # a generate continues the head and the rules right everywhere (those first in `ordered`)
    lead = 0
    for _, right, lines in ordered:
        if not right:
            break
        lead += len("".join(lines).splitlines())
    prefix = len(head.splitlines()) + 1 + (0 if unpacked else 1) + lead
    return DataModel(source, prefix, components, reward.to_json(), done_record)


def _described_end(done: Rule, stated_ends, obs, actions, next_obs, ends: np.ndarray, refs,
                   *, discrete: bool, end_rewards=()) -> tuple[Rule, float | None]:
    """The done rule from the description's stated end, where one (`stated_ends`, in order) is
    right on every training transition, else `done` as the data gave it; and the reward at that
    end (see `build_data_model`'s ``end_rewards``), else None."""
    from codeworld.worlds.cwmb._relations import end_values
    from codeworld.worlds.cwmb._rules import Rule

    for condition in stated_ends:
        try:
            pred = end_values(condition, obs, actions, next_obs, refs, discrete=discrete)
        except (ArithmeticError, LookupError, NameError, TypeError, ValueError):
            continue  # a stated condition these arrays cannot compute
        if np.array_equal(pred, ends):
            rule = Rule(f"    done = bool({condition})\n", 1.0, "described", condition)
            unseen = len(end_rewards) == 1 and not ends.any()
            return rule, float(end_rewards[0]) if unseen else None
    return done, None


def _in_order(parts: list[tuple[int, bool, list[str]]], refs: list[str]) -> list:
    """The components' lines in an order that computes every new value before a line reads it
    (a regression may read ``new_<name>`` of another component): those right on every
    transition first, then by component, each after the components it reads."""
    reads = {i: {j for j, ref in enumerate(refs) if j != i and re.search(
        rf"\bnew_{re.escape(ref)}(?![\w\[])", "".join(lines))} for i, _, lines in parts}
    pending = sorted(parts, key=lambda p: (not p[1], p[0]))
    done: set[int] = set()
    ordered = []
    while pending:
        ready = next((p for p in pending if reads[p[0]] <= done), pending[0])
        pending.remove(ready)
        ordered.append(ready)
        done.add(ready[0])
    return ordered


FLOOR_LABEL = "floor"


def world_seeds(scorer: Scorer, scaffold: Scaffold, relations: list | None,
                assist: AssistConfig, terms=(), stated_ends=(), end_rewards=(),
                beyond: Callable[[str], dict | None] | None = None) -> tuple:
    """The seed programs of a CWMB world (`codeworld.synthesis.types.Seed`): the data model of
    the scorer's (training) buffer, a start, and the do-nothing model (the scaffold's skeleton:
    state unchanged, the most frequent reward, never done), a candidate only; none with
    ``assist.data_model`` off. ``terms``: the description's equations as candidate terms of the
    fits; ``stated_ends`` and ``end_rewards``: its stated end and the reward there
    (`build_data_model`).

    ``beyond(source)`` steps a program where planning takes it, beyond the recorded data
    (`codeworld.worlds.cwmb._cwmb.ScorerEvaluator.fails_beyond_data`: the failure, or None). A
    data model with an approximate real-valued rule that fails there (its rules, stepped on
    their own outputs, run to infinity) is built again with those components held to their
    recorded range (`build_data_model(bounded=True)`), and that one is the seed where it runs
    everywhere; otherwise the seed is the model as built, and the search scores it as buggy."""
    from codeworld.scoring._scorer import tolerances
    from codeworld.synthesis.types import Seed

    if not assist.data_model:
        return ()
    buf, spec = scorer.buffer, scorer.spec
    tol = tolerances(spec, scorer.mode)
    def build(bounded: bool) -> DataModel:
        return build_data_model(scaffold, buf.obs, buf.actions, buf.next_obs, buf.rewards,
                                buf.terminated, state_atol=tol.state_atol, state_rtol=tol.state_rtol,
                                reward_atol=tol.reward_atol, reward_rtol=tol.reward_rtol,
                                relations=relations, structure=assist.structure,
                                angles=assist.angles, reward_from_old=assist.reward_from_old,
                                terms=terms, stated_ends=stated_ends, end_rewards=end_rewards,
                                bounded=bounded)

    model = build(False)
    if beyond is not None and assist.bounded_data_model and model.approximate:
        failure = beyond(model.source)
        if failure is not None:
            held = build(True)
            if beyond(held.source) is None:
                model = replace(held, bounded={"unbounded": failure.get("message"),
                                               "status": failure.get("status")})
    return (Seed(DATA_LABEL, model.source, start=True, prefix_lines=model.prefix_lines,
                 record=model.to_json()),
            Seed(FLOOR_LABEL, scaffold.skeleton(), start=False))
