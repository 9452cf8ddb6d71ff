"""Train a policy inside a code world model and evaluate it on the real environment.

The policy is trained with stable-baselines3 (the ``train`` extra) on the model as a vectorized
environment (`codeworld.planning._gym_env.CodeWorldVectorEnv`): every training transition is
predicted by the model, none comes from the real environment (episodes start from its resets, or
from the recorded episodes' first states for logged data). The trained policy then plays seeded
episodes of the real environment, beside a random policy on the same seeds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from codeworld.training._algorithms import ALGORITHMS, INSTALL_HINT, algorithm_kwargs
from codeworld.training._sb3 import sb3_agent, sb3_vec_env

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec


class ModelFailedError(RuntimeError):
    """The model did not load, or raised while the policy trained in it.

    Attributes:
        record: what the run got to, as `TrainResult.record` has it, with ``status`` (the
            program's failure), ``message`` and, for a failure in training, ``failed_at_step``.
    """

    def __init__(self, message: str, record: dict[str, Any]):
        super().__init__(message)
        self.record = record


@dataclass(frozen=True)
class TrainResult:
    """A policy trained inside a model and its returns on the real environment.

    Attributes:
        env_id: the environment.
        model: the model's name (its file on the command line).
        algo: the algorithm's name (`codeworld.training.ALGORITHMS`).
        steps: training transitions asked for.
        num_envs: copies of the model stepped together.
        seed: the training seed; evaluation episode i resets with ``seed + i``.
        episodes: evaluation episodes on the real environment.
        max_episode_steps: the time limit of an episode, in the model and on the real env.
        algo_kwargs: the algorithm's keyword arguments as used.
        stable_baselines3: its version.
        status: ``"ok"``.
        real_env_steps_in_training: always 0: every training transition came from the model.
        compiled: whether the model ran compiled.
        start_states: where training episodes started (env resets, or recorded first states).
        return_real_env: the mean undiscounted return on the real environment.
        return_real_env_stderr: its standard error.
        returns_real_env: each episode's return.
        return_random: a random policy's mean return on the same seeds.
        model_steps: transitions the model predicted in training.
        train_seconds: time spent training.
        model_steps_per_second: ``model_steps / train_seconds``.
        eval_seconds: time spent evaluating.
        wall_seconds: the whole run's time.
        policy: the trained stable-baselines3 agent (not in `record`).
    """

    env_id: str
    model: str
    algo: str
    steps: int
    num_envs: int
    seed: int
    episodes: int
    max_episode_steps: int
    algo_kwargs: dict[str, Any]
    stable_baselines3: str
    status: str
    real_env_steps_in_training: int
    compiled: bool
    start_states: str
    return_real_env: float
    return_real_env_stderr: float
    returns_real_env: list[float]
    return_random: float
    model_steps: int
    train_seconds: float
    model_steps_per_second: float
    eval_seconds: float
    wall_seconds: float
    policy: Any = field(default=None, repr=False, compare=False)

    def record(self) -> dict[str, Any]:
        """The result as JSON-ready data (what ``codeworld train --json`` prints), the policy left out."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "policy"}


def evaluate_policy_on_real_env(spec, predict, observation_space, action_space, *, episodes: int, seed: int,
                                max_steps: int) -> list[float]:
    """Undiscounted returns of ``predict(obs) -> action`` on the real env, episode i seeded seed + i.

    Observations and actions are translated when the policy sees the model's encoding (see
    `codeworld.planning._gym_env.model_spaces`) rather than the real spaces.
    """
    import gymnasium as gym

    env = spec.make()
    encoded_obs = observation_space != env.observation_space
    encoded_act = action_space != env.action_space
    returns = []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            total = 0.0
            for _ in range(max_steps):
                policy_obs = spec.encode_obs(obs) if encoded_obs else obs
                action = predict(policy_obs)
                if encoded_act:
                    action = spec.decode_action(np.asarray(action, dtype=np.float64).reshape(-1))
                elif isinstance(action_space, gym.spaces.Discrete):
                    action = int(np.asarray(action).reshape(-1)[0])
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                if terminated or truncated:
                    break
            returns.append(total)
    finally:
        env.close()
    return returns


def _stderr(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def train_policy(env: EnvSpec | str, source: str, *, algo: str = "ppo", steps: int = 100_000, num_envs: int = 8,
                 episodes: int = 10, seed: int = 0, algo_kwargs: Mapping[str, Any] | None = None,
                 compile: bool = True, model_name: str = "model",
                 save_policy: str | Path | None = None) -> TrainResult:
    """Train a policy inside the model `source` of `env`, then evaluate it on the real environment.

    Args:
        env: the environment (an id or a spec); it needs a simulator to evaluate on.
        source: the model program's text.
        algo: the algorithm's name (`ALGORITHMS`: ``ppo``, ``dqn``, ``sac``).
        steps: training transitions, all predicted by the model.
        num_envs: copies of the model stepped together.
        episodes: seeded evaluation episodes on the real environment.
        seed: the training seed; evaluation episode i resets with ``seed + i``.
        algo_kwargs: keyword arguments of the algorithm (over PPO's rollouts sized to short runs).
        compile: run the model compiled when it can be (else on the Python path).
        model_name: the model's name in the result and its messages.
        save_policy: where to save the trained policy (a ``.zip``), if anywhere.

    Raises:
        UnknownEnvError: an unknown environment id.
        KeyError: an unknown algorithm (close matches named).
        ModelSourceError: (a ValueError) `source` holds no world model.
        ValueError: logged data without a simulator, an algorithm that does not fit the actions,
            a count below 1, or keyword arguments the algorithm refuses (one-line messages).
        ImportError: stable-baselines3 is not installed (the ``train`` extra).
        ModelFailedError: the model did not load or raised during training (its record attached).
    """
    from codeworld.envs import resolve_env
    from codeworld._model import check_model_source

    spec = resolve_env(env)
    if not spec.simulator:
        raise ValueError(f"{spec.env_id} is logged data without a simulator: the trained policy is "
                         "evaluated on the real environment (name a Gymnasium id instead)")
    algorithm = ALGORITHMS.get(algo)
    if not (algorithm.discrete if spec.discrete else algorithm.continuous):
        kind = "discrete" if spec.discrete else "continuous"
        raise ValueError(f"{algorithm.name} trains on {algorithm.actions} actions and {spec.env_id} has {kind} ones")
    for flag, value in (("--steps", steps), ("--num-envs", num_envs), ("--episodes", episodes)):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1")
    check_model_source(source)
    try:
        import stable_baselines3
    except ImportError:
        raise ImportError(f"training needs stable-baselines3: {INSTALL_HINT}") from None
    kwargs = algorithm_kwargs(algo_kwargs or {}, algorithm, num_envs, steps)

    import gymnasium as gym
    import torch
    from gymnasium.vector import AutoresetMode

    from codeworld.planning.evaluate import UNLIMITED_ENV_MAX_STEPS, evaluate
    from codeworld.planning._gym_env import CodeWorldVectorEnv, WorldModelError

    # Small MLP policies gain nothing from more threads, and torch's idle workers spin on the cores
    # the model's worker needs.
    torch.set_num_threads(1)
    began = time.monotonic()
    max_steps = spec.max_episode_steps or UNLIMITED_ENV_MAX_STEPS
    record: dict[str, Any] = {
        "env_id": spec.env_id, "model": model_name, "algo": algorithm.name, "steps": steps,
        "num_envs": num_envs, "seed": seed, "episodes": episodes,
        "max_episode_steps": max_steps, "algo_kwargs": kwargs,
        "stable_baselines3": stable_baselines3.__version__, "status": "running",
        "real_env_steps_in_training": 0,
    }
    try:
        vec = CodeWorldVectorEnv(spec, source, num_envs, compile=compile,
                                 max_episode_steps=max_steps, autoreset_mode=AutoresetMode.SAME_STEP)
        if isinstance(vec.single_observation_space, gym.spaces.Tuple):  # SB3 has no tuple observations
            vec.close()
            vec = CodeWorldVectorEnv(spec, source, num_envs, compile=compile,
                                     max_episode_steps=max_steps, autoreset_mode=AutoresetMode.SAME_STEP,
                                     encoded_spaces=True)
    except WorldModelError as exc:
        record.update(status=exc.result.status, message=exc.result.summary(), wall_seconds=time.monotonic() - began)
        raise ModelFailedError(f"the model did not load: {exc.result.summary()}", record) from None
    record.update(compiled=vec.compiled, start_states=vec.start_source)
    venv = sb3_vec_env(vec)
    try:
        try:
            agent = sb3_agent(algorithm.class_name, venv, seed=seed, **kwargs)
        except (TypeError, ValueError, AssertionError) as exc:  # SB3 checks some with assert
            raise ValueError(f"{algorithm.name}: {exc}") from None
        train_began = time.monotonic()
        try:
            agent.learn(total_timesteps=steps)
        except WorldModelError as exc:
            where = f"training step {vec.model_steps}" + (f" (copy {exc.copy})" if exc.copy is not None else "")
            record.update(status=exc.result.status, message=exc.result.summary(), failed_at_step=vec.model_steps,
                          model_steps=vec.model_steps, wall_seconds=time.monotonic() - began)
            raise ModelFailedError(f"the model failed at {where}: {exc.result.summary()}", record) from None
        train_seconds = time.monotonic() - train_began
        model_steps = vec.model_steps
    finally:
        venv.close()
    if save_policy:  # as SB3 names it (a .zip added), written whole or not at all
        from codeworld._files import atomic_output

        target = Path(save_policy)
        target = target if target.suffix == ".zip" else target.with_name(target.name + ".zip")
        with atomic_output(target, suffix=".zip") as tmp:
            agent.save(tmp)

    eval_began = time.monotonic()
    returns = evaluate_policy_on_real_env(
        spec, lambda obs: agent.predict(obs, deterministic=True)[0], vec.single_observation_space,
        vec.single_action_space, episodes=episodes, seed=seed, max_steps=max_steps)
    random = evaluate(spec, episodes=episodes, seed=seed, max_steps=max_steps, policies=("random",)).random
    record.update(
        status="ok", return_real_env=float(np.mean(returns)), return_real_env_stderr=_stderr(returns),
        returns_real_env=returns, return_random=random.mean, model_steps=model_steps,
        train_seconds=train_seconds, model_steps_per_second=model_steps / max(train_seconds, 1e-9),
        eval_seconds=time.monotonic() - eval_began, wall_seconds=time.monotonic() - began)
    return TrainResult(**record, policy=agent)
