"""Inference speed, LLM versus code: an LLM used as the world model against a code world model.

On the same transitions of each environment (default CartPole-v1, HalfCheetah-v4, Humanoid-v4; the
committed buffers), two world models predict ``(next_state, reward, done)``:

* **the LLM**: the ``predict`` prompt (the environment's description and K example transitions
  from the buffer), one call per queried transition. Each queried transition has its own prompt,
  built from its own state and action, and its answer is compared with its own recorded outcome.
  (The paper's script, ``eval_inference_speed_llm.py``, filled its prompt template in place, so
  from the second transition on every call sent the first transition's prompt again while its
  answer was compared with another transition's truth; that is the flaw fixed here.) Sampling is
  greedy, the completion cache is off (every call is really made), and the time is the wall time
  of each call.
* **the code world model**: a program given with ``--cwm ENV=FILE``, run in the sandbox with one
  call per transition (its worker started and the program loaded beforehand, that time reported
  apart); without a program, the environment's true simulator set from each observation and
  stepped in this process (the exact code world model, `codeworld.envs.step_from_obs`).

Both are scored on the queried transitions with the sound rule of `codeworld.scoring` (the env's
tolerances, done = terminated): the strict accuracy (all of state, reward and done right) and the
per-component accuracies; an LLM answer that cannot be read counts as wrong everywhere. The ratio
is LLM seconds per transition over code seconds per transition, measured in the same run.

Beside each environment the table gives the paper's numbers (Dainese et al., NeurIPS 2024, arXiv
2405.15383, Table 8, `PAPER_TABLE8`): seconds for 10 transitions with GPT-4 Turbo as the world
model and with a code world model, on the paper's hardware and with its script (see above).

Usage::

    python benchmarks/inference_speed.py [--envs CartPole-v1,HalfCheetah-v4,Humanoid-v4]
        [--llm local] [--transitions 5] [--examples 3] [--cwm CartPole-v1=best_model.py] [--out FILE]
    python benchmarks/inference_speed.py --report-only    # the .md again from the JSON

Writes ``benchmarks/results/inference_speed.json`` and ``.md`` (or ``--out`` with those suffixes)
after every environment; ``--merge`` keeps the results of other environments already there, so that
a slow environment (Humanoid) can be measured in a command of its own.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ENVS = ("CartPole-v1", "HalfCheetah-v4", "Humanoid-v4")
# States longer than this (Humanoid's 376 numbers) get one example transition, so that the prompt
# and the answer fit the context window.
LARGE_STATE = 100
PAPER = "Dainese et al., NeurIPS 2024, arXiv 2405.15383, Table 8"
# Dainese et al., NeurIPS 2024, Table 8: seconds for 10 transitions, (GPT-4 Turbo as the world
# model, the code world model).
PAPER_TABLE8: dict[str, tuple[float, float]] = {
    "CartPole-v1": (2.2, 0.00005),
    "HalfCheetah-v4": (6.1, 0.0001),
    "Humanoid-v4": (146.7, 0.0001),
}


def pick_transitions(n_buffer: int, n_examples: int, n_queries: int, seed: int) -> tuple[list[int], list[int]]:
    """(example indices, query indices): disjoint, seeded, in buffer order."""
    if n_examples + n_queries > n_buffer:
        raise ValueError(f"the buffer has {n_buffer} transitions; {n_examples} examples and "
                         f"{n_queries} queries need more")
    order = np.random.default_rng(seed).permutation(n_buffer)
    return sorted(int(i) for i in order[:n_examples]), sorted(int(i) for i in order[n_examples:n_examples + n_queries])


def query_buffer(buffer, indices: list[int]):
    """The queried transitions as a buffer of their own (each row its own episode)."""
    from codeworld.envs._buffers import make_buffer

    idx = np.asarray(indices)
    return make_buffer(buffer.env_id, obs=buffer.obs[idx], actions=buffer.actions[idx],
                       rewards=buffer.rewards[idx], next_obs=buffer.next_obs[idx],
                       terminated=buffer.terminated[idx], truncated=buffer.truncated[idx],
                       episode_start=np.arange(len(idx)))


def predict_messages(description: str, examples, state: np.ndarray, action) -> list[dict]:
    """The ``predict`` prompt for one transition: its own state and action, the shared examples."""
    from codeworld.llm import format_value
    from codeworld.worlds.cwmb._cwmb import render_cwmb

    return render_cwmb("predict", description=description, examples=examples,
                  state=format_value(state), action=format_value(action))


def _action_value(spec, action: np.ndarray):
    return int(round(float(action[0]))) if spec.discrete else action


def accuracy(buffer, spec, next_states, rewards, dones, readable: np.ndarray) -> dict:
    """Sound-rule accuracies of predictions on `buffer`; unreadable rows are wrong everywhere."""
    from codeworld.scoring import SOUND, Predictions, compare_predictions

    n = len(buffer)
    ev = compare_predictions(buffer, spec, SOUND, Predictions(next_states, rewards, dones, n))
    ok = np.asarray(readable, dtype=bool)
    return {
        "strict": float(np.mean(ev.right & ok)),
        "state": float(np.mean(~ev.wrong_state & ok)),
        "reward": float(np.mean(~ev.wrong_reward & ok)),
        "done": float(np.mean(~ev.wrong_done & ok)),
        "score": float(np.mean(np.where(ok, ev.credit, 0.0))),
        "unreadable": int(n - ok.sum()),
    }


def run_llm(llm, spec, description: str, buffer, examples: list[int], queries, max_tokens: int) -> dict:
    """The LLM as the world model: one prompt and one call per queried transition."""
    from codeworld.llm._prompts import format_transitions, parse_prediction

    ex = format_transitions(buffer.obs[examples], [_action_value(spec, a) for a in buffer.actions[examples]],
                            buffer.next_obs[examples], buffer.rewards[examples], buffer.terminated[examples])
    n, d = queries.obs.shape
    next_states = np.full((n, d), np.nan)
    rewards = np.full(n, np.nan)
    dones = np.zeros(n, dtype=bool)
    readable = np.zeros(n, dtype=bool)
    seconds: list[float] = []
    tokens: list[int] = []
    prompt_tokens: list[int] = []
    errors: list[str] = []
    for i in range(n):
        messages = predict_messages(description, ex, queries.obs[i], _action_value(spec, queries.actions[i]))
        t0 = time.perf_counter()
        completion = llm.complete(messages, temperature=0.0, max_tokens=max_tokens)
        seconds.append(time.perf_counter() - t0)
        tokens.append(int(completion.completion_tokens or 0))
        prompt_tokens.append(int(completion.prompt_tokens or 0))
        try:
            state, reward, done = parse_prediction(completion.text)
        except ValueError as exc:
            errors.append(f"transition {i}: {exc}")
            continue
        if len(state) != d:
            errors.append(f"transition {i}: {len(state)} numbers for a {d}-number state")
            state = (state + [np.nan] * d)[:d]
        next_states[i], rewards[i], dones[i] = state, reward, done
        readable[i] = True  # a state of the wrong length is wrong, its reward and done may be right
        print(f"    LLM transition {i + 1}/{n}: {seconds[-1]:.1f} s, {tokens[-1]} tokens", flush=True)
    return {"seconds_per_transition": float(np.mean(seconds)), "seconds": seconds,
            "completion_tokens": tokens, "prompt_tokens": prompt_tokens,
            "accuracy": accuracy(queries, spec, next_states, rewards, dones, readable),
            "errors": errors[:10]}


def run_program(spec, source: str, queries) -> dict:
    """A code world model program in the sandbox, one call per queried transition."""
    from codeworld._model_worker import ModelWorker

    n, d = queries.obs.shape
    next_states = np.full((n, d), np.nan)
    rewards = np.full(n, np.nan)
    dones = np.zeros(n, dtype=bool)
    readable = np.zeros(n, dtype=bool)
    t0 = time.perf_counter()
    with ModelWorker(source, discrete=spec.discrete) as worker:
        worker.predict(queries.obs[:1], queries.actions[:1])  # start, load (and compile) first
        cold = time.perf_counter() - t0
        seconds = []
        for i in range(n):
            t1 = time.perf_counter()
            pred = worker.predict(queries.obs[i:i + 1], queries.actions[i:i + 1])
            seconds.append(time.perf_counter() - t1)
            if pred.n_predicted == 1:
                next_states[i], rewards[i], dones[i] = pred.next_states[0], pred.rewards[0], pred.dones[0]
                readable[i] = True
        compiled = bool(worker.info.get("compiled", False))
    return {"kind": "program (sandboxed, one call per transition)", "compiled": compiled,
            "seconds_per_transition": float(np.mean(seconds)), "cold_start_s": cold,
            "accuracy": accuracy(queries, spec, next_states, rewards, dones, readable)}


def run_simulator(spec, queries) -> dict:
    """The true simulator set from each observation: the exact code world model, in this process."""
    from codeworld.envs import make_env, step_from_obs

    n, d = queries.obs.shape
    next_states = np.empty((n, d))
    rewards = np.empty(n)
    dones = np.zeros(n, dtype=bool)
    env = make_env(spec.env_id)
    env.reset(seed=0)
    seconds = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            next_states[i], rewards[i], dones[i] = step_from_obs(env, spec.env_id, queries.obs[i],
                                                                 queries.actions[i])
            seconds.append(time.perf_counter() - t0)
    finally:
        env.close()
    return {"kind": "true simulator set from the observation (in process)",
            "seconds_per_transition": float(np.mean(seconds)),
            "accuracy": accuracy(queries, spec, next_states, rewards, dones, np.ones(n, bool))}


def markdown(results: dict) -> str:
    meta = results["meta"]
    lines = ["# Inference speed: LLM versus code world model", "",
             f"The LLM as the world model (the predict prompt with example transitions, 1 for "
             f"states over {LARGE_STATE} numbers; greedy, no cache, one call per transition) against "
             f"a code world model, on transitions of the committed buffers. Measured on "
             f"{meta['machine']}.", "",
             "| env | LLM | transitions | examples | LLM s/transition | code s/transition "
             "| ratio (LLM / code) | LLM strict acc. | code strict acc. | LLM tokens out (mean) "
             "| code world model | paper: GPT-4 Turbo s / 10 transitions | paper: code s / 10 transitions "
             "| paper: ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for env, r in results["envs"].items():
        llm, code = r["llm"], r["code"]
        paper = PAPER_TABLE8.get(env)
        published = (f"{paper[0]:g} | {paper[1]:g} | {paper[0] / paper[1]:.3g}" if paper else " |  | ")
        lines.append(f"| {env} | {r['llm_spec']} | {len(r['queries'])} | {len(r['examples'])} "
                     f"| {llm['seconds_per_transition']:.3g} | {code['seconds_per_transition']:.3g} "
                     f"| {r['ratio']:.3g} | {llm['accuracy']['strict']:.2f} "
                     f"| {code['accuracy']['strict']:.2f} | {np.mean(llm['completion_tokens']):.0f} "
                     f"| {code['kind']} | {published} |")
    lines += ["", "Accuracy: the sound rule of codeworld.scoring (the env's tolerances on every state "
              "dimension and the reward, done = terminated), each prediction against its own "
              "transition; an LLM answer that cannot be read counts as wrong. Per-call times are in "
              "the JSON file (a server that caches the shared prompt prefix answers later calls "
              "faster).", "",
              f"Paper: {PAPER}, seconds for 10 transitions as published, and their ratio: GPT-4 "
              "Turbo as the world model and the paper's code world models, on its own hardware and "
              "prompts, not comparable one to one with the LLM and machine measured here.", "",
              "Commands:", ""]
    for command in dict.fromkeys(r["command"] for r in results["envs"].values()):
        lines.append(f"    {command}")
    lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=",".join(DEFAULT_ENVS), help="comma list of env ids")
    parser.add_argument("--llm", default=os.environ.get("CODEWORLD_LLM", "local"),
                        help="LLM spec (default: the embedded local model)")
    parser.add_argument("--transitions", type=int, default=5, help="queried transitions per env (default 5)")
    parser.add_argument("--examples", type=int, default=3,
                        help="example transitions in every prompt (default 3; at most 1 for states "
                             f"of more than {LARGE_STATE} numbers)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the choice of transitions")
    parser.add_argument("--cwm", action="append", default=[], metavar="ENV=FILE",
                        help="a code world model program for ENV (default: the true simulator)")
    parser.add_argument("--context", type=int, default=16384,
                        help="context window of the embedded model (Humanoid's 376 numbers need ~16k)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "inference_speed.json"),
                        help="JSON output (a .md beside it)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other envs' results already in --out (run envs one at a time)")
    parser.add_argument("--report-only", action="store_true",
                        help="only write the markdown table again from the JSON in --out")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from codeworld.envs import get_spec
    from codeworld.envs._buffers import buffer_path, load_buffer
    from codeworld.envs._descriptions import describe
    from codeworld.llm import LLMConfig, make_llm
    from codeworld.llm._local import LocalOptions

    args = parse_args(argv)
    if args.report_only:
        out = Path(args.out)
        text = markdown(json.loads(out.read_text(encoding="utf-8")))
        out.with_suffix(".md").write_text(text, encoding="utf-8")
        print(text)
        return 0
    envs = [get_spec(e.strip()).env_id for e in args.envs.split(",") if e.strip()]
    programs = {}
    for item in args.cwm:
        env, sep, path = item.partition("=")
        if not sep:
            print(f"inference_speed: --cwm needs ENV=FILE, got {item!r}", file=sys.stderr)
            return 2
        programs[get_spec(env).env_id] = Path(path).read_text(encoding="utf-8")
    command = "python benchmarks/inference_speed.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    out = Path(args.out)
    results: dict = {"meta": {}, "envs": {}}
    if args.merge and out.is_file():
        results["envs"] = json.loads(out.read_text(encoding="utf-8")).get("envs", {})
    results["meta"]["machine"] = (f"{platform.machine()}, {os.cpu_count()} cores, "
                                  f"Python {platform.python_version()}")
    out.parent.mkdir(parents=True, exist_ok=True)
    options = LocalOptions(context=args.context) if args.llm == "local" else None
    config = LLMConfig(spec=args.llm, options=options, use_cache=False)
    with make_llm(config) as llm:
        for env in envs:
            spec = get_spec(env)
            buffer = load_buffer(buffer_path(env))
            n_examples = args.examples if spec.obs_dim <= LARGE_STATE else min(args.examples, 1)
            examples, queries = pick_transitions(len(buffer), n_examples, args.transitions, args.seed)
            batch = query_buffer(buffer, queries)
            print(f"{env}: {len(queries)} transitions, {len(examples)} examples per prompt", flush=True)
            max_tokens = 64 + 14 * spec.obs_dim
            llm_result = run_llm(llm, spec, describe(env), buffer, examples, batch, max_tokens)
            code = run_program(spec, programs[env], batch) if env in programs else run_simulator(spec, batch)
            ratio = llm_result["seconds_per_transition"] / code["seconds_per_transition"]
            results["envs"][env] = {
                "command": command, "llm_spec": args.llm, "seed": args.seed, "queries": queries,
                "examples": examples, "max_tokens": max_tokens, "llm": llm_result, "code": code,
                "ratio": ratio,
                "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
            print(f"  LLM {llm_result['seconds_per_transition']:.3g} s/transition "
                  f"(strict accuracy {llm_result['accuracy']['strict']:.2f}), code "
                  f"{code['seconds_per_transition']:.3g} s/transition "
                  f"(strict accuracy {code['accuracy']['strict']:.2f}): ratio {ratio:.3g}", flush=True)
            # written after every env, so that a long run keeps what it measured
            out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")
    print()
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
