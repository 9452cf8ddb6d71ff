"""The synthesis interfaces wired to codeworld's own parts: CWMB prompts and the sandboxed scorer.

`CwmbPrompts` fills the LLM layer's templates (``generate``, ``improve``, ``fix``, ``zero_shot``)
for one environment's description and takes programs out of completions with its extractor.
`ScorerEvaluator` scores a program with `codeworld.scoring.Scorer` (in a sandbox worker) and
reduces the report to what the search needs: the score, whether the program is buggy, the error
with its line for *fix*, the first mispredicted transition for *improve*.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codeworld._model_worker import PROGRAM_TIMEOUT_S
from codeworld.worlds.cwmb._feedback import (REWARD, SUMMARY_HEAD, UNSEEN_HEAD, Targets, target_of,
                                             unseen_sentence)
from codeworld.synthesis.types import (FIX, GENERATE, IMPROVE, Evaluator, FinishRecord, FitNote, ProgramEvaluation,
                                       Request, World)

if TYPE_CHECKING:
    from codeworld.envs._buffer_format import EpisodeSplit, ReplayBuffer
    from codeworld.fitting._regression import RegressionConfig
    from codeworld._model_worker import ModelWorker
    from codeworld.scoring._scorer import Predictions, Scorer
    from codeworld.synthesis._checks import StaticProblem
    from codeworld.synthesis.config import AssistConfig, FinishConfig
    from codeworld.synthesis.run import Run
    from codeworld.synthesis._run_dir import RunDir
    from codeworld.synthesis._runner import SynthesisResult
    from codeworld.worlds.cwmb._scaffold import Scaffold
    from codeworld.synthesis.types import Seed

# The world-model prompts' templates (``generate``, ``improve``, ``fix``, ``zero_shot``,
# ``unseen`` for rewards stated but never recorded, and ``predict`` for the LLM as the world
# model), beside the code that fills them.
PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
PROMPT_NAMES = ("generate", "improve", "fix", "zero_shot", "unseen", "predict")


def render_cwmb(name: str, **values: object) -> list[dict]:
    """The chat messages of the world-model template ``name`` filled with ``values``."""
    from codeworld.llm._prompts import render

    return render(name, PROMPT_DIR, **values)


class CwmbPrompts:
    """Prompts for one environment, from the LLM layer's templates.

    A generate request continues the node's partial program (``generate`` template, with the
    partial program as the assistant's prefill); a generate from nothing outside a tree (REx's
    seed, zero-shot) uses ``zero_shot``. *Improve* shows what the program gets wrong (the error
    summary over the whole buffer, or one mispredicted transition), *fix* the error.

    Every prompt puts the invariant parts first (system text, description, scaffold) and the
    variable ones (program, feedback) last, and every one starts the answer as code: with a
    scaffold, the requests that write from scratch start from the skeleton's head, and *improve*
    and *fix* from a code block opened with a comment line.

    Args:
        description: the environment's description (`codeworld.envs._descriptions.describe`).
        scaffold: the env's `codeworld.worlds.cwmb._scaffold.Scaffold`; None leaves it out.
        data: what the recorded data shows (`codeworld.worlds.cwmb._relations.relations_text`),
            shown after the scaffold; empty leaves it out.
        starter: lines that continue the skeleton's head in a generate request made after
            earlier answers were copies (`starter_lines`): the request starts from another
            partial program instead of being sent again as it was.
    """

    def __init__(self, description: str, scaffold: Scaffold | None = None, data: str = "",
                 starter: str = ""):
        self.description = description
        self.scaffold = scaffold
        self.starter = starter
        self.form = ("" if scaffold is None else
                     "\n## The form of the program\n\n" + scaffold.prompt_text() + "\n")
        # a targeted improve's description and form: the description's first section and the
        # names (its request quotes what the description and the data say about its component)
        sections = re.split(r"\n(?=## )", description.strip() + "\n", maxsplit=2)
        self.gist = "\n".join(sections[:2]).strip() + "\n"
        self.names_form = ("" if scaffold is None else "\n## The names of the state\n\n"
                           + scaffold.state_text() + "\n" + scaffold.action_text() + ".\n")
        if data:
            self.form += "\n" + data

    def start(self, prefix: str = "") -> str:
        """The code a program-writing answer starts with: the partial program, or the
        skeleton's head when the partial program is empty or the head's beginning."""
        if self.scaffold is None:
            return prefix
        head = self.scaffold.head()
        return head if head.startswith(prefix) else prefix

    def messages(self, request: Request) -> list[dict]:
        from codeworld.llm import format_value

        d, form = self.description, self.form
        if request.action == GENERATE:
            start = self.start(request.prefix if request.parent >= 0 else "")
            if request.feedback:  # earlier answers were copies (`copies_note`)
                form = f"{form}\n{request.feedback}\n"
                if self.scaffold is not None and start == self.scaffold.head():
                    start += self.starter
            if request.parent < 0:
                return render_cwmb("zero_shot", description=d, form=form, start=start)
            return render_cwmb("generate", description=d, form=form, partial_program=start)
        if request.action == IMPROVE and request.feedback.startswith(UNSEEN_HEAD):
            # right on the data: the description's rewards the data never shows, asked for
            # beside the whole description (the state's encoding is in it), without the data
            # section; the answer starts where the reward is computed
            start = continue_after_reward(request.program, unseen_sentence(request.feedback),
                                          head=f"# {REWARD}: adds what the description states, "
                                               "the rest kept\n")
            return render_cwmb("unseen", description=d, form=self.names_form,
                               program=request.program, evidence=request.feedback, start=start)
        if request.action == IMPROVE and (request.feedback or request.mispredicted):
            mis = request.mispredicted
            if mis and "expected" in mis and "predicted" in mis and not _is_summary(request.feedback):
                expected, predicted = mis["expected"], mis["predicted"]
                evidence = "\n".join([
                    "A transition it mispredicts:",
                    f"- state: {format_value(mis['state'])}",
                    f"- action: {format_value(mis['action'])}",
                    f"- true next state: {format_value(expected['next_state'])}",
                    f"- true reward: {format_value(expected['reward'])}",
                    f"- true done: {format_value(bool(expected['done']))}",
                    f"- predicted next state: {format_value(predicted['next_state'])}",
                    f"- predicted reward: {format_value(predicted['reward'])}",
                    f"- predicted done: {format_value(bool(predicted['done']))}"])
            else:
                evidence = "What it gets wrong:\n\n" + request.feedback
            start, target = "# ", target_of(request.feedback)
            if target is not None:  # short: a small model copies long prompts
                d, form, start = self.gist, self.names_form, continue_at(request.program, target)
            return render_cwmb("improve", description=d, form=form, program=request.program,
                               evidence=evidence, start=start)
        if request.action in (IMPROVE, FIX):
            error = request.feedback or "The program's predictions do not match the recorded data."
            return render_cwmb("fix", description=d, form=form, program=request.program, error=error)
        raise ValueError(f"unknown action {request.action!r}")

    def program(self, request: Request, completion_text: str) -> str | None:
        """The program of a completion. A targeted improve's answer rewrites one line of a
        program it was given: where a closing bracket too many is all that keeps the whole
        answer from parsing, it is dropped (`drop_unmatched`) rather than the answer cut back
        to the lines before it."""
        from codeworld.llm import CodeExtractionError, extract_program
        from codeworld.llm._extract import defines_world_model
        from codeworld.llm.types import prefill_of

        prefill = prefill_of(self.messages(request))
        try:
            found = extract_program(completion_text, prefill)
        except CodeExtractionError:
            return None
        full = prefill + completion_text
        if (found.trimmed and request.action == IMPROVE and target_of(request.feedback)
                and full.startswith("```python\n")):
            whole = drop_unmatched(full[len("```python\n"):].split("```", 1)[0])
            if whole is not None and defines_world_model(whole):
                return whole.rstrip("\n") + "\n"
        return found.source + "\n"


# A score this close to 1 leaves nothing for a constant fit to gain.
PERFECT = 1.0 - 1e-9
# The search signal of a program right within the sound tolerances on every training transition
# but not within the paper's: just under every search's stop-on-perfect bar, so the search goes on.
NEAR_PERFECT = 1.0 - 1e-5
# A program exact on every training transition that returns none of the rewards the description
# states and the data never shows signals 1 - UNSEEN_GAP (one that returns some, less of the gap):
# above NEAR_PERFECT, below every search's stop-on-perfect bar, so the search goes on.
UNSEEN_GAP = 5e-6


def _is_summary(feedback: str) -> bool:
    return feedback.startswith(SUMMARY_HEAD)


def drop_unmatched(source: str, at_most: int = 3) -> str | None:
    """`source` with at most `at_most` unmatched closing brackets taken out, where that makes it
    parse (None where it does not): a small model that rewrites a long formula often closes it
    once too often."""
    import ast

    for _ in range(at_most + 1):
        try:
            ast.parse(source)
            return source
        except SyntaxError as exc:
            if not str(exc.msg).startswith("unmatched") or not exc.lineno or not exc.offset:
                return None
            lines = source.splitlines(keepends=True)
            line = lines[exc.lineno - 1]
            lines[exc.lineno - 1] = line[:exc.offset - 1] + line[exc.offset:]
            source = "".join(lines)
    return None


def continue_at(program: str, target: str, head: str | None = None) -> str:
    """The start of a targeted improve's answer: a comment naming `target` (``new x``,
    ``reward``, ``done``; `codeworld.worlds.cwmb._feedback.target_of`) and the program's lines
    before the first one that assigns it, so that the answer goes on where the change is; just
    the comment where no line assigns it. `head` replaces the comment."""
    name = target[len("new "):] if target.startswith("new ") else target
    assigns = re.compile(rf"\s+{'new_' if target.startswith('new ') else ''}{re.escape(name)}\s*=[^=]")
    lines = program.splitlines(keepends=True)
    head = head if head is not None else f"# {target} was wrong: corrected below, the rest kept\n"
    for k, line in enumerate(lines):
        if assigns.match(line):
            return head + "".join(lines[:k])
    return head


def continue_after_reward(program: str, sentence: str, head: str) -> str:
    """The start of an answer that adds a reward the description states: `head`, the program's
    lines up to the last statement of ``step`` that sets the reward or done, the description's
    `sentence` as a comment and ``if ``, so the answer goes on with the condition (where no
    such statement is found, `continue_at` the reward)."""
    import ast

    try:
        tree = ast.parse(program)
    except SyntaxError:
        tree = None
    step = next((node for node in (tree.body if tree else ()) if isinstance(node, ast.FunctionDef)
                 and node.name == "step"), None)

    def sets(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                   and n.id in ("reward", "done") for n in ast.walk(node))

    last = None if step is None else next(
        (stmt for stmt in reversed(step.body) if sets(stmt)), None)
    if last is None or last is step.body[-1] or last.end_lineno is None:
        return continue_at(program, REWARD, head=head)
    lines = program.splitlines(keepends=True)
    indent = " " * last.col_offset
    quoted = sentence.replace("\n", " ")
    return (head + "".join(lines[:last.end_lineno])
            + f'{indent}# the description: "{quoted}"\n{indent}if ')


def error_feedback(report: dict, program: str) -> str:
    """The text a *fix* prompt shows: the error, its line of code, and the step it happened on."""
    message = report.get("message") or report.get("status") or "the program failed"
    parts = [str(message)]
    line = report.get("line")
    lines = program.splitlines()
    if isinstance(line, int) and 1 <= line <= len(lines) and f"line {line}" not in parts[0]:
        parts.append(f"The failing line is line {line}: {lines[line - 1].strip()}")
    err = report.get("first_error") or {}
    if "state" in err and "action" in err:
        parts.append(f"It happened on step(state={err['state']}, action={err['action']}).")
    return "\n".join(parts)


class ScorerEvaluator(Evaluator):
    """Scores programs for the search with a `codeworld.scoring.Scorer`.

    With checks on (`AssistConfig.checks`), `prepare` makes the mechanical repairs, and
    `evaluate` runs the static checks and then a smoke run of the buffer's first transitions in
    the sandbox worker before the full pass over the buffer (in the same worker); a program that
    fails either gets their messages as its *fix* feedback. With error summaries on, a healthy
    program's feedback is the summary of its errors over the whole buffer.

    Held out, or it did not happen: `scorer` holds the run's *training* episodes only, and is
    all the search, the assists, the composition and the fits ever see. A healthy program is also
    run on the held-out episodes (`heldout`), and that report goes into its record under
    ``"heldout"`` for the reports alone: no score, feedback or choice reads it.

    A program right on every training transition within the sound tolerances but not within the
    paper's (`codeworld.scoring._scorer.exactness`) is not perfect: its search signal is
    `NEAR_PERFECT`, so the search does not stop on it, and its feedback says where it is off.

    Args:
        scorer: the scorer of the environment on the training episodes (its mode sets the
            search signal).
        timeout_s: wall-clock limit of one program's predictions over the buffer.
        assist: the switches (default: all on).
        names: one name per state component for the error summary (default: ``s0, s1, ...``).
        heldout: the scorer of the held-out episodes (None: nothing held out).
        split: the `EpisodeSplit` the two come from (recorded in ``run.json``).
    """

    def __init__(self, scorer: Scorer, timeout_s: float = PROGRAM_TIMEOUT_S,
                 assist: AssistConfig | None = None, names: tuple[str, ...] | None = None,
                 heldout: Scorer | None = None, split: EpisodeSplit | None = None):
        from codeworld.synthesis.config import AssistConfig

        self.scorer = scorer
        self.timeout_s = timeout_s
        self.assist = assist or AssistConfig()
        self.names = names
        self.heldout = heldout
        self.split = split
        self.skeleton: str | None = None
        self.detect_copies = False
        # what a targeted summary says about each component (None: the plain summary)
        self.targets: Targets | None = None
        # the rewards the description states that no training transition shows, each with its
        # sentence (`codeworld.worlds.cwmb._feedback.unseen_rewards`; empty: none, or off)
        self.unseen_rewards: tuple[tuple[float, str], ...] = ()

    def prepare(self, program: str, parent: str = "") -> tuple[str, list[dict]]:
        """The program after its mechanical repairs, and the repairs (empty with checks off).

        `parent` is the program a fix or improve call was given: an answer with only some of
        the program's pieces (no ``step``) is put into it first.
        """
        if not self.assist.checks:
            return program, []
        from codeworld.synthesis._repairs import repair

        repaired, repairs = repair(program, parent)
        return repaired, [r.to_json() for r in repairs]

    def refine(self, program: str, evaluation: ProgramEvaluation) -> tuple[str, ProgramEvaluation, dict] | None:
        """A healthy, imperfect program with its constants fitted to the buffer, when the fit is
        kept (the held-out score improves) and the whole-buffer score rises; else None."""
        if not self.assist.fit_constants or evaluation.buggy or evaluation.score >= PERFECT:
            return None
        if "described_rewards" in evaluation.report:
            return None  # exact on the data already: a fit cannot add a reward it never saw
        from codeworld.fitting import FitConfig, fit_constants

        fit = fit_constants(program, self.scorer, FitConfig(max_seconds=self.assist.fit_seconds),
                            compile=self.scorer.compile, timeout_s=self.timeout_s)
        if not fit.accepted:
            return None
        fitted = self.evaluate(fit.source)
        if fitted.buggy or fitted.score <= evaluation.score:
            return None
        fitted = fitted.with_fit_note(FitNote(evaluation.score, len(fit.constants or [])))
        return fit.source, fitted, fit.to_json()

    def evaluate(self, program: str) -> ProgramEvaluation:
        from codeworld._model import ModelSourceError
        from codeworld._model_worker import ModelWorker

        spec = self.scorer.spec
        if self.assist.checks:
            from codeworld.synthesis._checks import format_problems
            from codeworld.worlds.cwmb._checks import static_problems

            problems = static_problems(program, state_dim=spec.obs_dim, discrete=spec.discrete,
                                       action_dim=spec.action_dim, n_actions=spec.n_actions)
            if problems:
                text = format_problems(problems, program)
                data = self.scorer.failure_report("static_check", text, problems[0].line).to_dict()
                data["stage"] = "static_check"
                data["problems"] = [p.to_json() for p in problems]
                return ProgramEvaluation(0.0, True, text, None, data)
        try:
            worker = ModelWorker(program, discrete=spec.discrete, compile=self.scorer.compile,
                                 limits=self.scorer.limits)
        except ModelSourceError as exc:
            data = self.scorer.failure_report("exception", str(exc), exc.line).to_dict()
            return ProgramEvaluation(0.0, True, error_feedback(data, program), None, data)
        with worker:
            if self.assist.checks:
                smoke, _ = self.scorer.score_worker(worker, timeout_s=self.timeout_s,
                                                    limit=self.assist.smoke_transitions)
                if not smoke.ok:
                    data = smoke.to_dict()
                    data["stage"] = "smoke"
                    feedback = ("It failed on the first recorded transition it was run on:\n"
                                + error_feedback(data, program))
                    return ProgramEvaluation(0.0, True, feedback, None, data)
            report, predictions = self.scorer.score_worker(worker, timeout_s=self.timeout_s)
            held = beyond = None
            if report.ok and self.heldout is not None:
                held, held_predictions = self.heldout.score_worker(worker, timeout_s=self.timeout_s)
            if report.ok and self.assist.beyond_data:
                beyond = self.beyond_data(worker)
            anywhere = (self.rewards_anywhere(worker) if report.ok and self.unseen_rewards
                        and float(report.score) >= PERFECT else None)
        data = report.to_dict()
        if not report.ok:
            return ProgramEvaluation(0.0, True, error_feedback(data, program), None, data)
        if beyond is not None:
            data.update(status=beyond["status"], stage="beyond_data", beyond_data=beyond,
                        message=beyond["message"], line=beyond.get("line"))
            feedback = ("It runs on every recorded transition, but planning steps it where the "
                        f"recorded data does not go, and there it fails: {beyond['message']}")
            if beyond.get("line"):
                lines = program.splitlines()
                if 1 <= beyond["line"] <= len(lines):
                    feedback += (f"\nThe failing line is line {beyond['line']}: "
                                 f"{lines[beyond['line'] - 1].strip()}")
            feedback += (f"\nIt happened on step(state={_values(beyond['state'])}, "
                         f"action={_values(beyond['action'])}).")
            return ProgramEvaluation(0.0, True, feedback, None, data)
        if held is not None:
            from codeworld.scoring._scorer import rare_accuracy

            data["heldout"] = held.summary()
            if held_predictions is not None:
                data["heldout"]["rare"] = rare_accuracy(self.heldout.buffer, self.heldout.spec,
                                                        self.heldout.mode, held_predictions)
        mispredicted = data.get("first_error")
        score = float(report.score)
        if not mispredicted and score >= PERFECT and predictions is not None:
            from codeworld.scoring._scorer import exactness

            exact = exactness(self.scorer.buffer, predictions)
            data["exact"] = exact
            if not exact["exact"]:
                k = exact["index"]
                buf = self.scorer.buffer
                return ProgramEvaluation(NEAR_PERFECT, False, (
                    f"Every recorded transition is right within the scoring tolerance, but "
                    f"{exact['wrong']} of {len(buf)} are not exact (within 1e-5): the largest "
                    f"error is {exact['max_error']:.3g} in {exact['where']}, on step(state="
                    f"{_values(buf.obs[k])}, action={_values(buf.actions[k])}), whose true next "
                    f"state is {_values(buf.next_obs[k])} and reward {float(buf.rewards[k]):.6g}. "
                    "A linear or rounded stand-in for the real formula is close, not right."),
                    None, data)
            if self.unseen_rewards:
                return self._described(anywhere, data, score)
        feedback = ""
        if mispredicted and self.assist.error_summary and predictions is not None:
            feedback = self.error_summary(predictions)
            data["error_summary"] = feedback
        elif mispredicted:
            feedback = (f"transition {mispredicted.get('index')}: state {mispredicted.get('state')}, "
                        f"action {mispredicted.get('action')}: expected {mispredicted.get('expected')}, "
                        f"predicted {mispredicted.get('predicted')}")
        return ProgramEvaluation(score, False, feedback, mispredicted, data)

    def _described(self, rewards: np.ndarray | None, data: dict, score: float) -> ProgramEvaluation:
        """The evaluation of a program exact on every training transition, where the
        description states rewards the training episodes never show (`unseen_rewards`): perfect
        when it returns each of them on some recorded state with some action, else just under
        perfect by the share it leaves out (the search goes on, and of programs exact on the
        data prefers the one that writes more of what the description states), with feedback
        that asks for them."""
        from codeworld.scoring._scorer import tolerances
        from codeworld.worlds.cwmb._feedback import unseen_rewards_feedback

        tol = tolerances(self.scorer.spec, self.scorer.mode)
        written = np.unique(rewards) if rewards is not None else np.zeros(0)
        missing = [(v, sentence) for v, sentence in self.unseen_rewards
                   if not np.any(np.abs(written - v) <= tol.reward_atol + tol.reward_rtol * abs(v))]
        data["described_rewards"] = {"unseen": [v for v, _ in self.unseen_rewards],
                                     "missing": [v for v, _ in missing]}
        if not missing:
            return ProgramEvaluation(score, False, "", None, data)
        n = len(self.scorer.buffer)
        return ProgramEvaluation(
            1.0 - UNSEEN_GAP * len(missing) / len(self.unseen_rewards), False,
            unseen_rewards_feedback(n, missing, len(self.unseen_rewards)), None, data)

    def beyond_data(self, worker: ModelWorker) -> dict | None:
        """Step the program where planning will take it, beyond the recorded transitions: every
        recorded state (at most 2,000) with every discrete action (or 4 actions drawn from the
        box), then rollouts of `AssistConfig.beyond_steps` steps (default: as far as the env's
        planner looks ahead) with random actions from the recorded first states (at most 16).
        None when it runs and stays finite everywhere; else the failure: status, message, line,
        and the state and action it failed on."""
        spec, buf = self.scorer.spec, self.scorer.buffer
        rng = np.random.default_rng(0)
        states = self._recorded_states(rng)

        def actions_for(k: int, every: bool) -> np.ndarray:
            return self._actions(k, every, rng)

        def check(batch: np.ndarray, actions: np.ndarray) -> tuple[dict | None, np.ndarray]:
            repeat = len(actions) // len(batch)
            inputs = np.repeat(batch, repeat, axis=0)
            prediction = worker.predict(inputs, actions, timeout_s=self.timeout_s)
            k = prediction.n_predicted
            bad = None
            if not prediction.ok:
                bad = min(k, len(inputs) - 1)
                failure = {"status": prediction.result.status,
                           "message": prediction.result.message or prediction.result.status,
                           "line": prediction.result.line}
            else:
                finite = (np.isfinite(prediction.next_states).all(axis=1)
                          & np.isfinite(prediction.rewards))
                if not finite.all():
                    bad = int(np.flatnonzero(~finite)[0])
                    failure = {"status": "invalid_output",
                               "message": "it returned a value that is not finite (nan or inf)"}
            if bad is None:
                return None, prediction.next_states
            action = actions[bad]
            return {**failure, "state": [float(v) for v in inputs[bad]],
                    "action": [float(int(action[0]))] if spec.discrete else
                    [float(v) for v in action]}, prediction.next_states

        failure, _ = check(states, actions_for(len(states), every=True))
        if failure is not None:
            return failure
        starts = np.unique(buf.obs[np.unique(buf.episode_start)], axis=0)[:16]
        steps = self.assist.beyond_steps
        if steps is None:
            from codeworld.planning.registry import lookahead, make_config

            steps = lookahead(make_config(spec.planner))
        for _ in range(int(steps)):
            failure, starts = check(starts, actions_for(len(starts), every=False))
            if failure is not None:
                return failure
        return None

    def fails_beyond_data(self, program: str) -> dict | None:
        """How `program` fails where planning takes it (`beyond_data`), or None where it runs
        and stays finite there; a program that cannot be loaded fails with its error."""
        from codeworld._model import ModelSourceError
        from codeworld._model_worker import ModelWorker

        spec = self.scorer.spec
        try:
            worker = ModelWorker(program, discrete=spec.discrete, compile=self.scorer.compile,
                                 limits=self.scorer.limits)
        except ModelSourceError as exc:
            return {"status": "exception", "message": str(exc), "line": exc.line}
        with worker:
            return self.beyond_data(worker)

    def _recorded_states(self, rng: np.random.Generator, at_most: int = 2000) -> np.ndarray:
        """The distinct recorded states of the training episodes (at most `at_most`, drawn)."""
        states = np.unique(self.scorer.buffer.obs, axis=0)
        if len(states) > at_most:
            states = states[rng.choice(len(states), at_most, replace=False)]
        return states

    def _actions(self, k: int, every: bool, rng: np.random.Generator) -> np.ndarray:
        """Actions for `k` states in a row: with `every`, each discrete action for each state in
        turn (or 4 drawn from the box for each); else one drawn for each."""
        spec = self.scorer.spec
        if spec.discrete:
            n = max(int(spec.n_actions), 1)
            return (np.tile(np.arange(n), k) if every else rng.integers(0, n, k)).reshape(-1, 1)
        low = np.asarray(spec.action_low, dtype=np.float64)
        high = np.asarray(spec.action_high, dtype=np.float64)
        return rng.uniform(low, high, size=(k * (4 if every else 1), len(low)))

    def rewards_anywhere(self, worker: ModelWorker) -> np.ndarray | None:
        """The rewards the program returns on every recorded state with every action (as
        `beyond_data` steps it first), or None where it fails there."""
        rng = np.random.default_rng(0)
        states = self._recorded_states(rng)
        actions = self._actions(len(states), True, rng)
        inputs = np.repeat(states, len(actions) // len(states), axis=0)
        prediction = worker.predict(inputs, actions, timeout_s=self.timeout_s)
        return np.asarray(prediction.rewards, dtype=np.float64) if prediction.ok else None

    def error_summary(self, predictions: Predictions) -> str:
        """The summary of a healthy program's errors over the buffer (`summarize_errors`)."""
        from codeworld.scoring._scorer import SOUND, tolerances
        from codeworld.worlds.cwmb._feedback import summarize_errors, targeted_errors

        buf, spec = self.scorer.buffer, self.scorer.spec
        tol = tolerances(spec, self.scorer.mode)
        k = int(predictions.n_predicted)
        names = self.names or tuple(f"s{i}" for i in range(spec.obs_dim))
        true_done = buf.terminated if self.scorer.mode == SOUND else buf.dones
        if self.targets is not None:
            return targeted_errors(
                states=buf.obs[:k], actions=buf.actions[:k], next_states=buf.next_obs[:k],
                rewards=buf.rewards[:k], dones=true_done[:k],
                predicted_states=predictions.next_states[:k],
                predicted_rewards=predictions.rewards[:k], predicted_dones=predictions.dones[:k],
                names=names, state_atol=tol.state_atol, state_rtol=tol.state_rtol,
                reward_atol=tol.reward_atol, reward_rtol=tol.reward_rtol, discrete=spec.discrete,
                targets=self.targets, max_tokens=self.assist.summary_tokens)
        return summarize_errors(
            states=buf.obs[:k], actions=buf.actions[:k], next_states=buf.next_obs[:k],
            rewards=buf.rewards[:k], dones=true_done[:k],
            predicted_states=predictions.next_states[:k], predicted_rewards=predictions.rewards[:k],
            predicted_dones=predictions.dones[:k], names=names,
            state_atol=tol.state_atol, state_rtol=tol.state_rtol, reward_atol=tol.reward_atol,
            reward_rtol=tol.reward_rtol, discrete=spec.discrete,
            max_tokens=self.assist.summary_tokens, max_examples=self.assist.summary_examples)


