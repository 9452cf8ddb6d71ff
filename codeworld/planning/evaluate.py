"""Evaluation by return: a random policy, the planner on the true simulator, the planner on a CWM.

Every policy plays the same seeded episodes of the real Gymnasium environment (episode ``i``
resets with seed ``seed + i``). The normalized return of the CWMB paper is
``(R_cwm - R_random) / (R_oracle - R_random)``; where oracle and random tie it is undefined and
reported as None, not as a number. Random and oracle results are read from the package's reference
table when it holds them (`codeworld.planning._protocol`: computed once per environment, seed and
protocol), else cached on disk per environment, planner config, seed, episode count and step cap
(under ``$CODEWORLD_CACHE_DIR/eval``, by default ``~/.cache/codeworld/eval``), since the oracle is
by far the slowest of the three.

The CWM is untrusted: it is loaded in a sandbox worker and planned with there
(`codeworld.planning._ops`); the real environment stays here and sends it one state per decision.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from codeworld.planning.planners import ModelAccess, decision_seed
from codeworld.planning._protocol import Protocol, default_config, get_protocol
from codeworld.planning.registry import (MODEL_ONLY_FIELDS, SPEED_ONLY_FIELDS, config_to_dict, get_planner,
                                         make_planner, planner_of)

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec

Progress = Callable[[str, int, int], None]  # (policy, episode, step)
# One planning decision with a model in its sandbox worker (`codeworld plan`, `evaluate`).
DECISION_TIMEOUT_S = 120.0
DEFAULT_DECISION_TIMEOUT_S = DECISION_TIMEOUT_S
_CACHE_VERSION = 1  # of the random policy's results; a planner's results carry its own (PlannerEntry)


@dataclass
class ReturnStats:
    """Returns of one policy over seeded episodes.

    Attributes:
        policy: ``"random"``, ``"oracle"`` or ``"model"``.
        returns: undiscounted return of each finished episode.
        lengths: steps of each finished episode.
        status: ``"ok"``, or the sandbox status that ended the run early (``"timeout"``, ...).
        message: what went wrong, when status is not ok.
        model_steps: simulated steps the planner took.
        seconds: wall time.
        cached: whether the result came from the cache.
    """

    policy: str
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    status: str = "ok"
    message: str | None = None
    model_steps: int = 0
    seconds: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.returns)) if self.returns else None

    @property
    def stderr(self) -> float | None:
        if not self.returns:
            return None
        if len(self.returns) < 2:
            return 0.0
        return float(np.std(self.returns, ddof=1) / math.sqrt(len(self.returns)))

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(mean=self.mean, stderr=self.stderr)
        return out


def normalized_return(r_model: float | None, r_random: float | None, r_oracle: float | None) -> float | None:
    """``(R_cwm - R_random) / (R_oracle - R_random)``; None when undefined (a tie, or a value missing)."""
    if r_model is None or r_random is None or r_oracle is None:
        return None
    gap = r_oracle - r_random
    if abs(gap) <= 1e-9 * max(1.0, abs(r_oracle), abs(r_random)):
        return None
    return float((r_model - r_random) / gap)


@dataclass
class PlanEvaluation:
    """The three returns and the normalized return for one environment and model.

    Attributes:
        env_id, seed, episodes, max_steps: the protocol.
        config: the planner config (as a dict with its planner name).
        random, oracle, model: each policy's returns (None when not run).
        protocol: the named protocol it followed, if one was named.
    """

    env_id: str
    seed: int
    episodes: int
    max_steps: int | None
    config: dict
    random: ReturnStats | None = None
    oracle: ReturnStats | None = None
    model: ReturnStats | None = None
    protocol: str | None = None

    @property
    def normalized_return(self) -> float | None:
        if self.model is None or not self.model.ok or self.random is None or self.oracle is None:
            return None
        return normalized_return(self.model.mean, self.random.mean, self.oracle.mean)

    @property
    def references_tie(self) -> bool:
        """The oracle and the random policy both ran and earned the same mean return: no model's
        return can be normalized against them."""
        return (self.random is not None and self.oracle is not None and self.random.ok
                and self.oracle.ok and bool(self.random.returns) and bool(self.oracle.returns)
                and normalized_return(0.0, self.random.mean, self.oracle.mean) is None)

    @property
    def normalized_note(self) -> str | None:
        """Why the normalized return is undefined, when it is."""
        if self.normalized_return is not None:
            return None
        if self.references_tie:
            return "undefined: the oracle and the random policy tie"
        if self.model is None or self.random is None or self.oracle is None:
            return "needs the model, random and oracle returns"
        if not self.model.ok:
            return f"the model's run ended early ({self.model.status})"
        if not self.oracle.ok:
            return f"undefined: no oracle ({self.oracle.message})"
        return "undefined: the oracle and the random policy tie"

    def to_dict(self) -> dict:
        def mean(stats):
            return None if stats is None else stats.mean

        return {
            "env_id": self.env_id,
            "episodes": self.episodes,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "protocol": self.protocol,
            "config": self.config,
            "return_model": mean(self.model),
            "return_random": mean(self.random),
            "return_oracle": mean(self.oracle),
            "normalized_return": self.normalized_return,
            "normalized_note": self.normalized_note,
            "random": None if self.random is None else self.random.to_dict(),
            "oracle": None if self.oracle is None else self.oracle.to_dict(),
            "model": None if self.model is None else self.model.to_dict(),
        }


# -- episodes -------------------------------------------------------------------------------------


class _Stop(Exception):
    """A policy's run ends early (the model failed); carries the sandbox status."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


