"""One owner for a synthesis run: start or resume it from its spec, run it, record where it stands.

Every way into a run (``codeworld synthesize``, ``codeworld demo``, the CWMB and APPS jobs, the
WorldCoder agent's rewrites) is *spec -> run -> format*: it builds a `Run` (`Run.start` for a
new run, `Run.resume` for one to continue from its ``run.json``), hands `Run.execute` a `World`
(prompts, evaluator, finish step) and an LLM, and formats the `SynthesisResult` it gets back.
`Run` is the only code that sets a run's status, and it reads back every switch it wrote: a
resumed run takes its method, config, budget, seed, split and finish steps from ``run.json``,
changed only where the caller says so (and then recorded).

The run directory's files are written by `RunDir` alone (see `codeworld.synthesis._run_dir`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from codeworld.synthesis.config import FinishConfig
from codeworld.synthesis.registry import Method, config_from_json, config_to_json, get_method
from codeworld._files import check_output
from codeworld.synthesis._run_dir import LOCK_FILE, RUN_FILE, RunDir, RunLock
from codeworld.synthesis._run_spec import RunSpec, RunStatus
from codeworld.synthesis._runner import SynthesisResult, synthesize
from codeworld.synthesis.types import ChatModel, MethodConfig, Search, World


def finish_to_json(finish: FinishConfig) -> dict:
    """The finish switches as ``run.json`` keeps them."""
    return {"compose": finish.compose, "fit_constants": finish.fit_constants,
            "speed_step": finish.speed_step, "floor": finish.floor}


def finish_from_json(data: dict | None) -> FinishConfig:
    """The `FinishConfig` a run recorded (its other fields at their defaults). A run from before
    the switches were recorded ran every step (they were on unless turned off)."""
    known = {f.name for f in dataclasses.fields(FinishConfig)}
    return FinishConfig(**{k: v for k, v in (data or {}).items() if k in known})


class Run:
    """A synthesis run: its directory, its spec, its method and config.

    Build one with `start` or `resume`; run it with `execute`.

    Attributes:
        run_dir: the run directory.
        spec: the run's `RunSpec` as ``run.json`` holds it now.
        method: the synthesis method (from the registry).
        config: the method's config.
    """

    def __init__(self, run_dir: RunDir, spec: RunSpec, method: Method, config: MethodConfig,
                 lock: RunLock | None = None):
        self.run_dir = run_dir
        self.spec = spec
        self.method = method
        self.config = config
        self._lock = lock
        # What `start` made in this session, for `setup_failed` to take back: the highest
        # folder it created, or "files" (only its run files); None for a resumed run.
        self._made: Path | str | None = None

    def release(self) -> None:
        """Let another process take the run directory (done by `execute` and `setup_failed`;
        the lock also goes with the process, however it ends)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __repr__(self) -> str:
        return f"Run({str(self.run_dir.path)!r}, {self.method.name}, {self.spec.status})"

    # ------------------------------------------------------------------ building

    @classmethod
    def start(cls, path: str | Path, method: str | Method, config: MethodConfig | None = None, *,
              finish: FinishConfig | None = None, continue_existing: bool = False,
              switch_llm: bool = False, **fields: Any) -> Run:
        """A new run in ``path``.

        Args:
            path: the run directory: a new folder, an empty one, or (with
                ``continue_existing``) a run directory; never a folder of other files.
            method: the synthesis method or its registry name.
            config: its config (default: the method's defaults).
            finish: the steps after the search the world has (compose, fit, speed; default
                all), recorded in ``run.json``.
            continue_existing: when ``path`` already holds a run, continue it (a job that is
                rerun) taking only the new budget and keeping its LLM (see `resume`); otherwise
                such a directory is refused.
            switch_llm: with ``continue_existing``, continue an existing run with ``llm`` even
                when it was run with another (see `resume`).
            **fields: the other `RunSpec` fields (env_id, llm, budget, seed, mode, ...).

        Raises:
            ValueError: ``path`` is a file, or a folder of other files, or already holds a run
                (without ``continue_existing``), or (with it) one run with another LLM.
            RunLockedError: another process holds the run directory (a ValueError).
        """
        run_dir = RunDir(path)
        if run_dir.exists() and continue_existing:
            return cls.resume(path, budget=fields.get("budget"), config=config,
                              llm=fields.get("llm"), switch_llm=switch_llm)
        if run_dir.path.exists() and not run_dir.path.is_dir():
            raise ValueError(f"{path} is a file: a run needs a new or empty folder (choose "
                             "another --out)")
        foreign = run_dir.foreign_files()
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise ValueError(f"{path} holds files that are not a run's ({shown}): a run needs a "
                             "new or empty folder (choose another --out)")
        made: Path | str = "files"  # or the highest folder this call creates
        for folder in (run_dir.path, *run_dir.path.parents):
            if folder.exists():
                break
            made = folder
        check_output(path, folder=True)  # a file above it: one line naming it
        lock = run_dir.acquire()
        if run_dir.exists() and run_dir.load_calls():
            lock.release()
            raise ValueError(f"{path} already holds a run: add --resume to continue it, or "
                             "choose another --out")
        method = get_method(method) if isinstance(method, str) else method
        config = config if config is not None else method.config_class()
        spec = RunSpec.new(method.name, config, finish=finish_to_json(finish or FinishConfig()),
                           status=RunStatus.NOT_STARTED, **fields)
        run_dir.init(spec)
        run = cls(run_dir, spec, method, config, lock)
        run._made = made
        return run

    @classmethod
    def resume(cls, path: str | Path, *, overrides: dict[str, str] | None = None,
               budget: int | None = None, llm: str | None = None, switch_llm: bool = False,
               finish_off: tuple[str, ...] = (), config: MethodConfig | None = None) -> Run:
        """The run in ``path``, to continue from its ``run.json``.

        A run finishes with the LLM it was run with: its ``llm`` (backend and model) and its
        config (sampling included) come from ``run.json``. Another LLM is taken only with
        ``switch_llm``; ``run.json`` then names the new one, and each call's record names the
        LLM that answered it.

        Args:
            path: the run directory.
            overrides: config fields to change (``--set`` syntax), recorded.
            budget: a new budget (None keeps the saved one).
            llm: the LLM spec of this session (None: the recorded one). One that differs from
                the recorded one is refused unless ``switch_llm``.
            switch_llm: take ``llm`` though the run was run with another (recorded).
            finish_off: finish steps to turn off from now on (``compose``, ``fit_constants``,
                ``speed_step``), recorded.
            config: the config of a run whose ``run.json`` records none (written by a version
                that did not record it), recorded; a recorded config is always the one used.

        Raises:
            ValueError: no run in ``path``; or one of its records is truncated or wrong
                (`RunRecordError`, naming the file); or another process holds it
                (`RunLockedError`); or ``llm`` is not the run's and ``switch_llm`` is not given.
            KeyError: the run's method is not registered here.
        """
        run_dir = RunDir(path)
        if not run_dir.exists():
            raise ValueError(f"no run to resume in {path} (no run.json)")
        lock = run_dir.acquire()
        try:
            run_dir.check()
            return cls._resumed(run_dir, lock, overrides, budget, llm, switch_llm, finish_off,
                                config)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _resumed(cls, run_dir: RunDir, lock: RunLock, overrides: dict[str, str] | None,
                 budget: int | None, llm: str | None, switch_llm: bool, finish_off: tuple[str, ...],
                 config: MethodConfig | None) -> Run:
        from codeworld._overrides import config_with_overrides

        spec = run_dir.spec
        if llm is not None and spec.llm is not None and llm != spec.llm and not switch_llm:
            raise ValueError(f"{run_dir.path} was run with the LLM {spec.llm}, not {llm}: "
                             "resume without --llm to keep it, or add --switch-llm to go on "
                             "with the other (each call records its LLM)")
        method = get_method(spec.method)
        if spec.config is not None or config is None:
            config = config_from_json(method.config_class, spec.config or {})
        if overrides:
            config = config_with_overrides(config, overrides)
        changes: dict[str, Any] = {"config": config_to_json(config)}
        if budget is not None:
            changes["budget"] = budget
        if llm is not None:
            changes["llm"] = llm
        if finish_off:
            changes["finish"] = {**finish_to_json(finish_from_json(spec.finish)),
                                 **{name: False for name in finish_off}}
        return cls(run_dir, run_dir.update_spec(**changes), method, config, lock)

    # ------------------------------------------------------------------ what was recorded

    @property
    def finish(self) -> FinishConfig:
        """The steps after the search, as ``run.json`` records them."""
        return finish_from_json(self.spec.finish)

    @property
    def budget(self) -> int:
        return int(self.spec.budget or 0)

    def record(self, **changes: Any) -> RunSpec:
        """Change fields of ``run.json`` (e.g. the split a world drew); returns the new spec."""
        self.spec = self.run_dir.update_spec(**changes)
        return self.spec

    def _status(self, status: RunStatus) -> None:
        self.spec = self.run_dir.set_status(status)

    def setup_failed(self) -> None:
        """This session could not set up its LLM or world (no call was made). A run started in
        this session is taken back (its folder, when `start` made it, else its run files), so a
        refused command leaves nothing on disk; a resumed run is kept, marked not started."""
        if self._made is None:
            self._status(RunStatus.NOT_STARTED)
            self.release()
            return
        path, made = self.run_dir.path, self._made
        self.release()
        if isinstance(made, Path):
            shutil.rmtree(path, ignore_errors=True)
            for folder in path.parents:  # the folders made above it, while empty (another run
                if not folder.is_relative_to(made):  # may have started in one meanwhile)
                    break
                with contextlib.suppress(OSError):
                    folder.rmdir()
        else:
            for name in (RUN_FILE, LOCK_FILE):
                (path / name).unlink(missing_ok=True)

    # ------------------------------------------------------------------ running

    def execute(self, world: World, llm: ChatModel | None, *,
                progress: Callable[[dict], None] | None = None,
                time_limit_s: float | None = None, search: Search | None = None) -> SynthesisResult:
        """Run the search (replaying saved calls), then the world's finish step.

        The status is ``running`` while it runs, then ``finished`` or ``stopped at the time
        limit``; ``interrupted`` when the LLM fails, the user presses Ctrl-C or a write fails
        (the exception is raised again; the run resumes from its saved calls).

        Args:
            world: prompts, evaluator and finish step.
            llm: the model (None when every needed call is saved).
            progress: called after each call with a small dict (see `synthesize`).
            time_limit_s: start no new call after this many seconds of this session.
            search: the search to drive (default: a fresh one of the run's method, config and
                seed; the WorldCoder agent passes one whose pool it has seeded).
        """
        self._status(RunStatus.RUNNING)
        self.run_dir.call_llm = self.spec.llm  # each new call's record names the LLM that answered
        started = time.perf_counter()
        try:
            result = synthesize(search or self.method.make(self.config, seed=self.spec.seed),
                                llm=llm, prompts=world.prompts, evaluator=world.evaluator,
                                budget=self.budget, run_dir=self.run_dir, seed=self.spec.seed,
                                sampling=getattr(self.config, "sampling", None),
                                progress=progress, time_limit_s=time_limit_s,
                                seeds=world.seeds)
            if world.finish is not None:  # also after a time limit: the fit has its own cap
                result.finish = world.finish(result, self.finish, self.run_dir)
        except BaseException:
            self._status(RunStatus.INTERRUPTED)
            self.release()
            raise
        result.accounting.wall_seconds = time.perf_counter() - started
        self._status(RunStatus.ended(result.accounting.stopped_by_time_limit))
        self.release()
        return result