def _values(row: Any) -> str:
    from codeworld.llm import format_value

    return format_value([float(v) for v in row]) if len(row) != 1 else format_value(float(row[0]))


class CwmbAssists:
    """The CWMB world's `codeworld.synthesis.types.Assists`: the scaffold's skeleton, the data
    section of the fitted relations, the static checks of the ``step`` contract against the
    env's spec, and the composition of programs component by component
    (`codeworld.worlds.cwmb._compose`).

    Args:
        evaluator: the world's `ScorerEvaluator` (its scorer, switches and skeleton).
        data: the data section ("" with the relations off).
        seeds: the world's seed programs (`codeworld.synthesis.types.Seed`); the data model is
            the one labelled `DATA_LABEL`.
    """

    def __init__(self, evaluator: ScorerEvaluator, data: str, seeds: tuple[Seed, ...] = ()):
        self.evaluator = evaluator
        self.data = data
        self.seeds = seeds

    def skeleton(self) -> str | None:
        return self.evaluator.skeleton

    def data_section(self) -> str:
        return self.data

    def data_model(self) -> Seed | None:
        from codeworld.worlds.cwmb._data_model import DATA_LABEL

        return next((seed for seed in self.seeds if seed.label == DATA_LABEL), None)

    def static_problems(self, source: str) -> list[StaticProblem]:
        if not self.evaluator.assist.checks:
            return []
        from codeworld.worlds.cwmb._checks import static_problems

        spec = self.evaluator.scorer.spec
        return static_problems(source, state_dim=spec.obs_dim, discrete=spec.discrete,
                               action_dim=spec.action_dim, n_actions=spec.n_actions)

    def compose(self, programs: list[tuple[int, str]]) -> str | None:
        from codeworld.worlds.cwmb._compose import compose_programs

        return compose_programs(programs, self.evaluator.scorer,
                                timeout_s=self.evaluator.timeout_s).source


