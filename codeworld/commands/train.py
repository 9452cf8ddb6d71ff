"""``codeworld train ENV MODEL.py``: train a policy inside a code world model, evaluate it on the real env.

The policy is trained with stable-baselines3 (the ``train`` extra) on the model as a vectorized
environment (`codeworld.planning.gym_env.CodeWorldVectorEnv`): every training transition is
predicted by the model, none comes from the real environment (episodes start from its resets, or
from the recorded episodes' first states for logged data). The trained policy then plays seeded
episodes of the real environment, beside a random policy on the same seeds.

Prints a summary, or with ``--json`` the record, which ``--out FILE`` also writes (even when the
run fails: the record then says where). Exit status: 0 on success, 1 when the model failed (it did
not load, or raised during training: the program's error and the training step are named), 2 for
a usage error (unknown environment, an algorithm that does not fit its actions, a missing extra).
Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codeworld.commands import spec_and_model
from codeworld.envs.arguments import ENV_HELP, add_env_arguments

EXIT_OK = 0
EXIT_MODEL_FAILED = 1
EXIT_USAGE = 2

INSTALL_HINT = "pip install 'codeworld[train]' (stable-baselines3 and a CPU build of torch)"


@dataclass(frozen=True)
class Algorithm:
    """An RL algorithm of stable-baselines3 that `train` offers.

    Attributes:
        name: the ``--algo`` name.
        class_name: its class in ``stable_baselines3``.
        discrete: whether it trains on discrete actions.
        continuous: whether it trains on continuous (box) actions.
    """

    name: str
    class_name: str
    discrete: bool
    continuous: bool

    @property
    def actions(self) -> str:
        return "discrete and continuous" if self.discrete and self.continuous else (
            "discrete" if self.discrete else "continuous")


ALGORITHMS = {a.name: a for a in (
    Algorithm("ppo", "PPO", discrete=True, continuous=True),
    Algorithm("dqn", "DQN", discrete=True, continuous=False),
    Algorithm("sac", "SAC", discrete=False, continuous=True),
)}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train", help="train a policy (stable-baselines3) inside a world model, evaluate it on the real env",
        epilog="algorithms: " + "; ".join(f"{a.name} ({a.actions} actions)" for a in ALGORITHMS.values())
               + f". Needs the train extra: {INSTALL_HINT}.")
    parser.add_argument("env", help=ENV_HELP.split(", or logged data")[0]
                        + " (the trained policy is evaluated on it)")
    parser.add_argument("model", help="path to the model program (.py)")
    add_env_arguments(parser, description=False)
    parser.add_argument("--algo", choices=list(ALGORITHMS), default="ppo", help="RL algorithm (default ppo)")
    parser.add_argument("--steps", type=int, default=100_000,
                        help="training transitions, all predicted by the model (default 100000)")
    parser.add_argument("--num-envs", type=int, default=8, help="copies of the model stepped together (default 8)")
    parser.add_argument("--episodes", type=int, default=10, help="seeded evaluation episodes (default 10)")
    parser.add_argument("--seed", type=int, default=0,
                        help="training seed; evaluation episode i resets with seed + i (default 0)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a keyword argument of the algorithm, e.g. --set learning_rate=0.001 "
                             "(values read as JSON, else as text; repeatable)")
    parser.add_argument("--no-compile", action="store_true", help="run the model on the Python path")
    parser.add_argument("--out", default=None, metavar="FILE.json", help="also write the record here")
    parser.add_argument("--save-policy", default=None, metavar="FILE.zip", help="save the trained policy")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.set_defaults(func=run)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"codeworld train: {message}".splitlines()[0], file=sys.stderr)
    return code


def _algorithm_kwargs(items: list[str], algo: Algorithm, n_envs: int, steps: int) -> dict[str, Any]:
    """The algorithm's keyword arguments: ``--set`` values over rollouts sized to short runs (PPO)."""
    from codeworld.envs.derive import parse_value
    from codeworld.overrides import parse_overrides

    given = {k: parse_value(v) for k, v in parse_overrides(items).items()}
    kwargs: dict[str, Any] = {}
    if algo.name == "ppo" and "n_steps" not in given:
        # SB3's 2048 steps per copy would make a short run one long rollout; keep 2048 otherwise.
        n_steps = int(min(2048, max(16, steps // max(1, n_envs) // 4)))
        kwargs["n_steps"] = n_steps
        if "batch_size" not in given:
            rollout = n_steps * n_envs
            kwargs["batch_size"] = 64 if rollout % 64 == 0 else rollout
    kwargs.update(given)
    return kwargs


def sb3_agent(class_name: str, venv, *, seed: int, **kwargs: Any):
    """A stable-baselines3 agent (``PPO``, ``DQN``, ...) with an MLP policy on the CPU that logs
    nowhere: SB3's default logger makes an empty ``SB3-<time>`` folder in the temp directory at
    every ``learn()``, and codeworld keeps its own records."""
    import stable_baselines3
    from stable_baselines3.common.logger import Logger

    agent = getattr(stable_baselines3, class_name)("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **kwargs)
    agent.set_logger(Logger(folder=None, output_formats=[]))
    return agent


def sb3_vec_env(env):
    """Wrap a same-step `CodeWorldVectorEnv` in stable-baselines3's ``VecEnv`` interface."""
    from stable_baselines3.common.vec_env import VecEnv

    class _Wrapped(VecEnv):
        def __init__(self, inner):
            self.inner = inner
            super().__init__(inner.num_envs, inner.single_observation_space, inner.single_action_space)
            self._actions = None

        def reset(self):
            seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
            obs, _ = self.inner.reset(seed=seed)
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions):
            self._actions = actions

        def step_wait(self):
            obs, rewards, terminated, truncated, infos = self.inner.step(self._actions)
            dones = terminated | truncated
            out = [{} for _ in range(self.num_envs)]
            if "_final_obs" in infos:
                for i in np.flatnonzero(infos["_final_obs"]):
                    out[i]["terminal_observation"] = infos["final_obs"][i]
                    out[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return obs, rewards.astype(np.float32), dones, out

        def close(self):
            self.inner.close()

        def get_attr(self, attr_name, indices=None):
            return [getattr(self.inner, attr_name)] * len(self._get_indices(indices))

        def set_attr(self, attr_name, value, indices=None):
            setattr(self.inner, attr_name, value)

        def env_method(self, method_name, *args, indices=None, **kwargs):
            return [getattr(self.inner, method_name)(*args, **kwargs)] * len(self._get_indices(indices))

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(self._get_indices(indices))

        def _get_indices(self, indices):
            if indices is None:
                return range(self.num_envs)
            return [indices] if isinstance(indices, int) else indices

    return _Wrapped(env)


def evaluate_policy_on_real_env(spec, predict, observation_space, action_space, *, episodes: int, seed: int,
                                max_steps: int) -> list[float]:
    """Undiscounted returns of ``predict(obs) -> action`` on the real env, episode i seeded seed + i.

    Observations and actions are translated when the policy sees the model's encoding (see
    `codeworld.planning.gym_env.model_spaces`) rather than the real spaces.
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


def _write(record: dict, path: str | None) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(record, indent=2) + "\n")


def run(args: argparse.Namespace) -> int:
    from codeworld.envs import UnknownEnvError
    from codeworld.model import ModelSourceError, check_model_source

    try:
        spec, source = spec_and_model(args)
    except (UnknownEnvError, ValueError) as exc:
        return _fail(str(exc))
    if not spec.simulator:
        return _fail(f"{spec.env_id} is logged data without a simulator: the trained policy is "
                     "evaluated on the real environment (name a Gymnasium id instead)")
    algo = ALGORITHMS[args.algo]
    if not (algo.discrete if spec.discrete else algo.continuous):
        kind = "discrete" if spec.discrete else "continuous"
        return _fail(f"{algo.name} trains on {algo.actions} actions and {spec.env_id} has {kind} ones")
    for flag, value in (("--steps", args.steps), ("--num-envs", args.num_envs), ("--episodes", args.episodes)):
        if value < 1:
            return _fail(f"{flag} must be at least 1")
    try:
        check_model_source(source)
    except ModelSourceError as exc:
        print(f"{args.model}: {exc}", file=sys.stderr)
        return EXIT_MODEL_FAILED
    try:
        import stable_baselines3
    except ImportError:
        return _fail(f"training needs stable-baselines3: {INSTALL_HINT}")
    try:
        kwargs = _algorithm_kwargs(args.set, algo, args.num_envs, args.steps)
    except ValueError as exc:
        return _fail(str(exc))

    import gymnasium as gym
    from gymnasium.vector import AutoresetMode

    from codeworld.planning.evaluate import UNLIMITED_ENV_MAX_STEPS, evaluate
    from codeworld.planning.gym_env import CodeWorldVectorEnv, WorldModelError

    import torch

    # Small MLP policies gain nothing from more threads, and torch's idle workers spin on the cores
    # the model's worker needs.
    torch.set_num_threads(1)
    began = time.monotonic()
    max_steps = spec.max_episode_steps or UNLIMITED_ENV_MAX_STEPS
    record: dict[str, Any] = {
        "env_id": spec.env_id, "model": str(args.model), "algo": algo.name, "steps": args.steps,
        "num_envs": args.num_envs, "seed": args.seed, "episodes": args.episodes,
        "max_episode_steps": max_steps, "algo_kwargs": kwargs,
        "stable_baselines3": stable_baselines3.__version__, "status": "running",
        "real_env_steps_in_training": 0,
    }
    try:
        vec = CodeWorldVectorEnv(spec, source, args.num_envs, compile=not args.no_compile,
                                 max_episode_steps=max_steps, autoreset_mode=AutoresetMode.SAME_STEP)
        if isinstance(vec.single_observation_space, gym.spaces.Tuple):  # SB3 has no tuple observations
            vec.close()
            vec = CodeWorldVectorEnv(spec, source, args.num_envs, compile=not args.no_compile,
                                     max_episode_steps=max_steps, autoreset_mode=AutoresetMode.SAME_STEP,
                                     encoded_spaces=True)
    except WorldModelError as exc:
        record.update(status=exc.result.status, message=exc.result.summary(), wall_seconds=time.monotonic() - began)
        _write(record, args.out)
        return _fail(f"{args.model}: the model did not load: {exc.result.summary()}", EXIT_MODEL_FAILED)
    record.update(compiled=vec.compiled, start_states=vec.start_source)
    venv = sb3_vec_env(vec)
    try:
        try:
            agent = sb3_agent(algo.class_name, venv, seed=args.seed, **kwargs)
        except (TypeError, ValueError) as exc:
            return _fail(f"{algo.name}: {exc}")
        train_began = time.monotonic()
        try:
            agent.learn(total_timesteps=args.steps)
        except WorldModelError as exc:
            where = f"training step {vec.model_steps}" + (f" (copy {exc.copy})" if exc.copy is not None else "")
            record.update(status=exc.result.status, message=exc.result.summary(), failed_at_step=vec.model_steps,
                          model_steps=vec.model_steps, wall_seconds=time.monotonic() - began)
            _write(record, args.out)
            return _fail(f"{args.model}: the model failed at {where}: {exc.result.summary()}", EXIT_MODEL_FAILED)
        train_seconds = time.monotonic() - train_began
        model_steps = vec.model_steps
    finally:
        venv.close()
    if args.save_policy:
        agent.save(args.save_policy)

    eval_began = time.monotonic()
    returns = evaluate_policy_on_real_env(
        spec, lambda obs: agent.predict(obs, deterministic=True)[0], vec.single_observation_space,
        vec.single_action_space, episodes=args.episodes, seed=args.seed, max_steps=max_steps)
    random = evaluate(spec, episodes=args.episodes, seed=args.seed, max_steps=max_steps,
                      policies=("random",)).random
    record.update(
        status="ok", return_real_env=float(np.mean(returns)), return_real_env_stderr=_stderr(returns),
        returns_real_env=returns, return_random=random.mean, model_steps=model_steps,
        train_seconds=train_seconds, model_steps_per_second=model_steps / max(train_seconds, 1e-9),
        eval_seconds=time.monotonic() - eval_began, wall_seconds=time.monotonic() - began)
    _write(record, args.out)
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        print(f"{spec.env_id}: {algo.name} trained for {model_steps} model steps ({args.num_envs} copies, "
              f"start states from {vec.start_source}), 0 real steps, {train_seconds:.1f} s")
        print(f"  on the real env ({args.episodes} episodes from seed {args.seed}): "
              f"{record['return_real_env']:.2f} +- {record['return_real_env_stderr']:.2f}   "
              f"random {random.mean:.2f}")
    return EXIT_OK