# Finished episodes kept so far (None: start from the first), and where to keep each one as it
# finishes: a stopped run of the same policy, env, config, seed and step cap starts again after
# them (`_cached`). Episode ``i`` depends only on ``seed + i``, so the result is the same.
Checkpoint = tuple[ReturnStats | None, Callable[[ReturnStats], None] | None]
NO_CHECKPOINT: Checkpoint = (None, None)


def _run_episodes(policy: str, spec: EnvSpec, episodes: int, seed: int, max_steps: int | None,
                  decide: Callable[[Any, np.ndarray, int, int], list], on_episode: Callable[[int], None] | None,
                  progress: Progress | None, checkpoint: Checkpoint = NO_CHECKPOINT) -> ReturnStats:
    done, keep = checkpoint
    stats = ReturnStats(policy)
    earlier = 0.0
    if done is not None:
        stats.returns, stats.lengths = list(done.returns), list(done.lengths)
        stats.model_steps, earlier = done.model_steps, done.seconds
    begin = time.monotonic()
    env = spec.make()
    try:
        for episode in range(len(stats.returns), episodes):
            obs, _ = env.reset(seed=seed + episode)
            if on_episode is not None:
                on_episode(episode)
            total, t, queue = 0.0, 0, []
            while True:
                if not queue:
                    try:
                        queue = list(decide(env, obs, episode, t))
                    except _Stop as stop:
                        stats.status, stats.message = stop.status, str(stop)
                        return stats
                obs, reward, terminated, truncated, _ = env.step(queue.pop(0))
                total += float(reward)
                t += 1
                if progress is not None:
                    progress(policy, episode, t)
                if terminated or truncated or (max_steps is not None and t >= max_steps):
                    break
            stats.returns.append(total)
            stats.lengths.append(t)
            if keep is not None and len(stats.returns) < episodes:
                stats.seconds = earlier + time.monotonic() - begin
                keep(stats)
    finally:
        env.close()
        stats.seconds = earlier + time.monotonic() - begin
    return stats


def run_random(spec: EnvSpec, episodes: int = 10, seed: int = 0, max_steps: int | None = None,
               progress: Progress | None = None, checkpoint: Checkpoint = NO_CHECKPOINT) -> ReturnStats:
    """Returns of a uniformly random policy (the action space seeded per episode)."""
    spaces: dict = {}

    def on_episode(episode: int) -> None:
        spaces.clear()

    def decide(env, obs, episode, t):
        if "space" not in spaces:
            env.action_space.seed(seed + episode)
            spaces["space"] = env.action_space
        return [spaces["space"].sample()]

    return _run_episodes("random", spec, episodes, seed, max_steps, decide, on_episode, progress,
                         checkpoint)