def make_cwmb_world(env_id: str, assist: AssistConfig | None = None,
                    split: EpisodeSplit | dict | None = None, *,
                    buffer: ReplayBuffer | str | Path | None = None,
                    mode: str = "sound", compile: bool = False,
                    timeout_s: float = PROGRAM_TIMEOUT_S,
                    heldout_fraction: float | None = None,
                    split_seed: int = 0, run: "Run | None" = None) -> World:
    """The world of one CWMB environment, on the training episodes: its prompts, its evaluator,
    its finish step (compose, fit, speed: `codeworld.worlds.cwmb._finish`) and its assists
    (`CwmbAssists`). Registered as the ``cwmb`` kind of `codeworld.worlds.make_world`.

    The buffer is split by episode (`codeworld.envs._buffers.EpisodeSplit`): the scaffold, the
    data section and the search signal are built from the training episodes only; the
    evaluator also scores each healthy program on the held-out ones, for the reports. The split
    is ``evaluator.split`` (record it in ``run.json``; pass it back on resume).

    Args:
        env_id: codeworld's or the paper's id.
        buffer: a replay buffer or its path (default: the committed buffer).
        mode: ``"sound"`` or ``"paper"`` scoring as the search signal.
        compile: let the scorer compile candidates with Numba (slower per candidate; the
            scores are the same).
        timeout_s: wall-clock limit of one program's predictions.
        assist: the `AssistConfig` of the run (scaffold, checks and repairs, error summary,
            relations; default: all on).
        split: the recorded `EpisodeSplit` (or its JSON data) of a resumed run; None draws one.
        heldout_fraction: the share of episodes held out when drawing (default
            `HELDOUT_FRACTION`; 0 holds nothing out).
        split_seed: the seed of the draw.
        run: the `codeworld.synthesis.run.Run` the world is for (``codeworld synthesize``):
            its spec and config give the buffer, mode, timeout, seed, split and assists (see
            `make_run_world`), and its split is recorded in ``run.json``.
    """
    if run is not None:
        return make_run_world(run, heldout_fraction=heldout_fraction, compile=compile)
    from codeworld.envs._buffers import HELDOUT_FRACTION, EpisodeSplit
    from codeworld.envs._descriptions import describe
    from codeworld.scoring import Scorer
    from codeworld.synthesis.config import AssistConfig
    from codeworld.worlds.cwmb._scaffold import build_scaffold

    assist = assist or AssistConfig()
    whole = Scorer(env_id, buffer, mode=mode, compile=compile, references=False)
    if split is None:
        split = EpisodeSplit.draw(whole.buffer, HELDOUT_FRACTION if heldout_fraction is None
                                  else heldout_fraction, split_seed)
    elif isinstance(split, dict):
        split = EpisodeSplit.from_json(split)
    train, held = split.parts(whole.buffer)
    scorer = Scorer(whole.spec, train, mode=mode, compile=compile)
    heldout = None if held is None else Scorer(whole.spec, held, mode=mode, compile=compile)
    description = describe(scorer.spec.env_id, compact=assist.compact_tables)
    buf = scorer.buffer
    scaffold = build_scaffold(scorer.spec, description, rewards=buf.rewards,
                              states=np.concatenate([buf.obs, buf.next_obs])
                              if assist.form_from_data else None)
    from codeworld.worlds.cwmb._relations import description_terms

    terms = description_terms(description, scaffold.references, discrete=scorer.spec.discrete)
    data, found = (_relations(scorer, scaffold.references, assist.structure,
                              assist.reward_from_old, assist.angles,
                              _regression(assist), terms)
                   if assist.relations else ("", []))
    prompts = CwmbPrompts(description, scaffold if assist.scaffold else None, data,
                          starter_lines(found))
    evaluator = ScorerEvaluator(scorer, timeout_s, assist, scaffold.names, heldout, split)
    # an answer that hands the skeleton back is recognised as a copy (the runner's `normalized`)
    evaluator.skeleton = scaffold.skeleton() if assist.scaffold else None
    evaluator.detect_copies = assist.copies
    from codeworld.worlds.cwmb._feedback import build_targets

    evaluator.targets = build_targets(description, scaffold.names, found, data)
    from codeworld.scoring._scorer import tolerances
    from codeworld.worlds.cwmb._feedback import described_rewards, end_rewards, unseen_rewards

    tol = tolerances(scorer.spec, scorer.mode)
    unseen = unseen_rewards(described_rewards(description), buf.rewards, tol.reward_atol,
                            tol.reward_rtol)
    if assist.described_rewards:
        evaluator.unseen_rewards = unseen
    stated_ends: list[str] = []
    if assist.described_ends:
        from codeworld.worlds.cwmb._relations import described_ends, named_angles

        angles = named_angles(np.concatenate([buf.obs, buf.next_obs]), scaffold.references)
        stated_ends = described_ends(description, scaffold.references, angles)
    from codeworld.worlds.cwmb._data_model import world_seeds

    seeds = world_seeds(scorer, scaffold, found if assist.relations else None, assist, terms,
                        stated_ends, end_rewards(unseen) if stated_ends else (),
                        beyond=evaluator.fails_beyond_data if assist.beyond_data else None)
    return World(prompts, evaluator, finish=functools.partial(_finish, evaluator), seeds=seeds,
                 assists=CwmbAssists(evaluator, data, seeds))


