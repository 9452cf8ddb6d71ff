"""The CWMB job: synthesize a world model for one environment, then score it and plan with it.

`run_cwmb_job(job, workdir)` is the job function the CWMB benchmark hands to an executor. It

1. runs the job's synthesis method (with its ablation variant, config overrides and sampling)
   for ``job.budget`` LLM calls into a resumable run directory ``<workdir>/runs/<job key>``;
   then fits the best program's constants and makes it fast (`codeworld.worlds.cwmb._finish`,
   unless the ``finish`` option turns them off);
2. scores the best program in both modes on the environment's committed buffer, and in the
   paper's mode on the paper's own buffer where it exists (with floor and ceiling each time);
3. plans with it on the real environment (random, oracle and model policies) for the
   normalized return, unless ``plan`` is off.

It returns a JSON-ready dict: the scores, the returns, the search's best score after each call
(for the score-against-calls plots), the accounting, where the run directory is, and the program
it planned with (so the job can be planned again without its run directory).

`replan_job(record, protocol)` plans a finished job's program again under a named protocol
(`codeworld.planning._protocol`), with the random and oracle returns of the reference table: a
grid run with cut-short planning gets the paper's protocol without a second search.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeworld.experiments._jobs import Job, split_method
from codeworld.experiments._outcomes import run_outcomes
from codeworld._model_worker import PROGRAM_TIMEOUT_S
from codeworld.planning.evaluate import DECISION_TIMEOUT_S

if TYPE_CHECKING:
    from codeworld.envs._buffer_format import EpisodeSplit, ReplayBuffer
    from codeworld.envs.registry import EnvSpec
    from codeworld.synthesis.config import FinishConfig
    from codeworld.synthesis.registry import Method
    from codeworld.synthesis.types import MethodConfig

# What a job does when its options do not say (planning follows the paper: 10 episodes).
CWMB_JOB_DEFAULTS: dict[str, Any] = {
    "mode": "sound",          # scoring mode used as the search signal
    "buffer": None,           # replay buffer of the search (None: the committed one)
    "timeout_s": PROGRAM_TIMEOUT_S,        # seconds one program may take over the buffer
    "heldout": None,          # share of episodes held out from the search (None: HELDOUT_FRACTION)
    "overrides": {},          # config fields, e.g. {"ucb_c": 0.2}
    "sampling": {},           # sampling fields, e.g. {"temperature": 0.7, "max_tokens": 1024}
    "plan": True,             # plan with the best program for the normalized return
    "episodes": 10,           # planning episodes per policy
    "max_steps": None,        # cap on steps per planning episode (None: the env's limit)
    "decision_timeout_s": DECISION_TIMEOUT_S,
    "planner": {},            # planner config fields over the env's default, e.g. {"support.mode": "nearest"}
    "finish": {},             # FinishConfig fields after the search, e.g. {"fit_constants": False}
}


def job_options(job: Job) -> dict[str, Any]:
    """The job's options over `CWMB_JOB_DEFAULTS`; unknown names raise ``KeyError``."""
    unknown = set(job.options) - set(CWMB_JOB_DEFAULTS)
    if unknown:
        raise KeyError(f"unknown CWMB job option(s) {sorted(unknown)} "
                       f"(known: {', '.join(CWMB_JOB_DEFAULTS)})")
    return {**CWMB_JOB_DEFAULTS, **job.options}


def finish_config(job: Job, options: dict[str, Any]) -> FinishConfig:
    """The job's `FinishConfig`: the ``finish`` option, then its method variant's ``finish.`` fields."""
    from codeworld.synthesis.config import FinishConfig

    fields = dict(options["finish"])
    fields.update({k.split(".", 1)[1]: v for k, v in split_method(job.method)[1].items()
                   if k.startswith("finish.")})
    return FinishConfig(**fields)


def job_config(job: Job, options: dict[str, Any]) -> tuple[Method, MethodConfig]:
    """(method, config) of a job: the registry's method, its ablation variant and overrides."""
    from codeworld.synthesis import get_method
    from codeworld._overrides import config_with_overrides

    base, variant = split_method(job.method)
    method = get_method(base)
    overrides: dict[str, Any] = {k: v for k, v in {**variant, **options["overrides"]}.items()
                                 if not k.startswith("finish.")}
    overrides.update({f"sampling.{k}": v for k, v in options["sampling"].items()})
    return method, config_with_overrides(method.config_class(), overrides)


def planner_config(spec: EnvSpec, options: dict[str, Any]):
    """The planner config a job plans with: its ``planner`` fields over the env's default config
    (None without them: `evaluate`'s default). Raises TypeError or ValueError on a bad field."""
    if not options.get("planner"):
        return None
    from codeworld._overrides import config_with_overrides
    from codeworld.planning._protocol import default_config

    return config_with_overrides(default_config(spec, options.get("max_steps")), options["planner"])


