"""Scoring a world model on a replay buffer: batched, sandboxed, in two modes, with references.

The model program runs over all transitions of the buffer in one request to a sandbox worker
(`ModelWorker.predict`: a compiled model in one native loop, an uncompiled one in one Python
loop); the predictions come back as arrays and are compared with the recorded transitions by one
call of the C++ kernel (or its Numba twin), `codeworld.kernels._check.check_transitions`. The
comparison itself is trusted code and runs in the parent; untrusted code never does.

Modes (DESIGN.md, "Scoring a world model"):

* ``sound`` (default): each next-state dimension is right when
  ``|pred - true| <= atol + rtol * |true|`` with the environment's tolerances (`EnvSpec`), the
  reward likewise with its own, and ``done`` is compared with *terminated* (a time-limit
  truncation is not an end a model can predict). A transition's credit is the mean of (fraction
  of state dimensions right, reward right, done right); the score is the mean credit.
* ``paper``: the CWMB paper's rule, kept with its quirks for comparison with its tables:
  the state per dimension with ``allclose(rtol=1e-5, atol=1e-5)`` (exact equality for Blackjack,
  CliffWalking and Taxi); the reward by exact equality (in float64: a float32-stored reward
  matches only a prediction equal to its float32 value); ``done`` compared with the paper's label
  ``terminated or truncated``; a transition labelled done gets 0.5 reward + 0.5 done and its next
  state is ignored; the others get thirds for state, reward and done; and the mean is weighted so
  that every distinct true reward value has the same total weight (the mean over reward values of
  the mean credit of their transitions).

Transitions a model did not predict (it raised, timed out or returned something invalid first)
count as wrong in every component.

Every report carries two references computed on the same data and in the same mode: the *floor*,
a do-nothing model (state unchanged, the most frequent reward, never done), and the *ceiling*,
the true simulator set from each observation (`EnvSpec.step_from_obs`; not available where
the observation does not determine the simulator's state, as for Blackjack's cards, nor for logged
data: the report then says why, from the spec).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from codeworld._backend import backend
from codeworld.envs._buffers import ReplayBuffer, load_buffer, resolve_buffer
from codeworld.envs.registry import EnvSpec, resolve_env
from codeworld.scoring._report import Reference, ScoreReport

if TYPE_CHECKING:
    from codeworld.kernels._check import CheckArrays

SOUND = "sound"
PAPER = "paper"
MODES = (SOUND, PAPER)

# The paper's state comparison for continuous observations: np.allclose(rtol=1e-5, atol=1e-5).
PAPER_STATE_ATOL = 1e-5
PAPER_STATE_RTOL = 1e-5


@dataclass(frozen=True)
class Tolerances:
    """The comparison tolerances of one mode on one environment.

    Attributes:
        state_atol, state_rtol: per next-state dimension.
        reward_atol, reward_rtol: for the reward.
    """

    state_atol: float
    state_rtol: float
    reward_atol: float
    reward_rtol: float


def tolerances(spec: EnvSpec, mode: str) -> Tolerances:
    """The tolerances `mode` uses on `spec`'s environment."""
    if mode == SOUND:
        return Tolerances(spec.state_atol, spec.state_rtol, spec.reward_atol, spec.reward_rtol)
    if mode == PAPER:
        if spec.paper_exact:
            return Tolerances(0.0, 0.0, 0.0, 0.0)
        return Tolerances(PAPER_STATE_ATOL, PAPER_STATE_RTOL, 0.0, 0.0)
    raise ValueError(f"unknown scoring mode {mode!r} (use one of {', '.join(MODES)})")


@dataclass(frozen=True)
class Predictions:
    """A model's predictions for a buffer; rows at and after `n_predicted` are not predictions."""

    next_states: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    n_predicted: int


@dataclass(frozen=True)
class TransitionScores:
    """Per-transition results of one mode (arrays of length n) and their summary."""

    credit: np.ndarray
    right: np.ndarray
    wrong_state: np.ndarray
    wrong_reward: np.ndarray
    wrong_done: np.ndarray
    score: float
    strict: float
    components: dict[str, float]
    skill: float | None


def _balanced_mean(values: np.ndarray, classes: np.ndarray) -> float:
    """Mean over distinct class values of the mean of `values` in each class (the paper's weighting)."""
    _, inverse = np.unique(classes, return_inverse=True)
    totals = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    return float(np.mean(totals / counts))