def _finish(evaluator: ScorerEvaluator, result: SynthesisResult, config: FinishConfig,
            run_dir: RunDir | None) -> FinishRecord:
    from codeworld.worlds.cwmb._finish import finish_run

    return finish_run(result, evaluator, config, run_dir)


def _regression(assist: AssistConfig) -> RegressionConfig | None:
    """The data section's `codeworld.fitting.RegressionConfig` (None with it off)."""
    if not assist.regression:
        return None
    from codeworld.fitting._regression import RegressionConfig

    return RegressionConfig(budget_s=assist.regression_seconds)


def starter_lines(relations: list) -> str:
    """The first lines of the dynamics a *generate* request after copies starts from: the data
    section's rules that are right on every transition, written as code into ``new_<name>``
    (names that are identifiers, rules without exceptions); else a comment that starts them."""
    relations = sorted(relations, key=lambda r: "new_" in r.formula)  # what they read first
    lines = [f"    new_{r.name} = {r.formula}\n" for r in relations
             if r.exact >= 1.0 and not r.exceptions and r.name.isidentifier()
             and not (r.constant and r.formula == r.name)]
    return ("    # the new values (`new_` names), from the old ones:\n" + "".join(lines) if lines
            else "    # the new value of every name above, from the old values:\n")


def make_run_world(run: Run, *, heldout_fraction: float | None = None,
                   compile: bool = False) -> World:
    """`make_cwmb_world` for a `codeworld.synthesis.run.Run` on a CWMB environment (its spec
    gives the env, buffer, mode, timeout and seed; its config the assists), with its split
    recorded in ``run.json``.

    A run's recorded split is kept (a resumed run scores as it did). A run saved before runs
    were split (calls saved, no split recorded) keeps its whole buffer, so that it replays; a new
    run draws its split with the run's seed (`heldout_fraction`, default `HELDOUT_FRACTION`).
    """
    from codeworld.worlds.registry import make_world

    spec = run.spec
    legacy = spec.split is None and bool(run.run_dir.load_calls())
    world = make_world(
        "cwmb", spec.env_id, getattr(run.config, "assist", None), spec.split,
        buffer=spec.buffer, mode=spec.mode or "sound", compile=compile,
        timeout_s=PROGRAM_TIMEOUT_S if spec.timeout_s is None else spec.timeout_s,
        split_seed=spec.seed, heldout_fraction=0.0 if legacy else heldout_fraction)
    run.record(split=world.evaluator.split.to_json())
    return world