def run_oracle(spec: EnvSpec, config=None, episodes: int = 10, seed: int = 0, max_steps: int | None = None,
               progress: Progress | None = None, checkpoint: Checkpoint = NO_CHECKPOINT) -> ReturnStats:
    """Returns of the planner using the true simulator as its model (restored per simulated step)."""
    from codeworld.planning._oracle import OracleModel

    config = config or default_config(spec, max_steps)
    # MuJoCo's threads for the native oracle: the planner's own count (plans do not depend on it).
    oracle = OracleModel(spec, threads=getattr(config, "threads", 1))
    planner = make_planner(config, spec)
    access = ModelAccess(step_batch=oracle.step_batch, oracle=True)
    try:
        def decide(env, obs, episode, t):
            if t == 0:
                planner.reset()
            actions = planner.act(access, oracle.state_of(env), decision_seed(seed, episode, t))
            return [spec.decode_action(a) for a in actions]

        done, keep = checkpoint
        before = done.model_steps if done is not None else 0

        def kept(stats: ReturnStats) -> None:
            stats.model_steps = before + oracle.steps
            keep(stats)

        stats = _run_episodes("oracle", spec, episodes, seed, max_steps, decide, None, progress,
                              (done, kept if keep is not None else None))
    finally:
        oracle.close()
    stats.model_steps = before + oracle.steps
    return stats


def run_model(spec: EnvSpec, source: str, config=None, episodes: int = 10, seed: int = 0,
              max_steps: int | None = None, decision_timeout_s: float = DEFAULT_DECISION_TIMEOUT_S,
              compile: bool = True, progress: Progress | None = None, limits=None) -> ReturnStats:
    """Returns of the planner using a code world model, planned with inside a sandbox worker.

    A model that fails to load, raises, returns something outside the contract, or takes longer
    than `decision_timeout_s` for one decision ends the run with that sandbox status and message.
    """
    from codeworld.planning._ops import plan_act, plan_reset
    from codeworld._model_worker import ModelWorker
    from codeworld.sandbox import SandboxLimits

    config = config or default_config(spec, max_steps)
    from codeworld._model import ModelSourceError

    limits = limits or SandboxLimits(timeout_s=decision_timeout_s, preload_numba=compile)
    try:
        worker = ModelWorker(source, discrete=spec.discrete, compile=compile, limits=limits)
    except ModelSourceError as exc:  # not a world model at all: nothing to plan with
        where = f" (line {exc.line})" if getattr(exc, "line", None) else ""
        return ReturnStats("model", status="exception", message=f"the program is not a world model{where}: {exc}")
    model_steps = 0
    # The worker imports the planner's module, where a planner defined outside codeworld registers.
    reset_args = {"config": config_to_dict(config), "n_actions": spec.n_actions,
                  "action_low": list(spec.action_low), "action_high": list(spec.action_high),
                  "planner_module": planner_of(config).planner_class.__module__}
    support = getattr(config, "support", None)
    if support is not None and support.on:  # the training data's support, tested in the worker
        from codeworld.planning._support import support_of

        reset_args["support"] = support_of(spec, support).to_dict()
    try:
        def decide(env, obs, episode, t):
            nonlocal model_steps
            if t == 0:
                started = worker.call(plan_reset, **reset_args)
                if not started.ok:
                    raise _Stop(started.status, f"loading the model failed: {started.summary()}")
            result = worker.call(plan_act, timeout_s=decision_timeout_s,
                                 state=spec.encode_obs(obs), seed=decision_seed(seed, episode, t))
            if not result.ok:
                where = f"episode {episode}, step {t}"
                raise _Stop(result.status, f"the model failed while planning ({where}): {result.summary()}")
            model_steps += int(result.value["model_steps"])
            return [spec.decode_action(a) for a in result.value["actions"]]

        stats = _run_episodes("model", spec, episodes, seed, max_steps, decide, None, progress)
    finally:
        worker.close()
    stats.model_steps = model_steps
    return stats


