"""Sandbox ops of the object world: check a model program against data, and plan over it.

These ops run only inside a sandbox worker (``Sandbox.call(op_evaluate, ...)``): they execute the
LLM-written program. The parent never imports a program; it sends its source.
A loaded program is kept in the worker (by its source), so planning many times over the same
model loads it once. A program that loops forever is stopped by the sandbox's wall-clock limit,
which ends that request, not the agent.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable

from codeworld._model import exec_candidate
from codeworld.sandbox._ops import candidate_error
from codeworld.worlds.objects._model import check_agent_source
from codeworld.worlds.objects._states import copy_state, normalize_state, state_key

MODEL_FILENAME = "agent_model.py"
_CACHE_KEY = "agent_models"


class InvalidModelOutput(ValueError):
    """The program returned something outside the contract."""


def _load(ctx, source: str) -> tuple[Callable, Callable]:
    cache = ctx.state.setdefault(_CACHE_KEY, {})
    ctx.state["filename"] = MODEL_FILENAME
    if source in cache:
        return cache[source]
    check_agent_source(source)
    namespace = exec_candidate(source, MODEL_FILENAME, {"__name__": "agent_model"})
    functions = (namespace["transition"], namespace["reward"])
    if not all(callable(f) for f in functions):
        raise InvalidModelOutput("transition and reward must be functions")
    cache.clear()  # one model at a time: a worker serves one agent
    cache[source] = functions
    return functions


def _simulate(functions, state: dict, action: int, mission: str) -> tuple[dict, float, bool]:
    transition, reward = functions
    next_state = transition(copy_state(state), action)
    if not isinstance(next_state, dict):
        raise InvalidModelOutput(f"transition returned {type(next_state).__name__}, not a dict state")
    out = reward(copy_state(state), action, copy_state(next_state), mission)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise InvalidModelOutput("reward must return a pair (reward, done)")
    value, done = out
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidModelOutput(f"reward returned a non-number reward {value!r}") from None
    if not math.isfinite(value):
        raise InvalidModelOutput(f"reward returned a non-finite reward {value!r}")
    return next_state, value, bool(done)


def _error_record(exc: BaseException, index: int | None) -> dict:
    record = candidate_error(exc, MODEL_FILENAME)
    record["transition"] = index
    return record


def bfs_plan(functions, start: dict, mission: str, n_actions: int, max_nodes: int,
             max_depth: int, target: Callable[[dict], tuple[int, int] | None] | None = None,
             reward_first: bool = False) -> dict:
    """Breadth-first search over the model for the shortest action sequence that gets reward > 0.

    With ``target``, the search is for a state where ``target(state)`` names ``(rank, action)``
    instead (the plan ends with that action), reward or not: the nearest of rank 0 (the search
    stops there), else the nearest of the lowest rank met before the states, or ``max_nodes``,
    ran out (one search instead of one per rank, each of which would expand the same states).
    With ``reward_first`` as well, reward anywhere in reach comes before every target: the
    search goes on past the targets until it finds reward or runs out (one search where a
    search for reward and then one for a target would expand the same states twice).

    Returns:
        ``found``, ``actions`` (the plan), ``predicted`` (per step: next state, reward, done under
        the model), ``expanded`` (states expanded) and ``limit_hit`` (the search stopped at
        ``max_nodes`` rather than exhausting the reachable states); with ``target``,
        ``explore`` (the plan goes to a target, not to reward).
    """
    parents: dict[str, tuple[str, int] | None] = {state_key(start): None}
    frontier = deque([(start, state_key(start), 0)])
    expanded = 0
    goal: tuple[str, int] | None = None
    best: tuple[int, str, int] | None = None  # the target's lowest rank met: (rank, key, action)
    limit_hit = False
    while frontier and goal is None:
        state, key, depth = frontier.popleft()
        if depth >= max_depth:
            continue
        if expanded >= max_nodes:
            limit_hit = True
            break
        expanded += 1
        hit = None if target is None else target(state)
        if hit is not None and (best is None or hit[0] < best[0]):
            best = (hit[0], key, hit[1])
            if hit[0] <= 0 and not reward_first:
                break
        for action in range(n_actions):
            next_state, value, done = _simulate(functions, state, action, mission)
            if (target is None or reward_first) and value > 0:
                goal = (key, action)
                break
            next_key = state_key(next_state)
            if done or next_key in parents:
                continue
            parents[next_key] = (key, action)
            frontier.append((next_state, next_key, depth + 1))
    explore = {} if target is None else {"explore": goal is None and best is not None}
    if goal is None and best is not None:
        goal, limit_hit = (best[1], best[2]), False
    if goal is None:
        return {"found": False, "actions": [], "predicted": [], "expanded": expanded,
                "limit_hit": limit_hit, **explore}
    actions = [goal[1]]
    link = parents[goal[0]]
    while link is not None:
        actions.append(link[1])
        link = parents[link[0]]
    actions.reverse()
    predicted, state = [], start
    for action in actions:
        state, value, done = _simulate(functions, state, action, mission)
        predicted.append({"next_state": state, "reward": value, "done": done})
    return {"found": True, "actions": actions, "predicted": predicted, "expanded": expanded,
            "limit_hit": False, **explore}


def check_transitions(functions, transitions: list[dict], max_mismatches: int = 3) -> dict:
    """How many recorded transitions the model explains (in all, by `transition` alone and by
    `reward` alone), with the first mismatches (one per recorded state, action and mission: a
    transition recorded twice is described once) and the first error."""
    correct = state_correct = reward_correct = 0
    mismatches: list[dict] = []
    described: set[tuple[str, int, str]] = set()
    error = None
    for index, t in enumerate(transitions):
        try:
            next_state, value, done = _simulate(functions, t["state"], int(t["action"]), t["mission"])
        except Exception as exc:  # noqa: BLE001 - the candidate's failure, reported to the LLM
            if error is None:
                error = _error_record(exc, index)
            continue
        ok_state = normalize_state(next_state) == normalize_state(t["next_state"])
        ok_reward = abs(value - float(t["reward"])) <= 1e-6
        ok_done = done == bool(t["done"])
        state_correct += ok_state
        reward_correct += ok_reward and ok_done
        if ok_state and ok_reward and ok_done:
            correct += 1
            continue
        key = (state_key(t["state"]), int(t["action"]), t["mission"])
        if len(mismatches) < max_mismatches and key not in described:
            described.add(key)
            mismatches.append({"index": index, "predicted_next_state": normalize_state(next_state),
                               "predicted_reward": value, "predicted_done": done,
                               "state_ok": ok_state, "reward_ok": ok_reward, "done_ok": ok_done})
    return {"n": len(transitions), "correct": correct, "state_correct": state_correct,
            "reward_correct": reward_correct, "mismatches": mismatches, "error": error}


def op_evaluate(ctx, source: str, transitions: list[dict], starts: list[dict], n_actions: int,
                max_nodes: int = 20000, max_depth: int = 100, max_mismatches: int = 3) -> dict:
    """Data consistency over ``transitions`` and optimism from each of ``starts``.

    Args:
        source: the model program.
        transitions: recorded ``{state, action, next_state, reward, done, mission}``.
        starts: ``{state, mission}`` from which the planner must reach reward (optimism).
        n_actions: actions are ``0 .. n_actions - 1``.
        max_nodes: states the planner may expand per start.
        max_depth: the longest plan.
        max_mismatches: mismatched transitions described in the answer.
    """
    functions = _load(ctx, source)
    out = check_transitions(functions, transitions, max_mismatches)
    plans = []
    for start in starts:
        try:
            plan = bfs_plan(functions, start["state"], start["mission"], n_actions, max_nodes, max_depth)
        except Exception as exc:  # noqa: BLE001
            plan = {"found": False, "actions": [], "predicted": [], "expanded": 0,
                    "limit_hit": False, "error": _error_record(exc, None)}
        plans.append(plan)
    out["plans"] = plans
    return out


def op_plan(ctx, source: str, state: dict, mission: str, n_actions: int, max_nodes: int = 20000,
            max_depth: int = 100) -> dict:
    """A plan from ``state`` for ``mission`` under the model (see `bfs_plan`)."""
    return bfs_plan(_load(ctx, source), state, mission, n_actions, max_nodes, max_depth)
