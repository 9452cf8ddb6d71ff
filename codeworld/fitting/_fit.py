"""Fitting a program's constants to a replay buffer, kept only when the held-out score improves.

The parent splits the buffer by episodes into a training and a held-out part, finds the
program's fittable literals with `ast` (`codeworld.fitting._literals`), and sends the program and
the training transitions to one sandbox request (`codeworld.fitting._op.op_fit`) that runs the
whole optimizer loop inside the worker: untrusted code never runs here. The values that come back
are written into the program's text; the result is an ordinary program, scored on the held-out
part like any other. The fit is accepted only when that score rises.

What a fit cannot do: change a program's structure. A missing term, a wrong formula, a wrong
branch or a wrong ``done`` rule stays wrong; integers (counts, indices, discrete actions) are not
fitted; and a fit can only move a constant as far as the training transitions tell it to.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from codeworld.envs._buffers import ReplayBuffer
from codeworld.fitting._config import FitConfig
from codeworld.fitting._literals import Literal, find_literals, rewrite_literals
from codeworld._model_worker import PROGRAM_TIMEOUT_S

# Seconds allowed on top of the fit's own cap for starting the worker and compiling the program.
STARTUP_SLACK_S = 120.0


@dataclass
class FitResult:
    """The outcome of one fit.

    Attributes:
        accepted: the fitted program scored higher on the held-out transitions.
        source: the program to use: the fitted one when accepted, else the original.
        fitted_source: the program with the fitted values (kept or not); None without a fit.
        constants: per fitted literal: index, line, text as written, value before and after.
        score_before, score_after: scores of the original and the fitted program on the whole
            buffer (the scorer's mode).
        heldout_before, heldout_after: the same on the held-out transitions only.
        objective_before, objective_after: the training objective (normalized squared error).
        n_train, n_heldout: transitions in each part.
        evaluations: program evaluations the optimizer made.
        path: ``compiled`` or ``python`` (how the worker evaluated the program).
        seconds: wall time of the whole fit (scoring included).
        status: ``fitted``, ``no_constants`` or the sandbox status of a failed fit request.
        message: why the fit was refused or failed, in words.
    """

    accepted: bool
    source: str
    fitted_source: str | None = None
    constants: list[dict] = field(default_factory=list)
    score_before: float | None = None
    score_after: float | None = None
    heldout_before: float | None = None
    heldout_after: float | None = None
    objective_before: float | None = None
    objective_after: float | None = None
    n_train: int = 0
    n_heldout: int = 0
    evaluations: int = 0
    path: str = ""
    seconds: float = 0.0
    status: str = "fitted"
    message: str = ""
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data.pop("source")
        data.pop("fitted_source")
        return data


def split_buffer(buffer: ReplayBuffer, heldout_fraction: float) -> tuple[ReplayBuffer, ReplayBuffer]:
    """(training, held-out): every k-th episode held out, interleaved so both see early and late
    episodes; a buffer of a single episode is split by position (the last transitions held out)."""
    held = heldout_rows(buffer.episode_start, heldout_fraction)
    return buffer.subset(~held), buffer.subset(held)


def heldout_rows(groups, heldout_fraction: float) -> np.ndarray:
    """Which rows `split_buffer` holds out, for rows labelled by episode (`groups`): those of
    every k-th episode; with a single episode, the last rows."""
    groups = np.asarray(groups)
    n = len(groups)
    episodes, episode_of = np.unique(groups, return_inverse=True)
    if len(episodes) >= 2:
        e = np.arange(len(episodes))
        held_episode = np.floor((e + 1) * heldout_fraction) > np.floor(e * heldout_fraction)
        if held_episode.all() or not held_episode.any():
            held_episode = e == len(episodes) - 1
        return held_episode[episode_of]
    return np.arange(n) >= n - max(1, int(round(n * heldout_fraction)))


def _scorer_like(scorer: Any, buffer: ReplayBuffer):
    """A scorer of the same environment and mode on `buffer`, on the Python path: a program's
    scores are the same either way, and this spares a Numba compilation per score."""
    from codeworld.scoring import Scorer

    return Scorer(scorer.spec, buffer, mode=scorer.mode, references=False,
                  compile=False, limits=scorer.limits)


def _score(scorer: Any, source: str, timeout_s: float | None) -> float:
    report = scorer.score_source(source, timeout_s=timeout_s)
    return float(report.score)


def fit_constants(source: str, scorer: Any, config: FitConfig | None = None, *,
                  compile: bool = True, limits: Any = None,
                  timeout_s: float | None = PROGRAM_TIMEOUT_S) -> FitResult:
    """Fit `source`'s literals on a training split of the scorer's buffer.

    Args:
        source: the model program (either accepted form).
        scorer: a `codeworld.scoring.Scorer`: its environment, buffer and mode.
        config: the fit's settings (`FitConfig`).
        compile: let the worker evaluate the program compiled (when that predicts exactly as
            the Python path); off, every evaluation runs on the Python path.
        limits: sandbox limits of the fit's worker (default: Numba preloaded, a timeout of the
            fit's cap plus start-up slack).
        timeout_s: wall-clock limit of each scoring request.

    Returns:
        The `FitResult`; ``result.source`` is the program to keep.
    """
    from codeworld.fitting._op import op_fit
    from codeworld.sandbox import Sandbox, SandboxLimits

    config = config or FitConfig()
    started = time.perf_counter()
    try:
        literals: list[Literal] = find_literals(source)[: config.max_constants]
    except SyntaxError as exc:
        return FitResult(False, source, status="exception", message=f"syntax error: {exc.msg}")
    result = FitResult(False, source)
    if not literals:
        result.status = "no_constants"
        result.message = "the program has no fittable literal (float constants other than 0.0 and 1.0)"
        result.seconds = time.perf_counter() - started
        return result
    train, heldout = split_buffer(scorer.buffer, config.heldout_fraction)
    result.n_train, result.n_heldout = len(train), len(heldout)
    heldout_scorer = _scorer_like(scorer, heldout)
    whole_scorer = _scorer_like(scorer, scorer.buffer)
    result.heldout_before = _score(heldout_scorer, source, timeout_s)
    result.score_before = _score(whole_scorer, source, timeout_s)

    limits = limits or SandboxLimits(preload_numba=True,
                                     timeout_s=config.max_seconds + STARTUP_SLACK_S)
    with Sandbox(limits) as sandbox:
        reply = sandbox.call(
            op_fit, source=source, states=train.obs, actions=train.actions,
            next_states=train.next_obs, rewards=train.rewards, terminated=train.terminated,
            discrete=scorer.spec.discrete, method=config.method,
            max_evaluations=config.max_evaluations, max_seconds=config.max_seconds,
            max_constants=config.max_constants, compiled=compile)
    if not reply.ok:
        result.status = reply.status
        result.message = f"the fit failed in the sandbox: {reply.message or reply.status}"
        result.constants = [_constant(lit, lit.value) for lit in literals]
        result.seconds = time.perf_counter() - started
        return result
    fit = reply.value
    values = fit["values"]
    result.details = {k: fit[k] for k in ("stopped", "compile_note", "message", "seconds")}
    result.objective_before = fit["objective_before"]
    result.objective_after = fit["objective_after"]
    result.evaluations = fit["evaluations"]
    result.path = fit["path"]
    result.constants = [_constant(lit, v) for lit, v in zip(literals, values)]
    fitted = rewrite_literals(source, literals, values)
    result.fitted_source = fitted
    result.heldout_after = _score(heldout_scorer, fitted, timeout_s)
    result.score_after = _score(whole_scorer, fitted, timeout_s)
    gain = result.heldout_after - result.heldout_before
    result.accepted = gain > config.min_improvement
    if result.accepted:
        result.source = fitted
        result.message = (f"held-out score {result.heldout_before:.4f} -> "
                          f"{result.heldout_after:.4f}: the fit is kept")
    else:
        result.message = (f"held-out score {result.heldout_before:.4f} -> "
                          f"{result.heldout_after:.4f} (no improvement): the original is kept")
    result.seconds = time.perf_counter() - started
    return result


def _constant(literal: Literal, value: float) -> dict:
    return {"index": literal.index, "line": literal.line, "text": literal.text,
            "context": literal.context, "before": literal.value, "after": float(value)}
