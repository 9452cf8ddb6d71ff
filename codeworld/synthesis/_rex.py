"""REx, the program search of WorldCoder, and zero-shot generation.

REx (Tang et al., arXiv 2405.17503) keeps a pool of programs. Each call draws, for every program,
``theta ~ Beta(1 + C*h, 1 + C*(1 - h) + N)`` (h its score, 0 for a buggy program; N how often it
has been refined), refines the program with the largest draw (*fix* when it is buggy, *improve*
otherwise) and adds the result to the pool. Refining a program raises its N at once, so a
parallel wave spreads over the pool. An empty pool is seeded by a generation from scratch.

A world's seed programs (the data model, the floor: `codeworld.synthesis.types.Seed`) enter the
pool before the first call; one that is a *start* is refined like any program, one that is not
is only a candidate for the best program. A pool with nothing to refine starts with a generation
from scratch.

Zero-shot asks for independent generations from scratch and keeps the best.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from codeworld.synthesis.config import AssistConfig, SamplingConfig
from codeworld.synthesis.types import (FIX, GENERATE, IMPROVE, Outcome, ProgramEvaluation, Request,
                                       Seed, made_no_progress, seed_call, with_no_progress_note)


@dataclass(frozen=True)
class RexConfig:
    """REx (WorldCoder's program search): Thompson sampling over a pool of programs to refine.

    Each call samples ``Beta(1 + C*h, 1 + C*(1 - h) + N)`` for every program in the pool (h its
    score, N how often it was refined), refines the program with the largest sample (fix if it is
    buggy, improve otherwise) and adds the result to the pool. An empty pool is seeded by a
    generation from scratch.

    Attributes:
        c: the constant C; REx paper: 5.
        parallel: programs refined at once per wave (each pick counts in N immediately).
        perfect_tolerance: the search stops once a program scores at least ``1 - tolerance``.
        sampling: sampling settings of every call.
        assist: scaffold, checks and repairs, error summaries (shared by every method).
        no_progress_note: an improve request of a program whose earlier improvements left its
            score where it was says so, and asks for a change of the rule still wrong (with
            ``assist.copies``, as GIF-MCTS does).
    """

    c: float = 5.0
    parallel: int = 1
    perfect_tolerance: float = 1e-6
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)
    no_progress_note: bool = True

    # What a saved config without these (older) fields was made with.
    ABSENT_IN_OLDER_RUNS: ClassVar[dict] = {"no_progress_note": False}

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")


@dataclass(frozen=True)
class ZeroShotConfig:
    """Independent generations from scratch; the best is kept.

    Attributes:
        parallel: generations issued at once per wave.
        stop_on_perfect: stop once a program scores at least ``1 - perfect_tolerance``.
        perfect_tolerance: see `stop_on_perfect`.
        sampling: sampling settings of every call.
        assist: scaffold, checks and repairs, error summaries (shared by every method).
    """

    parallel: int = 1
    stop_on_perfect: bool = True
    perfect_tolerance: float = 1e-6
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")



@dataclass
class PoolEntry:
    """One program in the pool (its id is the call that wrote it)."""

    call: int
    parent: int
    action: str
    program: str
    score: float
    buggy: bool
    feedback: str
    mispredicted: dict | None = None
    refined: int = 0
    duplicate: bool = False
    start: bool = True
    seed: str = ""

    def to_json(self) -> dict:
        return {"call": self.call, "parent": self.parent, "action": self.action,
                "score": self.score, "buggy": self.buggy, "refined": self.refined,
                **({"duplicate": True} if self.duplicate else {}),
                **({"seed": self.seed, "start": self.start} if self.seed else {})}


class _PoolSearch:
    """Shared bookkeeping of the pool-based searches."""

    method = ""

    def __init__(self, perfect_tolerance: float, parallel: int, seed: int):
        self.rng = np.random.default_rng(seed)
        self.pool: list[PoolEntry] = []
        self.calls = 0
        self.parallel = parallel
        self.perfect_tolerance = perfect_tolerance
        self.stopped_perfect = False
        self.trace: list[dict] = []

    @property
    def finished(self) -> bool:
        return self.stopped_perfect

    def apply(self, request: Request, outcome: Outcome) -> None:
        """Add the program a call wrote to the pool."""
        evaluation = outcome.evaluation
        buggy = bool(evaluation.buggy)
        score = 0.0 if buggy else float(evaluation.score)
        self.pool.append(PoolEntry(call=request.call, parent=request.parent, action=request.action,
                                   program=outcome.program if outcome.program is not None
                                   else request.program,
                                   score=score, buggy=buggy,
                                   feedback=evaluation.feedback,
                                   mispredicted=evaluation.mispredicted,
                                   duplicate=evaluation.report.get("duplicate_of") is not None))
        if self._stops_on_perfect() and not buggy and score >= 1.0 - self.perfect_tolerance:
            self.stopped_perfect = True

    def _stops_on_perfect(self) -> bool:
        return True

    def seed(self, k: int, seed: Seed, evaluation: ProgramEvaluation, start: bool) -> None:
        """Put the world's ``k``-th seed program in the pool before the first call."""
        if self.calls:
            raise ValueError("seeds come before the first call")
        buggy = bool(evaluation.buggy)
        score = 0.0 if buggy else float(evaluation.score)
        self.pool.append(PoolEntry(call=seed_call(k), parent=-1, action=seed.label,
                                   program=seed.program, score=score, buggy=buggy,
                                   feedback=evaluation.feedback,
                                   mispredicted=evaluation.mispredicted,
                                   start=bool(start) and not buggy, seed=seed.label))
        if not buggy and score >= 1.0 - self.perfect_tolerance:
            self.stopped_perfect = True

    def best(self) -> tuple[int, str, ProgramEvaluation] | None:
        """The highest-scoring healthy program (earliest on ties), else the first program."""
        if not self.pool:
            return None
        best = max(self.pool, key=lambda e: (not e.buggy, e.score, -e.call))
        return best.call, best.program, ProgramEvaluation(best.score, best.buggy, best.feedback,
                                                          best.mispredicted)

    def programs(self) -> list[dict]:
        """The programs written so far, method-neutral (see `Search.programs`); seeds of the
        pool that no call wrote (negative ids) are left out."""
        seeds = {e.call: e.seed for e in self.pool if e.seed}
        return [{"call": e.call, "parent_call": e.parent, "action": e.action, "score": e.score,
                 "buggy": e.buggy, **({"parent_seed": seeds[e.parent]} if e.parent in seeds else {})}
                for e in self.pool if e.call >= 0]

    def stalled(self, entry: PoolEntry) -> bool:
        """An improvement that left the score of the program it improved where it was."""
        parent = next((e for e in self.pool if e.call == entry.parent), None)
        return parent is not None and made_no_progress(entry.action, entry.buggy, entry.score,
                                                       parent.buggy, parent.score)

    def to_json(self) -> dict:
        return {"method": self.method, "calls": self.calls, "stopped_perfect": self.stopped_perfect,
                "no_progress": sum(1 for e in self.pool if self.stalled(e)),
                "pool": [e.to_json() for e in self.pool], "trace": self.trace}


class Rex(_PoolSearch):
    """REx: Thompson sampling over a pool of programs to refine.

    Args:
        config: the hyperparameters (C = 5 by default).
        seed: seeds the Beta draws.
    """

    method = "worldcoder"

    def __init__(self, config: RexConfig | None = None, seed: int = 0):
        self.config = config or RexConfig()
        super().__init__(self.config.perfect_tolerance, self.config.parallel, seed)

    def beta_parameters(self, entry: PoolEntry) -> tuple[float, float]:
        """``(alpha, beta)`` of the entry's Beta distribution: ``1 + C h``, ``1 + C (1 - h) + N``."""
        c = self.config.c
        return 1.0 + c * entry.score, 1.0 + c * (1.0 - entry.score) + entry.refined

    def propose(self, max_requests: int) -> list[Request]:
        """Thompson-sample up to ``max_requests`` programs to refine (generate if the pool is empty)."""
        requests = []
        for _ in range(min(max_requests, self.parallel)):
            if self.finished:
                break
            # a seed that is not a start is a candidate for the best program only
            refinable = [e for e in self.pool if e.start]
            if not refinable:
                request = Request(call=self.calls, action=GENERATE, parent=-1)
                draws: list[float] = []
            else:
                # a copy is not refined again while an original is in the pool
                pool = [e for e in refinable if not e.duplicate] or refinable
                params = [self.beta_parameters(e) for e in pool]
                draws = [float(self.rng.beta(a, b)) for a, b in params]
                entry = pool[int(np.argmax(draws))]
                entry.refined += 1
                request = Request(call=self.calls, action=FIX if entry.buggy else IMPROVE,
                                  parent=entry.call, program=entry.program,
                                  feedback=entry.feedback if entry.buggy else self._improve_feedback(entry),
                                  mispredicted=None if entry.buggy else entry.mispredicted)
            self.calls += 1
            self.trace.append({"call": request.call, "action": request.action,
                               "parent": request.parent, "draws": draws})
            requests.append(request)
        return requests

    def _improve_feedback(self, entry: PoolEntry) -> str:
        """The feedback of an improve request of `entry`: its own, and a note when earlier
        improvements of it made no progress."""
        if not (self.config.no_progress_note and self.config.assist.copies):
            return entry.feedback
        stalls = sum(1 for e in self.pool if e.parent == entry.call and self.stalled(e))
        return with_no_progress_note(entry.feedback, stalls, entry.score)


class ZeroShot(_PoolSearch):
    """Independent generations from scratch; the best is kept.

    Args:
        config: the settings.
        seed: unused by the search (sampling seeds come from the runner); kept for symmetry.
    """

    method = "zero-shot"

    def __init__(self, config: ZeroShotConfig | None = None, seed: int = 0):
        self.config = config or ZeroShotConfig()
        super().__init__(self.config.perfect_tolerance, self.config.parallel, seed)

    def _stops_on_perfect(self) -> bool:
        return self.config.stop_on_perfect

    def propose(self, max_requests: int) -> list[Request]:
        """Up to ``max_requests`` generations from scratch."""
        requests = []
        for _ in range(min(max_requests, self.parallel)):
            if self.finished:
                break
            requests.append(Request(call=self.calls, action=GENERATE, parent=-1))
            self.trace.append({"call": self.calls, "action": GENERATE, "parent": -1})
            self.calls += 1
        return requests
