"""Policy quality: a policy trained only inside a code world model, against one trained on the real env.

For each case, the same stable-baselines3 algorithm, hyperparameters, seed, number of copies and
number of training steps, trained on each source, then evaluated on the real env (10 seeded
episodes, deterministic actions) at checkpoints along the way:

* CartPole-v1, PPO: the model `codeworld demo` wrote (benchmarks/train_models/cartpole_demo.py),
  a true-physics model (tests/models/), and the real env;
* Pendulum-v1, SAC: a true-physics model and the real env;
* CliffWalking-v1, DQN: a true-rules model and the real env.

Training in a model uses no real step (episodes start from real resets); training on the real
env uses its steps. The ratio of the final returns (model over real) and the models' accuracy on
the env's buffer (sound score, strict fraction) are reported. Results go to
benchmarks/results/train/policy_quality.{json,md} and a plot of return against training steps,
policy_quality.png.

    .venv/bin/python benchmarks/train_policy_quality.py [--quick] [--cases cartpole,pendulum,cliffwalking]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = HERE / "train_models"  # the demo's model
TRUE_MODELS = HERE.parent / "tests" / "models"  # true-physics models, shared with the tests
OUT = HERE / "results" / "train"


@dataclass(frozen=True)
class Case:
    """One environment's comparison: the algorithm, its budget, and the models trained in."""

    name: str
    env_id: str
    algo: str
    steps: int
    checkpoints: int
    models: tuple[tuple[str, str], ...]  # (label, file in train_models/ or tests/models/)
    num_envs: int = 8
    kwargs: tuple[tuple[str, object], ...] = ()  # the algorithm's, the same for every source


# Hyperparameters: rl-baselines3-zoo's tuned ones for CartPole PPO (constant rates); SAC's defaults
# for Pendulum; DQN with a target update and exploration scaled to the short budget.
CASES = {
    "cartpole": Case("cartpole", "CartPole-v1", "ppo", 100_000, 10,
                     (("demo model", "cartpole_demo.py"), ("true model", "cartpole_functional.py")),
                     kwargs=(("n_steps", 32), ("batch_size", 256), ("gae_lambda", 0.8), ("gamma", 0.98),
                             ("n_epochs", 20), ("ent_coef", 0.0), ("learning_rate", 0.001))),
    "pendulum": Case("pendulum", "Pendulum-v1", "sac", 20_000, 5, (("true model", "pendulum_functional.py"),),
                     num_envs=4),
    "cliffwalking": Case("cliffwalking", "CliffWalking-v1", "dqn", 40_000, 4,
                         (("true model", "cliffwalking_functional.py"),),
                         kwargs=(("learning_starts", 1000), ("train_freq", 1), ("target_update_interval", 500),
                                 ("exploration_fraction", 0.5), ("exploration_final_eps", 0.05),
                                 ("learning_rate", 0.0005))),
}


def _score(env_id: str, source: str) -> dict:
    """The model's sound score and strict fraction on the env's buffer."""
    from codeworld.scoring import Scorer

    report = Scorer(env_id, None, references=False).score_source(source)
    return {"score": report.score, "strict": report.strict}


