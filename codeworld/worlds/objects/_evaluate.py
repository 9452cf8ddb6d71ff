"""How the agent judges a model program: data consistency and optimism, checked in the sandbox.

`AgentEvaluator` satisfies `codeworld.synthesis.types.Evaluator`, so REx drives it like any other
scorer. One sandbox request checks the program on every recorded transition and plans over it
from each start state; the program never runs in this process.

The score REx sees is the fraction of transitions explained; when the optimism objective is on,
it is scaled by (1 + the fraction of start states from which the planner reaches reward) / 2, so
data consistency always comes first. A program is
*accepted* when that score is 1: it explains all data and (under optimism) makes the mission
look achievable.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from codeworld.sandbox import Sandbox
from codeworld.synthesis._checks import StaticProblem, format_problems
from codeworld.synthesis._repairs import merge_into_parent, repair
from codeworld.synthesis.types import Evaluator, ProgramEvaluation
from codeworld.worlds.objects._model import AgentModelError, check_agent_source
from codeworld.worlds.objects._ops import op_evaluate
from codeworld.worlds.objects._states import FUNCTIONS, compact, object_problems, state_diff



@dataclass
class ModelCheck:
    """The result of checking one program.

    Attributes:
        status: ``ok``; or how the sandbox request failed (``timeout``, ``exception``, ...),
            or ``invalid`` for a program rejected before running.
        message: what went wrong, for a failure.
        n: recorded transitions checked.
        correct: transitions the program explains exactly.
        reached: per start state, whether the planner reached reward under the program.
        error: the first exception the program raised on a transition (a cleaned record).
        mismatches: the first mispredicted transitions (index into the data and predictions).
        plans: per start state, the planner's answer.
        state_correct: transitions whose next state ``transition`` predicts exactly.
        reward_correct: transitions whose reward and done ``reward`` predicts exactly.
    """

    status: str
    message: str = ""
    n: int = 0
    correct: int = 0
    reached: list[bool] = field(default_factory=list)
    error: dict | None = None
    mismatches: list[dict] = field(default_factory=list)
    plans: list[dict] = field(default_factory=list)
    state_correct: int = 0
    reward_correct: int = 0

    @property
    def plan_error(self) -> dict | None:
        """The first exception the program raised while the planner ran it."""
        return next((p["error"] for p in self.plans if p.get("error")), None)

    @property
    def failed(self) -> bool:
        """The program could not be checked, or raised on a transition or while planning."""
        return self.status != "ok" or self.error is not None or self.plan_error is not None

    @property
    def consistency(self) -> float:
        return 1.0 if self.n == 0 else self.correct / self.n

    @property
    def optimism(self) -> float:
        return 1.0 if not self.reached else sum(self.reached) / len(self.reached)

    def score(self, optimism: bool) -> float:
        """The share of transitions explained; under optimism, halved for a model from whose
        start states the planner reaches no reward. (A plain mean of the two let a model that
        explains nothing but rewards every step, 0.5, outrank one right on 90% of the data that
        does not yet reach the goal, 0.45.)"""
        if self.failed:
            return 0.0
        return self.consistency * (1 + self.optimism) / 2 if optimism else self.consistency

    def accepted(self, optimism: bool) -> bool:
        return not self.failed and self.score(optimism) >= 1.0 - 1e-9

    def to_json(self) -> dict:
        return {"status": self.status, "message": self.message, "n": self.n,
                "correct": self.correct, "state_correct": self.state_correct,
                "reward_correct": self.reward_correct, "reached": self.reached, "error": self.error,
                "plans": [{k: p.get(k) for k in ("found", "actions", "expanded", "limit_hit")}
                          for p in self.plans]}


def join_functions(base: str, donor: str, name: str) -> str | None:
    """``base`` with its function ``name`` replaced by ``donor``'s (and ``donor``'s imports
    added); None where either program does not parse or lacks the function."""
    try:
        tree = ast.parse(donor)
        ast.parse(base)
    except SyntaxError:
        return None
    lines = donor.splitlines(keepends=True)
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
            or (isinstance(n, ast.FunctionDef) and n.name == name)]
    if not any(isinstance(n, ast.FunctionDef) for n in keep):
        return None

    def start(node: ast.stmt) -> int:
        return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])

    part = "".join("".join(lines[start(n) - 1:n.end_lineno]).rstrip("\n") + "\n" for n in keep)
    joined, repairs = merge_into_parent(part, base, FUNCTIONS)
    return joined if repairs else None


class AgentEvaluator(Evaluator):
    """Checks programs against the agent's data and start states, in one sandbox.

    Args:
        sandbox: the agent's sandbox (one worker, restarted after a timeout).
        data: recorded transitions ``{state, action, next_state, reward, done, mission}``.
        starts: ``{state, mission}`` from which the planner must reach reward (optimism).
        n_actions: the number of actions.
        action_names: names of the actions, for feedback text.
        optimism: whether the optimism objective counts.
        max_nodes, max_depth: the planner's limits.
        timeout_s: wall-clock limit of one check.
        schema: the state's schema (`codeworld.worlds.objects._states.state_schema`): with it, the
            synthesis core's assists are on: mechanical repairs (`prepare`) and static checks
            against the contract and the schema before a program runs. None: neither.
    """

    def __init__(self, sandbox: Sandbox, data: list[dict], starts: list[dict], n_actions: int,
                 action_names: tuple[str, ...], *, optimism: bool, max_nodes: int, max_depth: int,
                 timeout_s: float, schema: list | None = None):
        self.sandbox = sandbox
        self.data = data
        self.starts = starts
        self.n_actions = n_actions
        self.action_names = action_names
        self.optimism = optimism
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.timeout_s = timeout_s
        self.schema = schema
        self.checks: list[ModelCheck] = []
        self.sources: list[str] = []  # the program of each check, in order

    def prepare(self, program: str, parent: str = "") -> tuple[str, list[dict]]:
        """The program after the synthesis core's mechanical repairs (with the assists on)."""
        if self.schema is None:
            return program, []
        repaired, repairs = repair(program, parent, FUNCTIONS)
        return repaired, [r.to_json() for r in repairs]

    def check(self, source: str) -> ModelCheck:
        """Check one program (in the sandbox), after the static checks when the assists are on."""
        if self.schema is not None:  # the contract's checks and the schema's, in one pass
            problems = object_problems(source, self.schema)
        else:
            try:
                check_agent_source(source)
                problems = []
            except AgentModelError as exc:
                problems = [StaticProblem(exc.line, str(exc), "no_model")]
        if problems:
            result = ModelCheck("invalid", format_problems(problems, source))
            self.checks.append(result)
            self.sources.append(source)
            return result
        starts = self.starts if self.optimism else []
        reply = self.sandbox.call(op_evaluate, timeout_s=self.timeout_s, source=source,
                                  transitions=self.data, starts=starts, n_actions=self.n_actions,
                                  max_nodes=self.max_nodes, max_depth=self.max_depth)
        if not reply.ok:
            message = reply.message or reply.status
            if reply.status == "timeout":
                message = (f"checking the program on {len(self.data)} transitions and planning over "
                           f"it took longer than {self.timeout_s:g} s: transition or reward may loop "
                           f"forever or be far too slow")
            result = ModelCheck(reply.status, message, n=len(self.data))
        else:
            v = reply.value
            plans = v["plans"]
            result = ModelCheck("ok", "", n=v["n"], correct=v["correct"],
                                reached=[bool(p["found"]) for p in plans], error=v["error"],
                                mismatches=v["mismatches"], plans=plans,
                                state_correct=v["state_correct"],
                                reward_correct=v["reward_correct"])
        self.checks.append(result)
        self.sources.append(source)
        return result

    def compose(self) -> tuple[str, ModelCheck] | None:
        """The best `transition` of the programs checked so far joined with the best `reward`
        (the skeleton's among them), checked (or the one program best at both); None when there
        is none or the pair was checked before.

        A small LLM often gets one function right and keeps the other wrong in every answer (a
        reward on every step, say, that no transition explains): each program then explains
        nothing, though together their parts explain much. No LLM call is spent.
        """
        if self.skeleton and self.skeleton not in self.sources:
            self.check(self.skeleton)
        healthy = [(src, c) for src, c in zip(self.sources, self.checks) if not c.failed]
        if not healthy:
            return None
        transition = max(healthy, key=lambda p: (p[1].state_correct, p[1].reward_correct))
        reward = max(healthy, key=lambda p: (p[1].reward_correct, p[1].state_correct))
        if transition[0] == reward[0]:  # one program is best at both (the skeleton, it may be)
            return transition
        composed = join_functions(transition[0], reward[0], "reward")
        if composed is None or composed in self.sources:
            return None
        composed, _ = self.prepare(composed)
        return composed, self.check(composed)

    def evaluate(self, program: str) -> ProgramEvaluation:
        """The `ProgramEvaluation` REx needs: score, whether buggy, and feedback for the next prompt."""
        return self.evaluation(self.check(program))

    def evaluation(self, result: ModelCheck) -> ProgramEvaluation:
        """`evaluate`'s answer for a program already checked (``result``: its `check`)."""
        score = result.score(self.optimism)
        return ProgramEvaluation(score, result.failed, self.feedback(result), None,
                                 {"check": result.to_json(), "score": score,
                                 "accepted": result.accepted(self.optimism)})

    # ------------------------------------------------------------------ feedback text

    def _action(self, action: int) -> str:
        name = self.action_names[action] if 0 <= action < len(self.action_names) else "?"
        return f"{action} ({name})"

    @staticmethod
    def _which_function(result: ModelCheck) -> str:
        """Which of the two functions the errors are in, when one of them is right on every
        transition (so that the next program keeps it and changes the other)."""
        n = result.n
        if result.state_correct == n:
            return (f" `transition` is right on all {n} (keep it as it is); `reward` is wrong on "
                    f"{n - result.reward_correct}: its reward or done differs from the recorded one.")
        if result.reward_correct == n:
            return (f" `reward` is right on all {n} (keep it as it is); `transition` is wrong on "
                    f"{n - result.state_correct}: its next state differs from the recorded one.")
        return (f" `transition` is wrong on {n - result.state_correct} and `reward` on "
                f"{n - result.reward_correct}.")

    def feedback(self, result: ModelCheck) -> str:
        """What is wrong with a program, as the improve or fix prompt shows it."""
        if result.status != "ok":
            return result.message
        if result.error is None and result.plan_error is not None:
            start = self.starts[0]
            return (f"{result.plan_error.get('message', 'error')}\nIt raised while the planner "
                    f"simulated actions from this start state (mission \"{start['mission']}\"):\n"
                    f"{compact(start['state'])}")
        if result.error is not None:
            index = result.error.get("transition")
            text = result.error.get("message", "error")
            if index is not None and 0 <= index < len(self.data):
                t = self.data[index]
                text += (f"\nIt raised on this recorded transition:\nmission: {t['mission']}\n"
                         f"state: {compact(t['state'])}\naction: {self._action(int(t['action']))}")
            return text
        parts = []
        for m in result.mismatches[:2]:
            t = self.data[m["index"]]
            true_changes = "; ".join(state_diff(t["state"], t["next_state"])) or "nothing"
            predicted_changes = "; ".join(state_diff(t["state"], m["predicted_next_state"])) or "nothing"
            parts.append(
                f"A recorded transition the program gets wrong:\nmission: {t['mission']}\n"
                f"state: {compact(t['state'])}\naction: {self._action(int(t['action']))}\n"
                f"true changes: {true_changes}; reward {t['reward']:g}, done {bool(t['done'])}\n"
                f"the program's changes: {predicted_changes}; reward {m['predicted_reward']:g}, "
                f"done {bool(m['predicted_done'])}")
        if result.n and result.correct < result.n:
            parts.insert(0, f"The program explains {result.correct} of {result.n} recorded "
                            f"transitions.{self._which_function(result)}")
        if self.optimism:
            for start, reached, plan in zip(self.starts, result.reached, result.plans):
                if reached:
                    continue
                why = ("the search stopped at its limit" if plan.get("limit_hit")
                       else "no sequence of actions gives a positive reward")
                if plan.get("error"):
                    why = f"the program raised: {plan['error'].get('message')}"
                parts.append(
                    f"Under this program the mission \"{start['mission']}\" cannot be achieved from "
                    f"this start state ({why}):\n{compact(start['state'])}\nThe mission is achievable in "
                    f"the real environment: make reward return 1.0 (and done True) on the step that "
                    f"completes it, and make sure transition lets the agent get there.")
        return "\n\n".join(parts)