def compare_predictions(buffer: ReplayBuffer, spec: EnvSpec, mode: str, predictions: Predictions) -> TransitionScores:
    """Compare `predictions` with `buffer` in `mode` (kernel call plus vectorized summaries)."""
    from codeworld.kernels._check import check_transitions  # imports Numba: only when scoring

    tol = tolerances(spec, mode)
    true_done = buffer.terminated if mode == SOUND else buffer.dones
    check: CheckArrays = check_transitions(
        buffer.obs, buffer.next_obs, predictions.next_states, buffer.rewards, predictions.rewards,
        true_done, predictions.dones, tol.state_atol, tol.state_rtol, tol.reward_atol, tol.reward_rtol)
    n, d = buffer.obs.shape
    predicted = np.arange(n) < predictions.n_predicted
    dims_ok = np.where(predicted, check.dims_ok, 0)
    reward_ok = check.reward_ok & predicted
    done_ok = check.done_ok & predicted
    state_frac = dims_ok / d
    state_ok = dims_ok == d
    thirds = (state_frac + reward_ok + done_ok) / 3.0
    if mode == SOUND:
        credit = thirds
        right = state_ok & reward_ok & done_ok
        score = float(credit.mean())
        wrong_state = ~state_ok
    else:
        terminal = buffer.dones
        credit = np.where(terminal, 0.5 * reward_ok + 0.5 * done_ok, thirds)
        right = np.where(terminal, reward_ok & done_ok, state_ok & reward_ok & done_ok)
        score = _balanced_mean(credit, buffer.rewards)
        wrong_state = ~state_ok & ~terminal
    skill = None
    if not spec.discrete_state and predictions.n_predicted > 0:
        still = float(check.sq_err_still[predicted].sum())
        model = float(check.sq_err_model[predicted].sum())
        if still > 0 and np.isfinite(model):
            skill = 1.0 - model / still
    components = {
        "state": float(state_ok.mean()),
        "state_dims": float(state_frac.mean()),
        "reward": float(reward_ok.mean()),
        "done": float(done_ok.mean()),
    }
    return TransitionScores(credit, right, wrong_state, ~reward_ok, ~done_ok, score, float(right.mean()),
                            components, skill)


FEW_REWARD_VALUES = 10
"""A reward with at most this many distinct values in a buffer is few-valued (a goal's bonus,
a crash's penalty beside a per-step reward); one with more is a quantity, none of whose values
is a rare outcome."""


def rare_accuracy(buffer: ReplayBuffer, spec: EnvSpec, mode: str, predictions: Predictions,
                  rare: float = 0.1) -> dict[str, Any]:
    """Accuracy on the rare outcomes, which a model that never predicts them can lose without
    the mean noticing: for a few-valued reward (`FEW_REWARD_VALUES`), per reward value seen on
    less than `rare` of the transitions, the share of its transitions whose reward is right;
    and on the transitions that end an episode, the share whose ``done`` is right (None where
    there are none)."""
    ev = compare_predictions(buffer, spec, mode, predictions)
    n = len(buffer)
    values, counts = np.unique(buffer.rewards, return_counts=True)
    few = 1 < len(values) <= FEW_REWARD_VALUES
    rewards = {format(float(v), "g"): float((~ev.wrong_reward[buffer.rewards == v]).mean())
               for v, c in zip(values, counts) if few and c < rare * n}
    ends = buffer.terminated if mode == SOUND else buffer.dones
    return {"reward": rewards, "n_ends": int(ends.sum()),
            "done_on_ends": float((~ev.wrong_done[ends]).mean()) if ends.any() else None}


def exactness(buffer: ReplayBuffer, predictions: Predictions) -> dict[str, Any]:
    """Whether predictions are right within the paper's tolerance (``allclose(rtol=1e-5,
    atol=1e-5)`` on every next-state dimension and the reward; ``done`` equal to *terminated*)
    on every transition: the bar for calling a model perfect, tighter than the sound mode's
    storage-precision tolerances. Also the worst next-state or reward error, to show where a
    model that passes the sound tolerance is still off.

    Returns:
        ``{"exact": bool, "wrong": transitions not exact, "max_error": float,
        "where": "s<j>" or "reward", "index": int}`` (``where``/``index`` of the worst error).
    """
    n = len(buffer)
    k = int(predictions.n_predicted)
    if n == 0:
        return {"exact": True, "wrong": 0, "max_error": 0.0, "where": None, "index": None}
    true = np.column_stack([buffer.next_obs, buffer.rewards])
    pred = np.column_stack([predictions.next_states, predictions.rewards])
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(pred - true)
        ok = err <= PAPER_STATE_ATOL + PAPER_STATE_RTOL * np.abs(true)
    ok &= np.isfinite(pred)
    ok[k:] = False
    done_ok = np.asarray(predictions.dones, bool) == np.asarray(buffer.terminated, bool)
    right = ok.all(axis=1) & done_ok
    right[k:] = False
    err = np.where(np.isfinite(err), err, np.inf)[:max(k, 1)]
    flat = int(np.argmax(err)) if k else 0
    i, j = divmod(flat, true.shape[1])
    return {"exact": bool(right.all()), "wrong": int((~right).sum()),
            "max_error": float(err.flat[flat]) if k else float("inf"),
            "where": "reward" if j == true.shape[1] - 1 else f"s{j}", "index": int(i)}