def score_program(env: EnvSpec | str, program: str, buffer: ReplayBuffer | str | Path | None = None,
                  timeout_s: float = PROGRAM_TIMEOUT_S,
                  split: EpisodeSplit | dict | None = None) -> dict:
    """Scores of a program in both modes, each with its floor, ceiling and floor-normalised score.

    ``"sound"`` and ``"paper"`` are on the held-out episodes of `split` (the whole buffer when
    `split` is None or holds nothing out; ``"heldout"`` says which), ``"training"`` has both modes
    on the training episodes, and ``"paper_on_paper_buffer"`` the paper's rule on the paper's own
    buffer where it exists (out of sample by construction).

    Args:
        env: the environment's `EnvSpec` or id.
        program: the model's source.
        buffer: the run's buffer (None: the environment's default one).
        timeout_s: wall-clock limit of one scoring pass.
        split: the run's `EpisodeSplit` or its JSON data.
    """
    from codeworld.envs import resolve_env
    from codeworld.envs._buffers import PAPER, EpisodeSplit, paper_buffer_path
    from codeworld.scoring import Scorer

    spec = resolve_env(env)
    whole = Scorer(spec, buffer, references=False).buffer
    if isinstance(split, dict):
        split = EpisodeSplit.from_json(split)
    train, held = split.parts(whole) if split is not None else (whole, None)
    scores: dict[str, Any] = {"heldout": held is not None, "training": {}}
    for mode in ("sound", "paper"):
        scores[mode] = Scorer(spec, held if held is not None else whole, mode=mode).score_source(
            program, timeout_s=timeout_s).summary()
        scores["training"][mode] = (scores[mode] if held is None else Scorer(
            spec, train, mode=mode).score_source(program, timeout_s=timeout_s).summary())
    scores["paper_on_paper_buffer"] = None
    if paper_buffer_path(spec).is_file():  # the paper released buffers for 16 of the 18 envs
        scores["paper_on_paper_buffer"] = Scorer(spec, PAPER, mode="paper").score_source(
            program, timeout_s=timeout_s).summary()
    return scores


def run_cwmb_job(job: Job, workdir: str) -> dict:
    """Synthesis, scoring and planning for one CWMB job (see the module docstring)."""
    from codeworld.envs import resolve_env
    from codeworld.llm import make_llm
    from codeworld.worlds.cwmb._cwmb import make_run_world
    from codeworld.synthesis.run import Run

    started = time.perf_counter()
    options = job_options(job)
    spec = resolve_env(job.env_id)
    method, config = job_config(job, options)
    run = Run.start(Path(workdir) / "runs" / job.key, method, config,
                    finish=finish_config(job, options), continue_existing=True,
                    variant=job.method, env_id=spec.env_id, llm=job.llm, budget=job.budget,
                    seed=job.seed, mode=options["mode"], buffer=options["buffer"],
                    timeout_s=options["timeout_s"], job=job.to_json())
    world = make_run_world(run, heldout_fraction=options["heldout"])
    with make_llm(job.llm, run_dir=str(run.run_dir.path)) as llm:
        result = run.execute(world, llm)
    run_dir, evaluator = run.run_dir, world.evaluator
    synthesis_seconds = time.perf_counter() - started
    acc = result.accounting
    out: dict[str, Any] = {
        "env_id": spec.env_id,
        "group": spec.action_kind,
        "method": job.method,
        "run_dir": str(run_dir.path),
        "calls": acc.calls,
        "history": [{"call": e["call"] + 1, "action": e["action"], "score": e["score"],
                     "buggy": e["buggy"], "best": e["best"]} for e in result.history],
        "accounting": acc.to_json(),
        "best_call": None if result.best_call is None else result.best_call + 1,
        "best_search_score": None,
        "scores": None,
        "planning": None,
        "synthesis_seconds": synthesis_seconds,
        "finish": result.finish.to_json(),
        "outcomes": run_outcomes(run_dir.path),
        "split": evaluator.split.to_json(),
        # improvements that left the score where it was (GIF-MCTS; None for other methods)
        "no_progress": result.search.to_json().get("no_progress"),
    }
    program = result.best_program
    if program is None:
        out["note"] = "the search wrote no program: accuracy 0, no planning"
        return out
    out["program"] = result.program_to_plan_with
    out["best_search_score"] = (0.0 if result.best_evaluation.buggy
                                else float(result.best_evaluation.score))
    out["scores"] = score_program(spec, program, options["buffer"], options["timeout_s"],
                                  split=evaluator.split)
    if options["plan"]:
        from codeworld.planning import evaluate

        t0 = time.perf_counter()
        evaluation = evaluate(spec, result.program_to_plan_with, planner_config(spec, options),
                              episodes=int(options["episodes"]),
                              seed=job.seed, max_steps=options["max_steps"],
                              decision_timeout_s=float(options["decision_timeout_s"]),
                              skip_model_on_tie=True)
        out["planning"] = {**evaluation.to_dict(), "seconds": time.perf_counter() - t0}
    return out


