"""The demo's job (``codeworld demo``): GIF-MCTS on one environment with a small budget of LLM
calls, then the best program scored in both modes and planned with on the real environment, each
step's figures and failures in a `codeworld.reports._table.ResultTable`. The command parses its
flags, builds the LLM and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from codeworld._model_worker import PROGRAM_TIMEOUT_S
from codeworld.reports._table import ResultTable, add_planning, add_scores

if TYPE_CHECKING:
    from codeworld.envs.registry import EnvSpec
    from codeworld.synthesis._gif_mcts import GifMctsConfig
    from codeworld.synthesis.run import Run
    from codeworld.synthesis._runner import SynthesisResult

DEFAULT_ENV = "CartPole-v1"
DEFAULT_BUDGET = 12
# Sampling for the embedded 1.5B model: temperature 0.7 as in Qwen2.5's own generation defaults, and
# a cap on the answer (a CartPole program takes ~600 tokens) so that a rambling answer cannot eat
# minutes of the demo's time.
DEMO_SAMPLING = {"temperature": 0.7, "max_tokens": 1024}
# The search starts no new call after this many minutes, so that model setup, search, scoring and
# planning fit in 20 minutes on 2 busy cores.
DEFAULT_SEARCH_MINUTES = 13.0
DEFAULT_EPISODES = 10
DEFAULT_MAX_STEPS = 200


def demo_config(overrides: dict[str, str], parallel: int | None = None) -> GifMctsConfig:
    """The demo's GIF-MCTS config: its sampling, then `overrides` (``--set``, as text) and
    `parallel` (``--parallel``).

    Raises:
        ValueError, KeyError, TypeError: a bad override, with a message for the user.
    """
    from codeworld._overrides import config_with_overrides
    from codeworld.synthesis import GifMctsConfig, SamplingConfig

    overrides = dict(overrides)
    if parallel is not None:
        overrides["parallel"] = str(parallel)
    return config_with_overrides(GifMctsConfig(sampling=SamplingConfig(**DEMO_SAMPLING)), overrides)


def start_run(out: Path, spec: EnvSpec, config: GifMctsConfig, *, llm: str | None, switch_llm: bool,
              budget: int, seed: int) -> Run:
    """The demo's GIF-MCTS run in ``out``: a new one, or the one there to continue (with the
    LLM it was run with, unless `switch_llm`); `llm` None: the default one for a new run. The
    run's ``spec.llm`` is the LLM it runs with.

    Raises:
        ValueError: an unknown LLM backend; ``out`` is a file or a folder of other files, or a
            run with another LLM, or in use.
        OSError: ``out`` cannot be made.
    """
    from codeworld.llm._arguments import default_llm_spec
    from codeworld.llm.backends import resolve
    from codeworld.synthesis.config import FinishConfig
    from codeworld.synthesis.run import Run

    resolve(llm or default_llm_spec())  # an unknown backend, before any folder is made
    run = Run.start(out, "gif-mcts", config, finish=FinishConfig(), continue_existing=True,
                    switch_llm=switch_llm, env_id=spec.env_id, llm=llm or None,
                    budget=budget, seed=seed, mode="sound", buffer=None,
                    timeout_s=PROGRAM_TIMEOUT_S)
    if run.spec.llm is None:  # a new run given no --llm
        run.record(llm=default_llm_spec())
    return run


def score_step(spec: EnvSpec, result: SynthesisResult, table: ResultTable) -> None:
    """Both scoring modes of the best program on the held-out episodes (and the training ones),
    with floor, ceiling, strict and floor-normalised accuracy."""
    with table.measuring("scoring"):
        from codeworld.experiments._cwmb_job import score_program

        split = result.run_dir.spec.split if result.run_dir is not None else None
        add_scores(table, score_program(spec, result.best_program, timeout_s=2 * PROGRAM_TIMEOUT_S,
                                        split=split))


def plan_step(spec: EnvSpec, result: SynthesisResult, table: ResultTable, *, episodes: int, seed: int,
              max_steps: int) -> None:
    """Random, oracle and model-planner returns on the real environment; normalized return."""
    with table.measuring("planning"):
        from codeworld.planning import evaluate

        print(f"  planning: random, oracle and model, {episodes} episodes of at most "
              f"{max_steps} steps...", flush=True)
        ev = evaluate(spec, result.program_to_plan_with, episodes=episodes, seed=seed,
                      max_steps=max_steps)
        add_planning(table, ev, episodes=episodes, max_steps=max_steps)