def oracle_key_config(config: dict) -> dict:
    """A planner config as oracle results are keyed by: without the fields that change only speed
    and those the oracle ignores."""
    return {k: v for k, v in config.items() if k not in SPEED_ONLY_FIELDS | MODEL_ONLY_FIELDS}


def reference_key_of(policy: str, result: PlanEvaluation) -> dict:
    """The reference table's key of the random or oracle returns in `result`."""
    from codeworld.planning._protocol import reference_key

    config = oracle_key_config(result.config) if policy == "oracle" else None
    return reference_key(policy, result.env_id, config, result.episodes, result.seed, result.max_steps)


# -- caching --------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """Where random and oracle results are cached (``<codeworld cache>/eval``)."""
    from codeworld._paths import cache_root

    return cache_root() / "eval"


def _cache_key(policy: str, env_id: str, config: dict | None, episodes: int, seed: int, max_steps: int | None) -> str:
    import gymnasium

    from codeworld._version import __version__

    # A planner whose results changed for the same config and seed has a new version of its own,
    # so that the other planners' cached baselines stay valid.
    version = get_planner(config["planner"]).cache_version if config else _CACHE_VERSION
    payload = {"v": version, "policy": policy, "env_id": env_id, "config": config, "episodes": episodes,
               "seed": seed, "max_steps": max_steps, "gymnasium": gymnasium.__version__,
               "codeworld": __version__}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def _stats_from(data: dict) -> ReturnStats:
    data = dict(data)
    data.pop("mean", None)
    data.pop("stderr", None)
    stats = ReturnStats(**data)
    stats.cached = True
    return stats


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _cached(policy: str, spec: EnvSpec, config: dict | None, episodes: int, seed: int, max_steps: int | None,
            use_cache: bool, compute: Callable[[Checkpoint], ReturnStats], resume: bool = False,
            keep_dir: Path | None = None) -> ReturnStats:
    """The policy's returns from the reference table or the cache (with ``use_cache``), else
    computed; with ``use_cache`` or ``resume``, each finished episode is kept on disk (beside the
    cache, or in ``keep_dir``) until the last, and a run stopped before it starts again after them."""
    from codeworld.envs.derive import safe_name
    from codeworld.planning._protocol import find_reference, reference_key

    if use_cache:
        entry = find_reference(reference_key(policy, spec.env_id, config, episodes, seed, max_steps))
        if entry is not None:
            return _stats_from(entry["stats"])

    key = _cache_key(policy, spec.env_id, config, episodes, seed, max_steps)
    path = cache_dir() / f"{safe_name(spec.env_id)}-{policy}-{key}.json"
    if use_cache and path.exists():
        return _stats_from(json.loads(path.read_text()))
    checkpoint = NO_CHECKPOINT
    partial = (Path(keep_dir) if keep_dir is not None else path.parent) / (path.stem + ".partial.json")
    if use_cache or resume:
        done = None
        if partial.exists():
            done = _stats_from(json.loads(partial.read_text()))
            done.cached = False
        checkpoint = (done, lambda stats: _write_json(partial, stats.to_dict()))
    stats = compute(checkpoint)
    if use_cache and stats.ok:
        _write_json(path, stats.to_dict())
    if stats.ok:
        partial.unlink(missing_ok=True)
    return stats


# -- the whole evaluation -------------------------------------------------------------------------

POLICIES = ("random", "oracle", "model")

# An environment without a time limit of its own (CliffWalking, a user's env) would let a policy
# that never reaches the goal step forever: its episodes are cut here, as in the paper's data
# collection (100 steps).
UNLIMITED_ENV_MAX_STEPS = 100


