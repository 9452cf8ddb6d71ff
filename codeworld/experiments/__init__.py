"""Experiments at scale: grids of synthesis-plus-evaluation jobs, their executors and results store.

A `Job` is one (environment, method, seed, LLM, budget) run; `run_grid` runs the jobs that have
no finished record in a `ResultsStore` on an `Executor` (a local process pool, or Ray) and writes
one JSON record per job atomically. `run_cwmb_job` is the job function of the CWMB benchmark:
synthesis, then scoring in both modes and planning.
"""

from codeworld.experiments._cwmb_job import CWMB_JOB_DEFAULTS, run_cwmb_job
from codeworld.experiments._executor import (
    EXECUTORS,
    Executor,
    GridSummary,
    LocalExecutor,
    RayExecutor,
    execute_job,
    failure_record,
    make_executor,
    run_grid,
)
from codeworld.experiments._jobs import Job, grid, split_method
from codeworld.experiments._store import FAILED, FINISHED, JobRecord, ResultsStore

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "Job",
    "JobRecord",
    "ResultsStore",
    "grid",
    "make_executor",
    "run_cwmb_job",
    "run_grid",
]
