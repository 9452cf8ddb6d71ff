"""Running the jobs of a grid: one interface, a local process pool and Ray.

An executor runs a job function ``fn(job, workdir) -> dict`` (importable, module-level) on many
jobs and yields one record per job as each one ends. A job that raises, or whose process dies,
gives a *failed* record with its error; the other jobs go on. `run_grid` adds the results store:
it skips the jobs that already have a finished record and writes every new record atomically.

* `LocalExecutor` (the default): at most ``max_workers`` jobs at once, each in a fresh process
  started with ``spawn`` (the parent may hold threads), so that a job that crashes its
  interpreter, leaks memory or leaves threads behind takes nothing else with it.
* `RayExecutor`: the same jobs as Ray tasks, on the cluster at ``address`` (``"auto"`` for the one
  ``ray start`` runs on this machine, ``"ray://host:10001"`` for a remote one) or, without an
  address, on the Ray instance this process already started, else on a new local one. Ray is
  imported only here (``pip install 'codeworld[ray]'``).
"""

from __future__ import annotations

import datetime as _dt
import multiprocessing
import os
import socket
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any, Callable, Iterable, Iterator, Sequence

from codeworld.experiments._jobs import Job
from codeworld.experiments._store import FAILED, FINISHED, JobRecord, ResultsStore
from codeworld.registry import Registry

JobFunction = Callable[[Job, str], dict]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _record(job: Job, status: str, result: dict | None, error: str | None, trace: str | None,
            seconds: float) -> dict:
    return JobRecord(key=job.key, job=job.to_json(), host=socket.gethostname(), pid=os.getpid(),
                     status=status, result=result, error=error, traceback=trace, seconds=seconds,
                     finished_at=_now()).to_json()


def failure_record(job: Job, error: str, trace: str | None = None, seconds: float = 0.0) -> dict:
    """The record of a job that did not finish: its error, and the traceback when there is one
    (`JobRecord.to_json`)."""
    return _record(job, FAILED, None, error, trace, seconds)


def execute_job(fn: JobFunction, job: Job, workdir: str) -> dict:
    """Run ``fn(job, workdir)`` and wrap its result, or its exception, in a record (never raises)."""
    started = time.perf_counter()
    try:
        result = fn(job, workdir)
    except BaseException as exc:  # noqa: BLE001 - a job's failure is data, not a crash of the grid
        return failure_record(job, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                              time.perf_counter() - started)
    return _record(job, FINISHED, result, None, None, time.perf_counter() - started)