def evaluate(env: EnvSpec | str, source: str | None = None, config: Any = None, *, episodes: int = 10, seed: int = 0,
             max_steps: int | None = None, policies: tuple[str, ...] = POLICIES, use_cache: bool = True,
             decision_timeout_s: float = DEFAULT_DECISION_TIMEOUT_S, compile: bool = True,
             progress: Progress | None = None, protocol: str | Protocol | None = None,
             skip_model_on_tie: bool = False, resume: bool = False,
             keep_dir: str | Path | None = None) -> PlanEvaluation:
    """Evaluate a code world model by the return its planner earns on the real environment.

    Args:
        env: the environment's spec, or its id (any `codeworld.envs.get_spec` takes that has a
            simulator).
        source: the model program (needed when ``"model"`` is in `policies`).
        config: a registered planner's config, such as an `MctsConfig` or `CemConfig` (default:
            the paper's, for the env's planner, its plans no longer than an episode may run;
            `codeworld.planning._protocol.default_config`).
        episodes: seeded episodes per policy (paper: 10).
        seed: episode ``i`` resets with ``seed + i``; planner seeds derive from it too.
        max_steps: cap on steps per episode (None: the env's own time limit, or
            `UNLIMITED_ENV_MAX_STEPS` for an env without one).
        policies: which of ``"random"``, ``"oracle"``, ``"model"`` to run.
        use_cache: read and write cached random and oracle results.
        decision_timeout_s: the longest one planning decision with the model may take.
        compile: try to compile the model with Numba (else it runs on the Python path).
        progress: called as ``progress(policy, episode, step)`` after every real step.
        protocol: a named protocol (`codeworld.planning._protocol.PROTOCOLS`, e.g. ``"paper"``)
            whose episodes and step cap replace `episodes` and `max_steps`.
        skip_model_on_tie: do not plan with the model where the oracle and the random policy
            tie (`PlanEvaluation.references_tie`): its normalized return is undefined whatever
            it earns (a benchmark's time goes to the returns it can report).
        resume: keep each finished random and oracle episode on disk (beside the cache) and
            start a run stopped before its last again after them, also without `use_cache`
            (always with it): hours of an oracle are not lost to a stop.
        keep_dir: where those episodes are kept (default: beside the cache); a folder that
            travels with a repository lets a run stopped on one machine go on on another.

    Random and oracle returns come from the reference table when it holds them for this env,
    seed, config, episodes and step cap (with `use_cache`), else from the cache, else are run.
    """
    from codeworld.envs import resolve_env
    from codeworld.planning._oracle import OracleUnavailable

    spec = resolve_env(env)
    if not spec.simulator:
        raise ValueError(f"{spec.env_id} is logged data without a simulator: planning needs an "
                         "environment to act in (name a Gymnasium id instead)")
    if protocol is not None:
        chosen = get_protocol(protocol)
        episodes, max_steps = chosen.episodes, chosen.max_steps
    if max_steps is None and spec.max_episode_steps is None:
        max_steps = UNLIMITED_ENV_MAX_STEPS
    config = config or default_config(spec, max_steps)
    cfg = config_to_dict(config)
    unknown = set(policies) - set(POLICIES)
    if unknown:
        raise ValueError(f"unknown policies {sorted(unknown)} (known: {', '.join(POLICIES)})")
    result = PlanEvaluation(spec.env_id, seed, episodes, max_steps, cfg,
                            protocol=None if protocol is None else get_protocol(protocol).name)
    if "random" in policies:
        result.random = _cached("random", spec, None, episodes, seed, max_steps, use_cache,
                                lambda kept: run_random(spec, episodes, seed, max_steps, progress,
                                                        kept), resume, keep_dir)
    if "oracle" in policies:
        try:
            key_cfg = oracle_key_config(cfg)
            result.oracle = _cached("oracle", spec, key_cfg, episodes, seed, max_steps, use_cache,
                                    lambda kept: run_oracle(spec, config, episodes, seed, max_steps,
                                                            progress, kept), resume, keep_dir)
        except OracleUnavailable as exc:
            result.oracle = ReturnStats("oracle", status="unavailable", message=str(exc))
    if "model" in policies:
        if source is None:
            raise ValueError("evaluating the model needs its source")
        if skip_model_on_tie and result.references_tie:
            return result
        result.model = run_model(spec, source, config, episodes, seed, max_steps, decision_timeout_s,
                                 compile, progress)
    return result
