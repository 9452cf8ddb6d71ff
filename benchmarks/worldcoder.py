"""The WorldCoder agent per level: cost to first and to reliable success, with and without the
optimism objective and curriculum transfer.

For each variant (optimism on/off x transfer on/off, or those chosen with ``--variants``) the
agent plays the curriculum of levels in order and the script prints, per level: episodes,
successes, environment steps, LLM calls and tokens until the first success and until reliable
success (``--reliable`` successes in a row), or ``-`` where it was not reached within the budget.
Results go to ``benchmarks/results/worldcoder*.json`` and ``.md``; each variant's run directory
(every prompt, completion, program and its check) to ``--runs``.

    python benchmarks/worldcoder.py --llm local --levels minigrid:empty sokoban:corridor \\
        --variants optimism+transfer --max-llm-calls 4 --max-env-steps 60 --reliable 3
    python benchmarks/worldcoder.py --llm reference   # the hand-written model: the ceiling

``--llm reference`` answers every call with codeworld's hand-written model for the level's family
(it costs no tokens): it checks the pipeline end to end and shows the ceiling.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from codeworld.agent.config import AgentConfig
from codeworld.agent.envs import make_object_env
from codeworld.agent.loop import WorldCoderAgent, summary_row
from codeworld.agent.reference import MINIGRID_MODEL, SOKOBAN_MODEL
from codeworld.synthesis.config import SamplingConfig

VARIANTS = {
    "optimism+transfer": {"optimism": True, "transfer": True},
    "optimism": {"optimism": True, "transfer": False},
    "transfer": {"optimism": False, "transfer": True},
    "neither": {"optimism": False, "transfer": False},
}
DEFAULT_LEVELS = ["minigrid:empty", "minigrid:doorkey", "sokoban:corridor", "sokoban:turn"]


class ReferenceLLM:
    """Answers with the hand-written model of the family named in the prompt (no tokens)."""

    def complete(self, messages, **sampling):
        from codeworld.synthesis.fakes import FakeCompletion

        text = messages[-1]["content"]
        program = SOKOBAN_MODEL if "Sokoban" in text else MINIGRID_MODEL
        return FakeCompletion(f"```python\n{program}```\n")


def run_variant(name: str, llm, levels: list[str], base: AgentConfig, runs: Path | None,
                seeds: list[int], report=None) -> list[dict]:
    """Play the curriculum once with one variant's settings; ``report(row)`` after each level."""
    config = replace(base, **VARIANTS[name])
    envs = [make_object_env(level) for level in levels]
    run_dir = runs / name if runs is not None else None
    rows = []
    with WorldCoderAgent(llm, config, run_dir=run_dir) as agent:
        for env in envs:
            started = time.perf_counter()
            try:
                result = agent.run_level(env, seeds)
                row = summary_row(result)
            except Exception as exc:  # noqa: BLE001 - a failed level is a result too
                row = {"level": env.name, "error": f"{type(exc).__name__}: {exc}",
                       "wall_seconds": round(time.perf_counter() - started, 1)}
            row["variant"] = name
            rows.append(row)
            print(format_row(row), flush=True)
            if report is not None:
                report(row)
    return rows


def _milestone(m: dict | None, key: str) -> str:
    return "-" if not m else f"{m[key]:,}"


def format_row(row: dict) -> str:
    if "error" in row:
        return f"| {row['variant']} | {row['level']} | error: {row['error']} |"
    first, reliable = row["first_success"], row["reliable_success"]
    return (f"| {row['variant']} | {row['level']} | {row['episodes']} | {row['successes']} | "
            f"{row['env_steps']} | {row['llm_calls']} | {row['tokens']:,} | "
            f"{_milestone(first, 'env_steps')} | {_milestone(first, 'llm_calls')} | "
            f"{_milestone(first, 'tokens')} | {_milestone(reliable, 'env_steps')} | "
            f"{_milestone(reliable, 'llm_calls')} | {_milestone(reliable, 'tokens')} | "
            f"{row['wall_seconds']:.0f} |")


HEADER = ("| variant | level | episodes | successes | env steps | LLM calls | tokens | "
          "first success: steps | calls | tokens | reliable: steps | calls | tokens | wall s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    from codeworld.llm import add_llm_arguments, llm_from_args

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=DEFAULT_LEVELS, metavar="FAMILY:LEVEL")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--max-env-steps", type=int, default=200, help="per level (default 200)")
    parser.add_argument("--max-llm-calls", type=int, default=12, help="per level (default 12)")
    parser.add_argument("--rewrite-calls", type=int, default=3, help="per rewrite (default 3)")
    parser.add_argument("--reliable", type=int, default=10, help="successes in a row (default 10)")
    parser.add_argument("--max-episode-steps", type=int, default=40)
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--plan-max-nodes", type=int, default=5000, help="planner limit (default 5000)")
    parser.add_argument("--max-tokens", type=int, default=1200, help="completion length")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="episode seeds, cycled (MiniGrid layouts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/results/worldcoder", metavar="STEM",
                        help="writes STEM.json and STEM.md")
    parser.add_argument("--runs", default=None, metavar="DIR", help="run directories (default: none)")
    add_llm_arguments(parser)
    args = parser.parse_args(argv)

    llm = ReferenceLLM() if args.llm == "reference" else llm_from_args(args)
    base = AgentConfig(epsilon=args.epsilon, max_env_steps=args.max_env_steps,
                       max_llm_calls=args.max_llm_calls, rewrite_calls=args.rewrite_calls,
                       reliable_successes=args.reliable, max_episode_steps=args.max_episode_steps,
                       plan_max_nodes=args.plan_max_nodes,
                       sampling=SamplingConfig(temperature=args.temperature,
                                               max_tokens=args.max_tokens),
                       seed=args.seed)
    runs = Path(args.runs) if args.runs else None
    started = time.perf_counter()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/worldcoder.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "llm": args.llm, "levels": args.levels, "variants": args.variants,
            "config": asdict(base), "seeds": args.seeds, "python": platform.python_version(),
            "machine": platform.machine()}
    rows: list[dict] = []

    def save(row: dict | None = None) -> None:
        # Written after every level, so that an interrupted run keeps what it measured.
        if row is not None:
            rows.append(row)
        meta["wall_seconds"] = round(time.perf_counter() - started, 1)
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2,
                                                       default=str) + "\n")
        table = "\n".join([HEADER] + [format_row(r) for r in rows])
        note = ("\n\nThe LLM here is codeworld's hand-written model for the family, correct from the "
                "first call: the rows check the pipeline and give the ceiling. Optimism cannot "
                "matter with a correct model; transfer saves the one call of a level."
                if args.llm == "reference" else "")
        out.with_suffix(".md").write_text(
            f"Command: `{meta['command']}`\n\nLLM: {args.llm}{note}\n\n{table}\n")

    print(HEADER, flush=True)
    for variant in args.variants:
        run_variant(variant, llm, args.levels, base, runs, args.seeds, report=save)
    save()
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
