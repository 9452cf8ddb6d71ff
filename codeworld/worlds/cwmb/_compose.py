"""Composing a run's programs component by component: each part of the output from the program that
predicts it best.

A search writes many programs, and a small model's programs are often right in different places:
one moves the position correctly and gets the reward wrong, another the reverse. Both scoring
modes give a transition credit that is a sum over components (each next-state dimension, the
reward, the done flag; `codeworld.scoring._scorer.compare_predictions`), so a program that takes every
component from the program best at it scores at least as well as each of them, and the choice can
be made one component at a time.

`compose_programs` runs the candidates in the sandbox over the buffer (their predictions are data
and come back to the parent, which only compares them with the recorded transitions), picks a
source for every component on those predictions, and writes an ordinary program that contains
the chosen candidates side by side (their module-level names prefixed so that they cannot clash)
and a ``step`` that calls each once and assembles the output. That program is untrusted like its
parts: the caller scores it in the sandbox like any other and keeps it only when it scores higher.
Only programs in the functional form (a module-level ``def step``) take part.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from codeworld._model_worker import PROGRAM_TIMEOUT_S
from codeworld.synthesis._repairs import step_function

if TYPE_CHECKING:
    from codeworld.scoring._scorer import Scorer

# How the composed program's header names the candidates it came from.
_HEADER = "# Composed by codeworld from the programs of calls {calls}: each output component is\n" \
          "# taken from the program that predicts it best on the buffer.\n"


@dataclass
class Composition:
    """The outcome of `compose_programs`.

    Attributes:
        status: ``"composed"``, or why not: ``"one_program"`` (one candidate is best at every
            component), ``"too_few"`` (fewer than two usable candidates), ``"not_functional"``
            (the chosen programs could not be put side by side).
        source: the composed program (``"composed"`` only).
        choice: per component (``state[i]`` by its index, ``"reward"``, ``"done"``), the call
            of the program it is taken from.
        calls: the calls whose programs the composition uses, best first.
        predicted_score: the score the composition's predictions would have (computed from the
            candidates' predictions; the composed program is scored again in the sandbox).
        candidate_scores: the score of each candidate run here, by call.
    """

    status: str
    source: str | None = None
    choice: dict[str, int] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)
    predicted_score: float | None = None
    candidate_scores: dict[int, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"status": self.status, "choice": self.choice, "calls": self.calls,
                "predicted_score": self.predicted_score,
                "candidate_scores": {str(k): v for k, v in self.candidate_scores.items()}}


def compose_programs(candidates: list[tuple[int, str]], scorer: Scorer, *, timeout_s: float = PROGRAM_TIMEOUT_S,
                     max_programs: int = 4) -> Composition:
    """Pick, for each output component, the candidate that predicts it best, and write the program.

    Args:
        candidates: ``(call, source)`` of the programs to draw from, best first (the first is the
            default source of every component: it keeps the composition small on ties).
        scorer: the run's `codeworld.scoring.Scorer` (its buffer, mode and sandbox limits).
        timeout_s: wall-clock limit of each candidate's prediction request.
        max_programs: how many candidates (the first ones) are run and may take part.
    """
    from codeworld._model import ModelSourceError
    from codeworld._model_worker import ModelWorker
    from codeworld.scoring._scorer import Predictions

    usable: list[tuple[int, str, Any]] = []
    scores: dict[int, float] = {}
    for call, source in candidates:
        if len(usable) >= max_programs:
            break
        if step_function(source) is None:
            continue
        try:
            worker = ModelWorker(source, discrete=scorer.spec.discrete, compile=scorer.compile,
                                 limits=scorer.limits)
        except ModelSourceError:
            continue
        with worker:
            report, predictions = scorer.score_worker(worker, timeout_s=timeout_s)
        if predictions is None or report.status != "ok":
            continue
        usable.append((call, source, predictions))
        scores[call] = report.score
    if len(usable) < 2:
        return Composition("too_few", candidate_scores=scores)

    base = usable[0][2]
    n, d = base.next_states.shape
    parts = {"state": base.next_states.copy(), "reward": base.rewards.copy(), "done": base.dones.copy()}
    index = {**{str(j): 0 for j in range(d)}, "reward": 0, "done": 0}

    def score(next_states, rewards, dones) -> float:
        return scorer.score_predictions(Predictions(next_states, rewards, dones, n)).score

    from codeworld.scoring._scorer import compare_predictions

    buffer = scorer.buffer
    true_done = buffer.terminated if scorer.mode == "sound" else buffer.dones

    def balanced(component: str, states, rewards, dones) -> float:
        """The reward's or done's accuracy averaged over its recorded values, so that a rare
        one (a goal's reward, an episode end) weighs as much as the common one."""
        ev = compare_predictions(buffer, scorer.spec, scorer.mode, Predictions(states, rewards, dones, n))
        right = ~(ev.wrong_reward if component == "reward" else ev.wrong_done)
        classes = buffer.rewards if component == "reward" else true_done
        return float(np.mean([right[classes == c].mean() for c in np.unique(classes)]))

    for component in list(index):
        best_k, best = 0, None
        for k, (_, _, pred) in enumerate(usable):
            states, rewards, dones = parts["state"].copy(), parts["reward"], parts["done"]
            if component == "reward":
                rewards = pred.rewards
            elif component == "done":
                dones = pred.dones
            else:
                states[:, int(component)] = pred.next_states[:, int(component)]
            value = (score(states, rewards, dones),)
            if component in ("reward", "done"):  # rare values first, then the score
                value = (balanced(component, states, rewards, dones),) + value
            if best is None or _better(value, best):
                best_k, best = k, value
        index[component] = best_k
        chosen = usable[best_k][2]
        if component == "reward":
            parts["reward"] = chosen.rewards.copy()
        elif component == "done":
            parts["done"] = chosen.dones.copy()
        else:
            parts["state"][:, int(component)] = chosen.next_states[:, int(component)]
    predicted = score(parts["state"], parts["reward"], parts["done"])
    choice = {(f"state[{c}]" if c.isdigit() else c): usable[k][0] for c, k in index.items()}
    used = sorted(set(index.values()))
    if used == [0]:
        return Composition("one_program", choice=choice, calls=[usable[0][0]],
                           predicted_score=predicted, candidate_scores=scores)
    source = compose_source([usable[k][1] for k in used], [usable[k][0] for k in used],
                            {c: used.index(k) for c, k in index.items()}, d)
    if source is None:
        return Composition("not_functional", choice=choice, predicted_score=predicted,
                           candidate_scores=scores)
    return Composition("composed", source, choice, [usable[k][0] for k in used], predicted, scores)


def _better(value: tuple, best: tuple, margin: float = 1e-12) -> bool:
    """Whether `value` beats `best`, comparing their entries in order (beyond a rounding margin)."""
    for a, b in zip(value, best):
        if a > b + margin:
            return True
        if a < b - margin:
            return False
    return False


def compose_source(sources: list[str], calls: list[int], index: dict[str, int], state_dim: int) -> str | None:
    """The program that takes component ``c`` of its output from ``sources[index[c]]``.

    `index` maps ``"0"`` .. ``str(state_dim - 1)``, ``"reward"`` and ``"done"`` to positions in
    `sources`; ``calls`` holds each source's 0-based call index (the header names call ``i + 1``,
    as the command line and ``codeworld show`` do). None when a source is not a module with a
    ``def step`` or the result does not parse.
    """
    imports: list[str] = []
    bodies: list[str] = []
    for k, source in enumerate(sources):
        found = step_function(source)
        if found is None:
            return None
        tree = found[0]
        body = []
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                line = ast.unparse(node)
                if line not in imports:
                    imports.append(line)
            elif not _is_main_guard(node):
                body.append(node)
        tree.body = body
        _Prefix(f"_p{k}_", _module_names(tree)).visit(tree)
        bodies.append(f"# --- the program of call {calls[k] + 1}\n"
                      f"{ast.unparse(ast.fix_missing_locations(tree))}\n")
    if "import numpy as np" not in imports:
        imports.append("import numpy as np")
    lines = ["def step(state, action):"]
    for k in range(len(sources)):
        lines.append(f"    out{k} = _p{k}_step(np.array(state, dtype=np.float64), action)")
        lines.append(f"    s{k} = np.asarray(out{k}[0], dtype=np.float64).reshape(-1)")
    values = ", ".join(f"s{index[str(j)]}[{j}]" for j in range(state_dim))
    lines.append(f"    next_state = np.array([{values}], dtype=np.float64)")
    lines.append(f"    return next_state, float(out{index['reward']}[1]), bool(out{index['done']}[2])")
    # calls are 0-based indices; the header numbers them as the command line and show do
    text = (_HEADER.format(calls=", ".join(str(c + 1) for c in calls)) + "\n".join(imports) + "\n\n\n"
            + "\n\n".join(bodies) + "\n\n" + "\n".join(lines) + "\n")
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    return text


def _is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` (a program's own test code, not part of the model)."""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level (functions, classes, variables)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


class _Prefix(ast.NodeTransformer):
    """Prefixes every use of the given names (definitions, references, parameters, ``global``)."""

    def __init__(self, prefix: str, names: set[str]):
        self.prefix, self.names = prefix, names

    def _name(self, name: str) -> str:
        return self.prefix + name if name in self.names else name

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._name(node.arg)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._name(node.name)
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self._name(node.name)
        return self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> ast.AST:
        node.names = [self._name(n) for n in node.names]
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        # a call's keyword names a parameter, which was prefixed as well when it is a module name
        if node.arg is not None:
            node.arg = self._name(node.arg)
        return self.generic_visit(node)