def _train_and_track(case: Case, source: str | None, seed: int) -> dict:
    """Train on the model (`source`) or on the real env (None); evaluate at each checkpoint."""
    from gymnasium.vector import AutoresetMode
    from gymnasium.wrappers import TimeLimit
    from stable_baselines3.common.env_util import make_vec_env

    from codeworld.training import ALGORITHMS, algorithm_kwargs, evaluate_policy_on_real_env
    from codeworld.training._sb3 import sb3_agent, sb3_vec_env
    from codeworld.envs import get_spec, make_env
    from codeworld.planning.evaluate import UNLIMITED_ENV_MAX_STEPS
    from codeworld.planning._gym_env import CodeWorldVectorEnv

    spec = get_spec(case.env_id)
    max_steps = spec.max_episode_steps or UNLIMITED_ENV_MAX_STEPS
    algo = ALGORITHMS[case.algo]
    # Without tuned values, one PPO rollout per checkpoint (steps * 4 makes `algorithm_kwargs` size it so).
    kwargs = algorithm_kwargs(dict(case.kwargs), algo, case.num_envs, 4 * (case.steps // case.checkpoints))
    vec = None
    if source is None:
        venv = make_vec_env(lambda: TimeLimit(make_env(spec.env_id).unwrapped, max_steps), n_envs=case.num_envs,
                            seed=seed)
        obs_space, act_space = venv.observation_space, venv.action_space
    else:
        vec = CodeWorldVectorEnv(spec, source, case.num_envs, max_episode_steps=max_steps,
                                 autoreset_mode=AutoresetMode.SAME_STEP)
        venv = sb3_vec_env(vec)
        obs_space, act_space = vec.single_observation_space, vec.single_action_space
    agent = sb3_agent(algo.class_name, venv, seed=seed, **kwargs)
    curve = []
    train_seconds = 0.0
    chunk = case.steps // case.checkpoints
    for k in range(1, case.checkpoints + 1):
        began = time.monotonic()
        agent.learn(total_timesteps=chunk, reset_num_timesteps=False)
        train_seconds += time.monotonic() - began
        returns = evaluate_policy_on_real_env(
            spec, lambda obs: agent.predict(obs, deterministic=True)[0], obs_space, act_space,
            episodes=10, seed=1000, max_steps=max_steps)
        curve.append({"steps": int(agent.num_timesteps), "return": float(np.mean(returns)),
                      "stderr": float(np.std(returns, ddof=1) / np.sqrt(len(returns)))})
        print(f"    {int(agent.num_timesteps):7d} steps: {curve[-1]['return']:9.2f}", flush=True)
    record = {"curve": curve, "final_return": curve[-1]["return"], "train_seconds": train_seconds,
              "training_steps": int(agent.num_timesteps),
              "real_env_steps_in_training": 0 if source is not None else int(agent.num_timesteps)}
    if vec is not None:
        record["model_steps"] = vec.model_steps
    venv.close()
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()

    import torch

    from codeworld.planning.evaluate import evaluate

    torch.set_num_threads(1)  # as codeworld train does: small policies, and the model's worker needs a core

    results = []
    for name in args.cases.split(","):
        case = CASES[name]
        if args.quick:
            case = Case(case.name, case.env_id, case.algo, case.steps // 10, case.checkpoints, case.models,
                        case.num_envs, case.kwargs)
        random = evaluate(case.env_id, episodes=10, seed=1000, policies=("random",)).random.mean
        entry = {"case": case.name, "env_id": case.env_id, "algo": case.algo, "steps": case.steps,
                 "algo_kwargs": dict(case.kwargs),
                 "num_envs": case.num_envs, "return_random": random, "sources": {}}
        for label, source_file in (*case.models, ("real env", None)):
            print(f"{case.env_id} {case.algo}: {label}", flush=True)
            path = None if source_file is None else (
                MODELS / source_file if (MODELS / source_file).is_file() else TRUE_MODELS / source_file)
            source = path.read_text() if path else None
            record = _train_and_track(case, source, args.seed)
            if source is not None:
                record["model_file"] = str(path.relative_to(HERE.parent))
                record["model_accuracy"] = _score(case.env_id, source)
            entry["sources"][label] = record
        real = entry["sources"]["real env"]["final_return"]
        for label, record in entry["sources"].items():
            span = real - random
            record["fraction_of_real"] = (record["final_return"] - random) / span if span else None
            # A ratio of returns reads only when both are positive (Pendulum's are costs).
            record["ratio_to_real"] = record["final_return"] / real if real > 0 and record["final_return"] > 0 else None
        results.append(entry)

    meta = {"machine": platform.processor() or platform.machine(), "cpus": len(os.sched_getaffinity(0)),
            "torch": torch.__version__, "torch_threads": torch.get_num_threads(), "seed": args.seed,
            "eval": "10 episodes seeded 1000..1009, deterministic actions",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    previous = out / "policy_quality.json"
    if previous.is_file():  # keep the cases not run this time (each with the date it ran)
        ran = {e["case"] for e in results}
        kept = [e for e in json.loads(previous.read_text())["results"] if e["case"] not in ran]
        for e in results:
            e["date"] = meta["date"]
        results = sorted(kept + results, key=lambda e: list(CASES).index(e["case"]))
    (out / "policy_quality.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    lines = ["# Policy quality: trained inside a model vs on the real env, evaluated on the real env", "",
             f"{meta['date']}, {meta['cpus']} CPUs, torch {meta['torch']}; seed {args.seed}; {meta['eval']}.",
             "`fraction of real` is (R - R_random) / (R_real - R_random); `ratio` is R / R_real (positive returns only).", "",
             "| env | algo | steps | trained in | model score (strict) | return on real env | ratio | "
             "fraction of real | real steps in training | train s |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for e in results:
        for label, r in e["sources"].items():
            acc = r.get("model_accuracy")
            acc_text = f"{acc['score']:.3f} ({acc['strict']:.3f})" if acc else "-"
            positive = r["final_return"] > 0 and e["sources"]["real env"]["final_return"] > 0
            ratio = f"{r['final_return'] / e['sources']['real env']['final_return']:.2f}" if positive else "-"
            frac = "-" if r["fraction_of_real"] is None else f"{r['fraction_of_real']:.2f}"
            lines.append(f"| {e['env_id']} | {e['algo']} | {r['training_steps']} | {label} | {acc_text} | "
                         f"{r['final_return']:.1f} | {ratio} | {frac} | {r['real_env_steps_in_training']} | "
                         f"{r['train_seconds']:.0f} |")
        lines.append(f"| {e['env_id']} | random | - | - | - | {e['return_random']:.1f} | | | | |")
    (out / "policy_quality.md").write_text("\n".join(lines) + "\n")
    try:
        _plot(results, out / "policy_quality.png")
    except ImportError as exc:
        print(f"no plot: {exc}")
    print("\n".join(lines))


def _plot(results: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.8), squeeze=False)
    for ax, e in zip(axes[0], results):
        for label, r in e["sources"].items():
            steps = [p["steps"] for p in r["curve"]]
            means = np.array([p["return"] for p in r["curve"]])
            errs = np.array([p["stderr"] for p in r["curve"]])
            ax.plot(steps, means, marker="o", label=label)
            ax.fill_between(steps, means - errs, means + errs, alpha=0.2)
        ax.axhline(e["return_random"], color="grey", linestyle=":", label="random")
        ax.set_title(f"{e['env_id']} ({e['algo'].upper()})")
        ax.set_xlabel("training steps")
        ax.set_ylabel("return on the real env")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
