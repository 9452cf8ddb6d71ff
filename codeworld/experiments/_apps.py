"""The APPS job: one problem solved by a synthesis run, judged on all its tests.

`run_apps_job` is the job function for `codeworld.experiments.run_grid`: the search sees only the
first half of a problem's tests (at least one; the world is `codeworld.worlds.apps._apps`); the
strict accuracy, the fraction of problems whose program passes every test, is judged on all of
them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from codeworld.experiments._jobs import Job
from codeworld.worlds.apps._apps import load_problems, run_tests, search_tests
from codeworld.worlds.registry import make_world

APPS_JOB_DEFAULTS: dict[str, Any] = {
    "problems": None,           # where the problems are (a folder or a file); required
    "search_fraction": 0.5,     # share of each problem's tests the search sees
    "timeout_s": 4.0,           # seconds per test
    "overrides": {},            # method config fields
    "sampling": {},             # sampling fields
}


def run_apps_job(job: Job, workdir: str) -> dict:
    """Solve one APPS problem (``job.env_id`` is ``apps/<problem id>``) and judge it on all tests."""
    from codeworld.experiments._cwmb_job import job_config
    from codeworld.llm import make_llm
    from codeworld.synthesis.run import Run

    options = {**APPS_JOB_DEFAULTS, **job.options}
    unknown = set(job.options) - set(APPS_JOB_DEFAULTS)
    if unknown or not options["problems"]:
        raise KeyError(f"APPS job options: unknown {sorted(unknown)} or no 'problems'")
    problem_id = job.env_id.split("/", 1)[-1]
    where = Path(options["problems"])
    if not where.is_absolute() and not where.exists():  # relative to the repository
        where = Path(__file__).resolve().parents[2] / where
    problems = {p.problem_id: p for p in load_problems(where)}
    problem = problems[problem_id]
    method, config = job_config(job, options)
    run = Run.start(Path(workdir) / "runs" / job.key, method, config, continue_existing=True,
                    llm=job.llm, budget=job.budget, seed=job.seed, job=job.to_json(),
                    extra={"problem": problem_id})
    tests = search_tests(problem, float(options["search_fraction"]))
    started = time.perf_counter()
    world = make_world("apps", problem, None, tests, timeout_s=float(options["timeout_s"]))
    with make_llm(job.llm, run_dir=str(run.run_dir.path)) as llm:
        result = run.execute(world, llm)
    run_dir = run.run_dir
    out: dict[str, Any] = {
        "problem_id": problem_id, "difficulty": problem.difficulty, "method": job.method,
        "n_tests": problem.n_tests, "search_tests": len(tests), "calls": result.accounting.calls,
        "history": [{"call": e["call"] + 1, "action": e["action"], "score": e["score"],
                     "best": e["best"]} for e in result.history],
        "accounting": result.accounting.to_json(), "run_dir": str(run_dir.path),
        "strict": False, "passed": 0.0, "search_score": None,
        "synthesis_seconds": time.perf_counter() - started,
    }
    if result.best_program is not None:
        final = run_tests(result.best_program, problem.inputs, problem.outputs, problem.fn_name,
                          float(options["timeout_s"]))
        out.update(strict=final.all_passed, passed=final.fraction,
                   search_score=0.0 if result.best_evaluation.buggy else result.best_evaluation.score)
    return out