class Executor(ABC):
    """Runs a job function on many jobs (see the module docstring)."""

    name = "executor"

    @abstractmethod
    def run(self, fn: JobFunction, jobs: Sequence[Job], workdir: str) -> Iterator[tuple[Job, dict]]:
        """Yield ``(job, record)`` for every job, in the order they end; never raises for a job."""

    def close(self) -> None:
        """Release what the executor holds (processes, a Ray connection it opened)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _child(conn, fn: JobFunction, job: Job, workdir: str) -> None:
    from codeworld._signals import stop_as_interrupt

    try:
        with stop_as_interrupt():  # terminate() below: the job's run and server end cleanly
            conn.send(execute_job(fn, job, workdir))
    finally:
        conn.close()


class LocalExecutor(Executor):
    """At most ``max_workers`` jobs at once, each in its own fresh ``spawn`` process.

    Args:
        max_workers: jobs at once (default: the number of CPU cores).
    """

    name = "local"

    def __init__(self, max_workers: int | None = None):
        self.max_workers = max(1, max_workers or os.cpu_count() or 1)
        self._context = multiprocessing.get_context("spawn")

    def run(self, fn: JobFunction, jobs: Sequence[Job], workdir: str) -> Iterator[tuple[Job, dict]]:
        queue = list(jobs)
        running: dict[Any, tuple[Job, Any, Any, float]] = {}  # sentinel -> (job, process, conn, t0)
        try:
            while queue or running:
                while queue and len(running) < self.max_workers:
                    job = queue.pop(0)
                    receive, send = self._context.Pipe(duplex=False)
                    process = self._context.Process(target=_child, args=(send, fn, job, workdir),
                                                    name=f"codeworld-job-{job.key}"[:64], daemon=False)
                    process.start()
                    send.close()
                    running[process.sentinel] = (job, process, receive, time.perf_counter())
                ready = wait(list(running) + [entry[2] for entry in running.values()])
                for sentinel in list(running):
                    job, process, receive, started = running[sentinel]
                    if sentinel not in ready and receive not in ready:
                        continue
                    record = None
                    try:
                        if receive.poll():
                            record = receive.recv()
                    except (EOFError, OSError):  # the pipe closed without a record
                        record = None
                    process.join()  # it has sent its record, or its pipe closed: it is ending
                    receive.close()
                    del running[sentinel]
                    if record is None:
                        record = failure_record(
                            job, f"WorkerDied: the job's process ended with exit code {process.exitcode} "
                                 "before returning a result", None, time.perf_counter() - started)
                    yield job, record
        finally:
            for job, process, receive, _ in running.values():
                process.terminate()
                process.join(5)
                receive.close()


class RayExecutor(Executor):
    """Jobs as Ray tasks (see the module docstring for ``address``).

    Args:
        address: the cluster to connect to; None uses the Ray instance of this process or starts
            a local one.
        num_cpus: CPUs each job reserves on the cluster.
        init_kwargs: more arguments for ``ray.init`` when this executor calls it.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: float = 1.0,
                 init_kwargs: dict | None = None):
        self.address = address
        self.num_cpus = num_cpus
        self.init_kwargs = dict(init_kwargs or {})
        self._started = False

    def _ray(self):
        try:
            import ray
        except ImportError:
            raise RuntimeError("the Ray executor needs Ray: pip install 'codeworld[ray]'") from None
        if not ray.is_initialized():
            ray.init(address=self.address, **{"include_dashboard": False, **self.init_kwargs})
            self._started = True
        return ray

    def run(self, fn: JobFunction, jobs: Sequence[Job], workdir: str) -> Iterator[tuple[Job, dict]]:
        if not jobs:
            return
        ray = self._ray()
        task = ray.remote(num_cpus=self.num_cpus, max_retries=0)(execute_job)
        started = time.perf_counter()
        pending = {task.remote(fn, job, workdir): job for job in jobs}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    job = pending.pop(ref)
                    try:
                        record = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a dead worker or node fails one job
                        record = failure_record(job, f"{type(exc).__name__}: {exc}", None,
                                                time.perf_counter() - started)
                    yield job, record
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


# Each executor's factory takes `make_executor`'s settings and uses those that concern it.
EXECUTORS: Registry[Callable[..., Executor]] = Registry("executor", {
    "local": lambda *, workers=None, address=None: LocalExecutor(workers),
    "ray": lambda *, workers=None, address=None: RayExecutor(address),
})


def make_executor(name: str = "local", *, workers: int | None = None, address: str | None = None) -> Executor:
    """The executor called `name` (``"local"`` or ``"ray"``).

    Raises:
        KeyError: an unknown executor (the message names close matches and the known ones).
    """
    return EXECUTORS.get(name)(workers=workers, address=address)


@dataclass
class GridSummary:
    """What `run_grid` did.

    Attributes:
        finished: keys of the jobs that finished in this call.
        failed: keys of the jobs that failed in this call.
        skipped: keys of the jobs that already had a finished record.
        records: every job's record, new or old, in the order of the jobs given.
    """

    finished: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)


def run_grid(jobs: Iterable[Job], fn: JobFunction, store: ResultsStore, *,
             executor: Executor | None = None, workdir: str | os.PathLike | None = None,
             progress: Callable[[Job, dict], None] | None = None) -> GridSummary:
    """Run every job that has no finished record in `store`; write each new record as it ends.

    Args:
        jobs: the grid (duplicates, by key, run once).
        fn: the job function, ``fn(job, workdir) -> dict`` (module-level, so workers import it).
        store: where records are read and written.
        executor: how to run them (default: a `LocalExecutor`).
        workdir: a folder the jobs may write into (default: ``<store>/work``).
        progress: called with ``(job, record)`` after each new record is written.
    """
    unique: dict[str, Job] = {}
    for job in jobs:
        unique.setdefault(job.key, job)
    summary = GridSummary()
    todo = []
    for key, job in unique.items():
        if store.is_finished(job):
            summary.skipped.append(key)
        else:
            todo.append(job)
    workdir = str(workdir or store.root / "work")
    own = executor is None
    executor = executor or LocalExecutor()
    try:
        for job, record in executor.run(fn, todo, workdir):
            store.write(record)
            (summary.finished if record["status"] == FINISHED else summary.failed).append(job.key)
            if progress is not None:
                progress(job, record)
    finally:
        if own:
            executor.close()
    summary.records = [store.load(job) for job in unique.values()]
    return summary