def most_frequent(values, default: float = 0.0) -> float:
    """The most frequent of `values` (the smallest of equally frequent ones), or `default`."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(values) == 0:
        return default
    uniq, counts = np.unique(values, return_counts=True)
    return float(uniq[np.argmax(counts)])


def floor_predictions(buffer: ReplayBuffer) -> Predictions:
    """The do-nothing model: state unchanged, the most frequent recorded reward, never done."""
    modal = most_frequent(buffer.rewards)
    n = len(buffer)
    return Predictions(buffer.obs.copy(), np.full(n, modal), np.zeros(n, bool), n)


def ceiling_predictions(buffer: ReplayBuffer, spec: EnvSpec) -> Predictions | None:
    """The true simulator used as the model, set from each observation (trusted, in-process)."""
    if not spec.settable:
        return None
    env = spec.make()
    n = len(buffer)
    next_states = np.empty_like(buffer.next_obs)
    rewards = np.empty(n)
    dones = np.zeros(n, bool)
    try:
        for i in range(n):
            next_states[i], rewards[i], dones[i] = spec.step_from_obs(env, buffer.obs[i], buffer.actions[i])
    finally:
        env.close()
    return Predictions(next_states, rewards, dones, n)


def _row(values: np.ndarray) -> list:
    return [float(v) for v in np.asarray(values).reshape(-1)]


def _action(spec: EnvSpec, action: np.ndarray) -> Any:
    return int(round(float(action[0]))) if spec.discrete else _row(action)


class Scorer:
    """Scores world models for one environment on one buffer, with its floor and ceiling.

    The references are computed once (on first use) and reused for every model scored.

    Args:
        env: the environment's spec, or its id (codeworld's, the paper's, any `get_spec` takes).
        buffer: a `ReplayBuffer`, a path to a buffer file (codeworld's or the paper's layout),
            ``"paper"`` for the paper's buffer, or None for the environment's default buffer
            (`codeworld.envs._buffers.default_buffer`: the committed one of a CWMB environment).
        mode: ``"sound"`` (default) or ``"paper"``.
        references: compute the floor and ceiling for reports.
        compile: let workers try to compile models with Numba (native loop).
        limits: sandbox limits for the workers (`codeworld.sandbox.SandboxLimits`).
    """

    def __init__(self, env: EnvSpec | str, buffer: ReplayBuffer | str | Path | None = None, *,
                 mode: str = SOUND, references: bool = True, compile: bool = True,
                 limits: Any = None):
        self.spec = resolve_env(env)
        if mode not in MODES:
            raise ValueError(f"unknown scoring mode {mode!r} (use one of {', '.join(MODES)})")
        buffer = resolve_buffer(self.spec, buffer)
        if not isinstance(buffer, ReplayBuffer):
            buffer = load_buffer(buffer, self.spec)
        if buffer.env_id != self.spec.env_id:
            raise ValueError(f"the buffer is for {buffer.env_id}, not {self.spec.env_id}")
        self.buffer = buffer
        self.mode = mode
        self.references = references
        self.compile = compile
        self.limits = limits
        self._floor: Reference | None = None
        self._ceiling: Reference | None | bool = False  # False: not computed yet

    # -- references ------------------------------------------------------------------------

    def _reference(self, name: str, predictions: Predictions) -> Reference:
        ev = compare_predictions(self.buffer, self.spec, self.mode, predictions)
        return Reference(name, ev.score, ev.strict, ev.components)

    @property
    def floor(self) -> Reference:
        """The do-nothing model's result on this buffer, in this mode."""
        if self._floor is None:
            self._floor = self._reference("floor", floor_predictions(self.buffer))
        return self._floor

    @property
    def ceiling(self) -> Reference | None:
        """The true simulator's result on this buffer, in this mode (None where not settable)."""
        if self._ceiling is False:
            predictions = ceiling_predictions(self.buffer, self.spec)
            self._ceiling = None if predictions is None else self._reference("ceiling", predictions)
        return self._ceiling  # type: ignore[return-value]

    # -- scoring ---------------------------------------------------------------------------

    def score_predictions(self, predictions: Predictions, *, status: str = "ok",
                          message: str | None = None, line: int | None = None,
                          compiled: bool | None = None, started: float | None = None) -> ScoreReport:
        """The report for given predictions (trusted arrays; the model already ran)."""
        ev = compare_predictions(self.buffer, self.spec, self.mode, predictions)
        first_error = self._first_error(ev, predictions, status, message, line)
        elapsed = time.perf_counter() - started if started is not None else 0.0
        return ScoreReport(
            env_id=self.spec.env_id, mode=self.mode, status=status, score=ev.score,
            strict=ev.strict, components=ev.components, skill=ev.skill,
            floor=self.floor if self.references else None,
            ceiling=self.ceiling if self.references else None,
            n_transitions=len(self.buffer), n_predicted=int(predictions.n_predicted),
            first_error=first_error, message=message, line=line, compiled=compiled,
            buffer=self.buffer.path, backend=backend(), elapsed_s=elapsed,
            extra={"ceiling_unavailable": self.spec.ceiling_note}
            if self.references and self.ceiling is None else {},
        )

    def score_source(self, source: str, *, worker: Any = None, timeout_s: float | None = None) -> ScoreReport:
        """Score a model program: run it in a sandbox worker over the whole buffer, then compare.

        Args:
            source: the program text (functional ``step`` or the paper's ``class Environment``).
            worker: a `ModelWorker` already holding this program (reused, not closed); by
                default one is started and closed here.
            timeout_s: wall-clock limit of the prediction request.
        """
        from codeworld._model import ModelSourceError
        from codeworld._model_worker import ModelWorker

        started = time.perf_counter()
        if worker is None:
            try:
                worker = ModelWorker(source, discrete=self.spec.discrete, compile=self.compile,
                                     limits=self.limits)
            except ModelSourceError as exc:
                return self._failure("exception", str(exc), exc.line, started)
            with worker:
                return self._score_with(worker, timeout_s, started)
        return self._score_with(worker, timeout_s, started)

    def score_file(self, path: str | Path, **kwargs: Any) -> ScoreReport:
        """Score the model program in a file (see `score_source`)."""
        return self.score_source(Path(path).read_text(encoding="utf-8"), **kwargs)

    def score_step(self, step: Callable[[np.ndarray, Any], tuple]) -> ScoreReport:
        """Score a *trusted* Python ``step(state, action)`` in this process (one Python loop).

        For reference models written by hand (tests, baselines). Never pass untrusted code.
        """
        from codeworld._model import InvalidOutput, step_each

        started = time.perf_counter()
        n, d = self.buffer.obs.shape
        next_states = np.full((n, d), np.nan)
        rewards = np.full(n, np.nan)
        dones = np.zeros(n, bool)
        status, message = "ok", None
        count = 0
        states = np.asarray(self.buffer.obs, dtype=np.float64)
        actions = np.asarray(self.buffer.actions, dtype=np.float64).reshape(n, -1)
        for i, output, error in step_each(step, states, actions, discrete=self.spec.discrete):
            if isinstance(error, InvalidOutput):
                status, message = "invalid_output", f"transition {i}: {error}"
                break
            if error is not None:  # reported, like the sandbox does
                status, message = "exception", f"transition {i}: {type(error).__name__}: {error}"
                break
            next_states[i], rewards[i], dones[i] = output
            count += 1
        return self.score_predictions(Predictions(next_states, rewards, dones, count), status=status,
                                      message=message, started=started)

    def _score_with(self, worker: Any, timeout_s: float | None, started: float) -> ScoreReport:
        return self.score_worker(worker, timeout_s=timeout_s, started=started)[0]

    def score_worker(self, worker: Any, *, timeout_s: float | None = None, limit: int | None = None,
                     started: float | None = None) -> tuple[ScoreReport, Predictions | None]:
        """Score the program a `ModelWorker` holds, and return its predictions with the report.

        Args:
            worker: the worker (not closed here).
            timeout_s: wall-clock limit of the prediction request.
            limit: predict only the buffer's first ``limit`` transitions (a smoke run); the
                others count as not predicted.
            started: ``time.perf_counter()`` at the start, for the report's elapsed time.

        Returns:
            The report, and the predictions (None when the program did not load).
        """
        started = time.perf_counter() if started is None else started
        loaded = worker.load()
        if not loaded.ok:
            return self._failure(loaded.status, loaded.message, loaded.line, started), None
        n, d = self.buffer.obs.shape
        k = n if limit is None else max(0, min(int(limit), n))
        prediction = worker.predict(self.buffer.obs[:k], self.buffer.actions[:k], timeout_s=timeout_s)
        result = prediction.result
        if k == n:
            predictions = Predictions(prediction.next_states, prediction.rewards, prediction.dones,
                                      prediction.n_predicted)
        else:
            next_states, rewards = np.full((n, d), np.nan), np.full(n, np.nan)
            dones = np.zeros(n, bool)
            next_states[:k], rewards[:k], dones[:k] = (prediction.next_states, prediction.rewards,
                                                       prediction.dones)
            predictions = Predictions(next_states, rewards, dones, prediction.n_predicted)
        compiled = bool(worker.info.get("compiled")) if worker.info else None
        report = self.score_predictions(predictions, status=result.status,
                                        message=None if result.ok else result.message,
                                        line=result.line, compiled=compiled, started=started)
        return report, predictions

    def failure_report(self, status: str, message: str | None, line: int | None = None) -> ScoreReport:
        """The report of a program that was not run (no transition predicted)."""
        return self._failure(status, message, line, time.perf_counter())

    def _failure(self, status: str, message: str | None, line: int | None, started: float) -> ScoreReport:
        """A program that did not load: no transition predicted."""
        n, d = self.buffer.obs.shape
        empty = Predictions(np.full((n, d), np.nan), np.full(n, np.nan), np.zeros(n, bool), 0)
        return self.score_predictions(empty, status=status, message=message, line=line,
                                      started=started)

    def _first_error(self, ev: TransitionScores, predictions: Predictions, status: str,
                     message: str | None, line: int | None) -> dict[str, Any] | None:
        buf = self.buffer
        wrong = np.flatnonzero(~ev.right[:predictions.n_predicted])
        if status != "ok":
            index = int(predictions.n_predicted)
            record: dict[str, Any] = {"index": index, "exception": message or status, "line": line}
            if index < len(buf):
                record.update({
                    "state": _row(buf.obs[index]),
                    "action": _action(self.spec, buf.actions[index]),
                    "expected": {"next_state": _row(buf.next_obs[index]),
                                 "reward": float(buf.rewards[index]),
                                 "done": bool(buf.terminated[index] if self.mode == SOUND
                                              else buf.dones[index])},
                })
            if len(wrong):
                record["earlier_misprediction"] = int(wrong[0])
            return record
        if not len(wrong):
            return None
        i = int(wrong[0])
        tol = tolerances(self.spec, self.mode)
        truth, pred = buf.next_obs[i], predictions.next_states[i]
        bad_dims = [int(j) for j in np.flatnonzero(
            ~(np.abs(pred - truth) <= tol.state_atol + tol.state_rtol * np.abs(truth)) & (pred != truth))]
        kinds = []
        if ev.wrong_state[i]:
            kinds.append("next_state")
        if ev.wrong_reward[i]:
            kinds.append("reward")
        if ev.wrong_done[i]:
            kinds.append("done")
        true_done = buf.terminated[i] if self.mode == SOUND else buf.dones[i]
        return {
            "index": i,
            "episode_step": int(i - buf.episode_start[i]),
            "state": _row(buf.obs[i]),
            "action": _action(self.spec, buf.actions[i]),
            "expected": {"next_state": _row(truth), "reward": float(buf.rewards[i]),
                         "done": bool(true_done)},
            "predicted": {"next_state": _row(pred), "reward": float(predictions.rewards[i]),
                          "done": bool(predictions.dones[i])},
            "wrong": kinds,
            "wrong_dims": bad_dims if ev.wrong_state[i] else [],
        }


def score_model(env: EnvSpec | str, source: str, buffer: ReplayBuffer | str | Path | None = None, *,
                mode: str = SOUND, references: bool = True, compile: bool = True,
                timeout_s: float | None = None) -> ScoreReport:
    """Score one model program on a buffer (see `Scorer`); a convenience for one-off use."""
    scorer = Scorer(env, buffer, mode=mode, references=references, compile=compile)
    return scorer.score_source(source, timeout_s=timeout_s)