def job_program(record: dict, workdir: str | Path | None = None) -> str | None:
    """The program a finished job planned with: the record's copy, else the best program in its
    run directory (``<workdir>/runs/<key>``, or where the record says the run was), else None."""
    result = record.get("result") or {}
    if result.get("program"):
        return result["program"]
    from codeworld.synthesis._run_dir import BEST_MODEL_FILE

    places = [Path(workdir) / "runs" / record["key"]] if workdir is not None else []
    if result.get("run_dir"):
        places.append(Path(result["run_dir"]))
    for place in places:
        if (place / BEST_MODEL_FILE).is_file():
            return (place / BEST_MODEL_FILE).read_text(encoding="utf-8")
    return None


def floor_program(env: EnvSpec | str) -> str:
    """The do-nothing model as a program: state unchanged, a constant reward, never done. A
    planner given it finds every plan equal, so what it earns is the planner's own noise: the
    floor of a model's return, as the do-nothing model is the floor of its accuracy."""
    from codeworld.envs import resolve_env
    from codeworld.worlds.cwmb._scaffold import build_scaffold

    return build_scaffold(resolve_env(env)).skeleton()


def reference_entry(spec: EnvSpec, policy: str, protocol: str, seed: int,
                    config: object | None = None) -> dict | None:
    """The reference table's entry of `policy`'s returns under `protocol` for `seed`, or None.
    `config`: a registered planner's config (None: the env's default)."""
    from codeworld.planning import evaluate
    from codeworld.planning.evaluate import reference_key_of
    from codeworld.planning._protocol import find_reference

    probe = evaluate(spec, config=config, seed=seed, policies=(), protocol=protocol)
    return find_reference(reference_key_of(policy, probe))


def missing_references(spec: EnvSpec, protocol: str, seed: int,
                       config: object | None = None) -> list[str]:
    """The policies (``random``, ``oracle``) whose returns under `protocol` for `seed` the
    reference table does not hold (the oracle only where the env has one). `config`: a registered
    planner's config (None: the env's default)."""
    policies = ("random", "oracle") if spec.has_oracle else ("random",)
    return [p for p in policies if reference_entry(spec, p, protocol, seed, config) is None]


def replan_job(record: dict, protocol: str, workdir: str | Path | None = None,
               threads: int | None = None, seed: int | None = None,
               program: str | None = None) -> dict:
    """Plan a finished CWMB job's program again under the named `protocol`.

    The random and oracle returns must be in the reference table (``benchmarks/reference_returns.py``
    puts them there); where they are not, or the program is not found, nothing runs. The
    planner's config is the job's (its ``planner`` fields) under the protocol's step cap.

    Args:
        record: the job's finished record (`ResultsStore`).
        protocol: a name in `codeworld.planning._protocol.PROTOCOLS`.
        workdir: the grid's run directories, where the record holds no program.
        threads: the model's planner threads (None: the config's; plans do not depend on it).
        seed: the evaluation's seed (episode ``i`` resets with ``seed + i``; None: the job's
            seed). One seed for every job compares the programs on the same episodes, with one
            reference entry per env.

    Returns:
        ``{"status": "ok", "planning": ..., "seconds": ...}`` or ``{"status": "skipped",
        "message": ...}``; both with the protocol and the job's key.
    """
    from dataclasses import replace

    from codeworld.envs import resolve_env
    from codeworld.planning import evaluate
    from codeworld.planning._protocol import default_config, get_protocol

    chosen = get_protocol(protocol)
    job = Job.from_json(record["job"])
    seed = job.seed if seed is None else int(seed)
    out: dict[str, Any] = {"key": job.key, "protocol": chosen.name, "env_id": job.env_id,
                           "method": job.method, "seed": job.seed, "evaluation_seed": seed}
    spec = resolve_env(job.env_id)
    options = job_options(job)
    config = (planner_config(spec, {**options, "max_steps": chosen.max_steps})
              or default_config(spec, chosen.max_steps))
    if threads is not None and hasattr(config, "threads"):
        config = replace(config, threads=threads)
    program = job_program(record, workdir) if program is None else program
    if program is None:
        return {**out, "status": "skipped",
                "message": "no program: the record holds none and its run directory is not here"}
    missing = missing_references(spec, chosen.name, seed, config)
    if missing:
        return {**out, "status": "skipped",
                "message": f"no {' or '.join(missing)} return under protocol {chosen.name} for seed "
                           f"{seed} in the reference table (benchmarks/reference_returns.py "
                           f"--envs {job.env_id} --protocol {chosen.name})"}
    started = time.perf_counter()
    evaluation = evaluate(spec, program, config, seed=seed, protocol=chosen.name,
                          decision_timeout_s=float(options["decision_timeout_s"]),
                          skip_model_on_tie=True)
    return {**out, "status": "ok", "planning": evaluation.to_dict(),
            "seconds": time.perf_counter() - started}