def _relations(scorer: Scorer, names, structure: bool = True,
               reward_from_old: bool = False, angles: bool = False,
               regression: RegressionConfig | None = None,
               terms=()) -> tuple[str, list]:
    """The prompt section of what the scorer's buffer shows: the fitted relations (in the
    scorer's tolerances), the rewards and the episode ends; and the relations found.
    ``reward_from_old``: the reward's formula may use the old state too; ``angles``: a
    cosine-sine pair may be fitted through its angle; ``regression``: a
    `codeworld.fitting.RegressionConfig` for the components no linear fit gets right;
    ``terms``: the description's equations (`description_terms`), candidate terms of the
    state's and the reward's fits."""
    import numpy as np

    from codeworld.scoring._scorer import tolerances
    from codeworld.worlds.cwmb._relations import (MANY_REWARD_VALUES, find_relations,
                                                 find_reward_relation, outcomes_text,
                                                 relations_text)

    spec, buf = scorer.spec, scorer.buffer
    tol = tolerances(spec, scorer.mode)
    found = find_relations(buf.obs, buf.actions, buf.next_obs, names, discrete=spec.discrete,
                           n_actions=spec.n_actions, atol=tol.state_atol, rtol=tol.state_rtol,
                           mask=~np.asarray(buf.terminated, dtype=bool), structure=structure,
                           angles=angles, regression=regression,
                           episodes=buf.episode_start, terms=terms)
    outcomes = outcomes_text(buf.obs, buf.actions, buf.next_obs, buf.rewards, buf.terminated,
                             discrete=spec.discrete, names=names, n_actions=spec.n_actions)
    if structure and len(np.unique(buf.rewards)) > MANY_REWARD_VALUES:  # a formula, where one fits
        reward = find_reward_relation(buf.next_obs, buf.actions, buf.rewards, names,
                                      discrete=spec.discrete, n_actions=spec.n_actions,
                                      atol=tol.reward_atol, rtol=tol.reward_rtol,
                                      obs=buf.obs if reward_from_old else None, terms=terms)
        if reward is not None:
            outcomes += reward.line() + ("  (`new_x` is the value x has after the step, `x` the "
                                         "value it had before)\n" if reward_from_old else
                                         "  (`new_x` stands for the value x has after the step)\n")
    return relations_text(found, len(buf.obs), outcomes=outcomes), found
