"""The driver of a synthesis run: asks the search what to do, does the calls, saves everything.

`synthesize` is the only place where a search meets the world: it turns each `Request` into chat
messages, gets a completion (from the run directory when the call was already made, otherwise
from the LLM), extracts the program, lets the evaluator repair its form (`Evaluator.prepare`:
mechanical repairs, saved in the run directory and never counted as LLM calls), scores it
(`Evaluator.evaluate`; then `Evaluator.refine` may replace a healthy program by one with its
constants fitted to the data, saved in ``fits/``), and hands the `Outcome` back to the search. The run directory is written after every call, so an interrupted run resumes by
calling `synthesize` again on the same directory with a fresh search: the search replays the
saved calls (same seed, same decisions), checks that each saved prompt is the one it would send
now, and continues with new calls where the saved ones end.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from codeworld.synthesis.config import SamplingConfig
from codeworld.synthesis._run_dir import RunDir
from codeworld.synthesis.types import (FIX, ChatModel, Evaluator, FinishRecord, Outcome, ProgramEvaluation,
                                       PromptBuilder, Request, Search, Seed, seed_call)

# The finish reason recorded for a call whose prompt did not fit the model's context window.
PROMPT_TOO_LONG = "prompt_too_long"
TOO_LONG_FEEDBACK = ("The request for this program was longer than the model's context window, "
                     "so no answer was asked for.")
NO_CODE_FEEDBACK = ("The answer contained no Python program to run: answer with the whole "
                    "corrected program in one ```python code block.")
# A call's k-th resample after a copy (`SamplingConfig.copy_resamples`) asks with the seed
# ``run seed + k * RESAMPLE_SEED_STRIDE`` (the backend adds the call's sample index), apart from
# every call's own seed.
RESAMPLE_SEED_STRIDE = 1_000_003


def normalized(program: str | None) -> str | None:
    """A program's form with comments, blank lines and layout left out (its AST), so that two
    programs equal up to those compare equal; None for one that does not parse."""
    import ast

    if program is None:
        return None
    try:
        return ast.dump(ast.parse(program))
    except (SyntaxError, ValueError):
        return None


def copy_feedback(of: str) -> str:
    """What a copy's record says: it changes nothing, so it tells nothing new."""
    return (f"This program is the same as {of}: it changes nothing, so it predicts what that "
            "one did. Change what that program gets wrong.")


class RunDivergedError(RuntimeError):
    """A resumed run would send a different prompt than the saved call it replays."""


@dataclass
class SearchAccounting:
    """What a run cost.

    Attributes:
        calls: LLM calls in the run so far (replayed ones included).
        new_calls: calls sent to the LLM in this session.
        replayed_calls: calls taken from the run directory in this session.
        cached_calls: new calls the LLM layer answered from its on-disk cache.
        prompt_tokens: prompt tokens over all the run's calls.
        completion_tokens: completion tokens over all the run's calls.
        llm_seconds: LLM latency over all the run's calls.
        eval_seconds: time spent scoring programs in this session.
        wall_seconds: wall time of this session.
        stopped_by_time_limit: the session ended at its time limit with budget left.
        repairs: mechanical repairs made to the programs (no LLM call; see
            `codeworld.synthesis._repairs`), replayed calls included.
        fits: programs replaced in the search by their constants fitted to the data (no LLM
            call; see `AssistConfig.fit_constants`), replayed calls included.
        duplicates: programs equal (up to comments and layout) to the skeleton the prompts
            start from, to a seed program or to a program of an earlier call: not scored
            again, and not expanded by the search (see `normalized`).
        resamples: answers that were copies and were asked again within their call
            (`SamplingConfig.copy_resamples`); their tokens and seconds are in the totals.
        new_programs: calls that wrote a program that is no copy and runs.
        buggy_programs: calls that wrote no program, or one that is no copy and fails (the
            three counts add up to the calls).
        too_long: calls whose prompt did not fit the model's context window: rejected by the
            server before any token was processed, recorded without a program (the call counts
            against the budget, so a search cannot ask the same thing without end).
    """

    calls: int = 0
    new_calls: int = 0
    replayed_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0
    eval_seconds: float = 0.0
    wall_seconds: float = 0.0
    stopped_by_time_limit: bool = False
    repairs: int = 0
    fits: int = 0
    duplicates: int = 0
    new_programs: int = 0
    buggy_programs: int = 0
    too_long: int = 0
    resamples: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict:
        return {**asdict(self), "tokens": self.tokens}


@dataclass
class SynthesisResult:
    """The end of a run.

    Attributes:
        best_call: the call that wrote the best program (None if no call was made).
        best_program: its source.
        best_evaluation: its evaluation.
        accounting: what the run cost.
        search: the search object, in its final state.
        run_dir: the run directory, if the run saved one.
        history: per call, in order: action, score, buggy, best score so far.
        finish: what the constant fit and the speed step did to the best program.
        fast_program: the best program's compiled port, when the speed step needed and kept one
            (it predicts the same on every transition of the buffer); plan with it.
        programs: ``(call, program, score)`` of every program that ran without a bug, the
            world's seeds first (`seed_call`), then in call order (the finish step composes
            from them).
        best_seed: the label of the seed program that is the best (``"data"``), if one is.
    """

    best_call: int | None
    best_program: str | None
    best_evaluation: ProgramEvaluation | None
    accounting: SearchAccounting
    search: Search
    run_dir: RunDir | None = None
    history: list[dict] = field(default_factory=list)
    finish: FinishRecord = field(default_factory=FinishRecord)
    fast_program: str | None = None
    programs: list[tuple[int, str, float]] = field(default_factory=list)
    best_seed: str | None = None

    @property
    def program_to_plan_with(self) -> str | None:
        """The kept compiled port of the best program, else the best program itself."""
        return self.fast_program or self.best_program


def _completion_record(completion: Any) -> dict:
    """The saved form of a completion (None: an empty one, for a call that got no answer)."""
    return {
        "text": str(getattr(completion, "text", "") or ""),
        "prompt_tokens": int(getattr(completion, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(completion, "completion_tokens", 0) or 0),
        "latency_s": float(getattr(completion, "latency_s", 0.0) or 0.0),
        "finish_reason": str(getattr(completion, "finish_reason", "") or ""),
        "model": str(getattr(completion, "model", "") or ""),
        "cached": bool(getattr(completion, "cached", False)),
    }


class _Calls:
    """Does the calls of one session of a run: each request's completion (from the run directory
    when saved, else from the LLM), its program, repairs, evaluation and fit, all recorded.

    Called from the search's waves, possibly on several threads at once (``lock`` guards the
    accounting and the table of programs seen).
    """

    def __init__(self, llm: ChatModel | None, prompts: PromptBuilder, evaluator: Evaluator,
                 run_dir: RunDir | None, seed: int, sampling: SamplingConfig,
                 deadline: float | None = None):
        self.llm, self.prompts, self.evaluator, self.run_dir = llm, prompts, evaluator, run_dir
        self.seed, self.sampling = seed, sampling
        self.deadline = deadline  # no resample after this `time.perf_counter()` time
        self.recorded = run_dir.load_calls() if run_dir is not None else {}
        self.accounting = SearchAccounting()
        self.lock = threading.Lock()
        # normalized program -> (call that wrote it, its evaluation); the skeleton as call None
        self.seen: dict[str, tuple[int | None, ProgramEvaluation | None]] = {}
        skeleton = normalized(evaluator.skeleton) if evaluator.detect_copies else None
        if skeleton is not None:
            self.seen[skeleton] = (None, None)

    def _count(self, **amounts: float) -> None:
        with self.lock:
            for name, amount in amounts.items():
                setattr(self.accounting, name, getattr(self.accounting, name) + amount)

    def _sampling(self, request: Request, resample: int = 0) -> dict:
        """The sampling arguments of a call's request (of its `resample`-th resample)."""
        kwargs: dict = {"temperature": self.sampling.temperature,
                        "max_tokens": self.sampling.max_tokens}
        if self.sampling.seed_per_call or resample:
            kwargs.update(seed=self.seed + resample * RESAMPLE_SEED_STRIDE, sample=request.call)
        return kwargs

    def _ask(self, messages: list[dict], kwargs: dict) -> dict:
        """One answer of the LLM, as a completion record."""
        from codeworld.llm.types import PromptTooLongError

        try:
            return _completion_record(self.llm.complete(messages, **kwargs))
        except PromptTooLongError as exc:
            return {**_completion_record(None), "finish_reason": PROMPT_TOO_LONG, "error": str(exc)}

    def _save_call(self, request: Request, messages: list[dict], kwargs: dict,
                   completion: dict) -> None:
        if self.run_dir is not None:
            self.run_dir.save_call(request.call, {"call": request.call, "request": request.to_json(),
                                                  "messages": messages, "sampling": kwargs,
                                                  "completion": completion})

    def completion(self, request: Request) -> tuple[dict, bool]:
        """The call's completion record, and whether it was replayed: replayed when saved (the
        prompt must be the same), else asked of the LLM and saved before anything else
        happens."""
        messages = self.prompts.messages(request)
        saved = self.recorded.get(request.call)
        if saved is not None:
            if saved["messages"] != messages:
                raise RunDivergedError(
                    f"call {request.call} ({request.action}) was saved with a different prompt; "
                    f"the run directory does not belong to this method, config, seed or env")
            self._count(replayed_calls=1)
            return saved["completion"], True
        if self.llm is None:
            raise RuntimeError(f"call {request.call} is not saved and no LLM was given")
        kwargs = self._sampling(request)
        completion = self._ask(messages, kwargs)
        self._save_call(request, messages, kwargs, completion)
        self._count(new_calls=1, cached_calls=int(completion["cached"]))
        return completion, False

    def _count_completion(self, completion: dict) -> None:
        """The call's totals: its answer's tokens and seconds, and those of the copies it asked
        again for."""
        resampled = completion.get("resampled") or []
        self._count(calls=1, too_long=int(completion["finish_reason"] == PROMPT_TOO_LONG),
                    resamples=len(resampled),
                    prompt_tokens=completion["prompt_tokens"]
                    + sum(r["prompt_tokens"] for r in resampled),
                    completion_tokens=completion["completion_tokens"]
                    + sum(r["completion_tokens"] for r in resampled),
                    llm_seconds=completion["latency_s"] + sum(r["latency_s"] for r in resampled))

    def _resample_copies(self, request: Request, completion: dict,
                         prepared: tuple) -> tuple[dict, tuple, dict]:
        """A new call's answer that is a copy (`copy_of`), asked again with another seed, at
        most ``sampling.copy_resamples`` times, while the session's time lasts (not at
        temperature 0): the first answer that is no copy, else the first answer; the record
        kept lists the other answers, each with its sampling and what it copied
        (``resampled``). Returns the record, its `_prepared` program and its sampling."""
        answers = [(completion, prepared, self._sampling(request))]
        copied = self.copy_of(prepared[1])[1]
        messages = self.prompts.messages(request) if copied is not None else []
        while copied is not None and len(answers) <= self.sampling.copy_resamples:
            if (self.llm is None or self.sampling.temperature == 0
                    or (self.deadline is not None and time.perf_counter() > self.deadline)):
                break
            kwargs = self._sampling(request, len(answers))
            answer = self._ask_again(messages, kwargs, answers[-1][0]["text"])
            if answer["finish_reason"] == PROMPT_TOO_LONG:
                break
            answers.append((answer, self._prepared(request, answer["text"]), kwargs))
            copied = self.copy_of(answers[-1][1][1])[1]
        if len(answers) == 1:
            return completion, prepared, answers[0][2]
        kept = answers[0] if copied is not None else answers[-1]
        resampled = [{**answer, "sampling": kwargs,
                      "copy_of": _copy_name(self.copy_of(program[1])[1][0])}
                     for answer, program, kwargs in answers if answer is not kept[0]]
        return {**kept[0], "resampled": resampled}, kept[1], kept[2]

    def _ask_again(self, messages: list[dict], kwargs: dict, copy: str) -> dict:
        """Another answer than `copy`: where the answer starts a line (its prefill, if any,
        ends one) and the copy starts with code, one whose first line is other code
        (`codeworld.llm._other_line`; the record says which line it avoided and how many it
        sampled); else the request asked again as it is."""
        from codeworld.llm._other_line import (LINE_TRIES, code_of, complete_with_other_line,
                                               first_line)
        from codeworld.llm.types import PromptTooLongError, prefill_of

        prefill, avoid = prefill_of(messages), first_line(copy)
        if (prefill and not prefill.endswith("\n")) or not code_of(avoid):
            return self._ask(messages, kwargs)
        seeds = [kwargs["seed"] + 1 + t for t in range(LINE_TRIES)]
        try:
            answer, note = complete_with_other_line(self.llm, messages, avoid, tries=LINE_TRIES,
                                                    line_seeds=seeds, **kwargs)
        except PromptTooLongError as exc:
            return {**_completion_record(None), "finish_reason": PROMPT_TOO_LONG, "error": str(exc)}
        return {**_completion_record(answer), **note}

    def _prepared(self, request: Request, text: str) -> tuple[str | None, str | None, list]:
        """The program of a completion as written, after the evaluator's mechanical repairs,
        and the repairs (not recorded yet)."""
        program = self.prompts.program(request, text)
        if program is None:
            return None, None, []
        repaired, repairs = self.evaluator.prepare(program, request.program)
        return program, repaired, repairs

    def _keep_repairs(self, request: Request, prepared: tuple) -> str | None:
        """The repaired program of `_prepared`, its repairs counted and recorded."""
        program, repaired, repairs = prepared
        if repairs:
            self._count(repairs=len(repairs))
            if self.run_dir is not None:
                self.run_dir.save_repairs(request.call, program, repaired, repairs)
        return repaired

    def remember(self, program: str, label: str, evaluation: ProgramEvaluation) -> None:
        """A seed program (`Seed`): an answer equal to it is a copy of it (the skeleton, as the
        floor seed, keeps its name)."""
        key = normalized(program) if self.evaluator.detect_copies else None
        if key is not None:
            with self.lock:
                self.seen[key] = (None if key in self.seen and self.seen[key][0] is None
                                  else label, evaluation)

    def copy_of(self, program: str | None) -> tuple[str | None, tuple | None]:
        """The program's normalized form and the earlier program it copies, if any."""
        key = normalized(program) if self.evaluator.detect_copies else None
        with self.lock:
            return key, (self.seen.get(key) if key is not None else None)

    def score(self, request: Request, program: str | None,
              too_long: str | None = None) -> tuple[str | None, ProgramEvaluation]:
        """Score a new program (then refine it: a fit replaces it when better); ``too_long``:
        the server's words when the call's prompt did not fit the context (no program)."""
        t0 = time.perf_counter()
        if too_long is not None:
            # the request is kept as it was: a fix of it sees the program and error it was given
            feedback = request.feedback or TOO_LONG_FEEDBACK
            evaluation = ProgramEvaluation(0.0, True, feedback, None,
                                           {"status": PROMPT_TOO_LONG, "message": too_long})
        elif program is None:
            # The next fix sees the program it was given again, with its error if it had one.
            feedback = NO_CODE_FEEDBACK
            if request.action == FIX and request.feedback:
                feedback = f"{request.feedback}\n\n(The last answer had no program.) {feedback}"
            evaluation = ProgramEvaluation(0.0, True, feedback, None, {"status": "no_code"})
        else:
            evaluation = self.evaluator.evaluate(program)
            refined = self.evaluator.refine(program, evaluation)
            if refined is not None:  # constants fitted to the data: not an LLM call
                fitted, evaluation, fit = refined
                self._count(fits=1)
                if self.run_dir is not None:
                    self.run_dir.save_fit(request.call, program, fitted, fit)
                program = fitted
        self._count(eval_seconds=time.perf_counter() - t0)
        return program, evaluation

    def __call__(self, request: Request) -> Outcome:
        completion, replayed = self.completion(request)
        too_long = (completion.get("error") or "prompt too long"
                    if completion["finish_reason"] == PROMPT_TOO_LONG else None)
        prepared = (None, None, []) if too_long else self._prepared(request, completion["text"])
        if not replayed and not too_long and self.sampling.copy_resamples:
            answer, prepared, kwargs = self._resample_copies(request, completion, prepared)
            if answer is not completion:  # the record says which copies were asked again
                completion = answer
                self._save_call(request, self.prompts.messages(request), kwargs, completion)
        self._count_completion(completion)
        program = self._keep_repairs(request, prepared)
        run_dir = self.run_dir
        fitted = run_dir.fitted_program(request.call, program) if run_dir else None
        evaluation = run_dir.load_evaluation(request.call, fitted or program) if run_dir else None
        if evaluation is not None and fitted is not None:
            program = fitted
            self._count(fits=1)
        key, copied = self.copy_of(program)
        if evaluation is None and copied is not None and copied[1] is not None:
            # a copy of an earlier program (or of the skeleton again, or of a seed): its
            # evaluation, not a new scoring pass
            call, earlier = copied
            evaluation = ProgramEvaluation(
                earlier.score, earlier.buggy,
                earlier.feedback if call is None else copy_feedback(
                    f"the {call} program" if isinstance(call, str) else f"the program of call {call + 1}"),
                earlier.mispredicted,
                {**earlier.report, "duplicate_of": _copy_name(call)})
            if run_dir is not None:
                run_dir.save_program(request.call, program, evaluation)
        if evaluation is None:
            program, evaluation = self.score(request, program, too_long)
            if copied is not None and copied[0] is None:  # the skeleton, as it was given
                evaluation = ProgramEvaluation(
                    evaluation.score, evaluation.buggy,
                    copy_feedback("the skeleton the prompt gave") + "\n\n" + evaluation.feedback,
                    evaluation.mispredicted, {**evaluation.report, "duplicate_of": "skeleton"})
            if run_dir is not None:
                run_dir.save_program(request.call, program, evaluation)
        with self.lock:
            copy = evaluation.report.get("duplicate_of") is not None
            self.accounting.duplicates += copy
            self.accounting.buggy_programs += not copy and evaluation.buggy
            self.accounting.new_programs += not copy and not evaluation.buggy
            if key is not None and key not in self.seen:
                self.seen[key] = (request.call, evaluation)
            elif key is not None and self.seen[key][1] is None:  # the skeleton, scored once
                self.seen[key] = (None, evaluation)
        return Outcome(program, evaluation)


def _copy_name(of: int | str | None) -> int | str:
    """What a copy copies, as records name it: ``"skeleton"``, a seed's label, or the number
    of the call that wrote it (from 1)."""
    return "skeleton" if of is None else of if isinstance(of, str) else of + 1


def _event(request: Request, outcome: Outcome, best: float, budget: int, tokens: int,
           replayed: bool) -> dict:
    ev = outcome.evaluation
    return {"call": request.call, "action": request.action, "score": 0.0 if ev.buggy else ev.score,
            "buggy": ev.buggy, "best": best, "budget": budget, "tokens": tokens,
            "replayed": replayed, "duplicate_of": ev.report.get("duplicate_of"),
            "fitted_from": ev.fit_note.score_before if ev.fit_note else None}


def synthesize(search: Search, *, llm: ChatModel | None, prompts: PromptBuilder, evaluator: Evaluator,
               budget: int, run_dir: RunDir | None = None, seed: int = 0,
               sampling: SamplingConfig | None = None,
               progress: Callable[[dict], None] | None = None,
               time_limit_s: float | None = None,
               seeds: tuple[Seed, ...] = ()) -> SynthesisResult:
    """Run a search for at most ``budget`` LLM calls (saved calls in ``run_dir`` are replayed).

    A run with a directory, a status and a finish step is `codeworld.synthesis.run.Run`'s job;
    this is the search loop it drives (and that tests drive directly).

    Args:
        search: a fresh search (GIF-MCTS, REx, zero-shot) built with the run's config and seed.
        llm: the model; may be None when every needed call is already saved.
        prompts: turns requests into messages and completions into programs.
        evaluator: scores programs (in a sandbox).
        budget: the most LLM calls in the whole run.
        run_dir: where to save the run (and from where to replay saved calls).
        seed: the run's seed; call ``i`` samples with ``seed`` and ``sample = i``.
        sampling: temperature and completion length.
        progress: called after each call with a small dict (call, action, score, best, tokens).
        seeds: the world's programs written before the search (`World.seeds`): scored, saved
            in ``seeds/``, and handed to the search (when it takes seeds) before the first call.
        time_limit_s: start no new wave of calls after this many seconds of this session (the
            calls under way finish); None has no limit. Saved calls replay regardless.

    Returns:
        The best program, its evaluation, the accounting and the final search.

    Raises:
        RunDivergedError: a saved call's prompt differs from the one the search asks for now.
    """
    started = time.perf_counter()
    calls = _Calls(llm, prompts, evaluator, run_dir, seed, sampling or SamplingConfig(),
                   deadline=None if time_limit_s is None else started + time_limit_s)
    accounting, history, programs = calls.accounting, [], []
    seeded = _seed_search(search, seeds, calls) if getattr(search, "seed", None) else {}
    programs += [(call, s.program, ev.score) for call, (s, ev) in seeded.items() if not ev.buggy]
    best_score = max((0.0 if ev.buggy else ev.score for _, ev in seeded.values()),
                     default=float("-inf"))
    pool = None

    def save() -> None:
        accounting.wall_seconds = time.perf_counter() - started
        if run_dir is not None:
            best = search.best()
            state = {**search.to_json(), "programs": search.programs(),
                     "seeds": [_seed_summary(s, ev) for s, ev in seeded.values()]}
            if best is not None and best[0] in seeded:  # a seed: its own file, its full record
                run_dir.save_state(state, accounting.to_json(), None)
                s, ev = seeded[best[0]]
                run_dir.save_best(best[0], s.program, ev, {"seed": s.label})
            else:
                run_dir.save_state(state, accounting.to_json(), best)

    try:
        while search.calls < budget and not search.finished:
            if (time_limit_s is not None and search.calls not in calls.recorded
                    and time.perf_counter() - started > time_limit_s):
                accounting.stopped_by_time_limit = True
                break
            requests = search.propose(budget - search.calls)
            if not requests:
                break
            if len(requests) > 1 and pool is None:
                pool = ThreadPoolExecutor(max_workers=len(requests), thread_name_prefix="synthesis-call")
            outcomes = [calls(requests[0])] if len(requests) == 1 else list(pool.map(calls, requests))
            for request, outcome in zip(requests, outcomes):
                search.apply(request, outcome)
                event = _event(request, outcome, 0.0, budget, accounting.tokens,
                               request.call in calls.recorded)
                best_score = event["best"] = max(best_score, event["score"])
                if outcome.program is not None and not outcome.evaluation.buggy:
                    programs.append((request.call, outcome.program, event["score"]))
                history.append(event)
                if progress is not None:
                    progress(event)
            save()
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    save()
    best = search.best()
    if best is None:
        return SynthesisResult(None, None, None, accounting, search, run_dir, history)
    call, program, _ = best
    if call in seeded:
        evaluation = seeded[call][1]
    else:
        evaluation = (run_dir.load_evaluation(call, program) if run_dir else None) or best[2]
    return SynthesisResult(call, program, evaluation, accounting, search, run_dir, history,
                           programs=programs,
                           best_seed=seeded[call][0].label if call in seeded else None)


SEEDS_DIR = "seeds"


def _seed_summary(seed: Seed, evaluation: ProgramEvaluation) -> dict:
    """A seed as the search state records it (``tree.json``'s ``seeds``)."""
    held = (evaluation.report.get("heldout") or {}).get("score")
    return {"label": seed.label, "score": 0.0 if evaluation.buggy else evaluation.score,
            "buggy": evaluation.buggy, "heldout": held, "start": seed.start,
            "file": f"{SEEDS_DIR}/{seed.label}.py"}


def _seed_search(search: Search, seeds, calls: "_Calls") -> dict[int, tuple[Seed, ProgramEvaluation]]:
    """Score the world's seed programs (no LLM call), save them in the run directory
    (``seeds/LABEL.py`` and ``.json``), and hand them to the search, a start only where it runs
    and scores higher than every seed that is not one. A resumed run takes the seeds it saved,
    program and evaluation, over the world's new ones (a seed built with a time budget may come
    out otherwise), so that its calls replay. Returns them by the call id the search gives them
    (`seed_call`)."""
    from dataclasses import replace

    run_dir, evaluator = calls.run_dir, calls.evaluator
    scored: dict[int, tuple[Seed, ProgramEvaluation]] = {}
    for k, seed in enumerate(seeds):
        evaluation = None
        if run_dir is not None:
            saved = run_dir.path / SEEDS_DIR / f"{seed.label}.json"
            program = run_dir.path / SEEDS_DIR / f"{seed.label}.py"
            if saved.is_file() and program.is_file():
                record = run_dir.read_json(f"{SEEDS_DIR}/{seed.label}.json")
                evaluation = ProgramEvaluation.from_json(record)
                seed = replace(seed, program=program.read_text(encoding="utf-8"),
                               prefix_lines=int(record.get("prefix_lines", seed.prefix_lines)),
                               record=record.get("record", seed.record))
        if evaluation is None:
            t0 = time.perf_counter()
            evaluation = evaluator.evaluate(seed.program)
            calls._count(eval_seconds=time.perf_counter() - t0)
            if run_dir is not None:
                run_dir.save_text(f"{SEEDS_DIR}/{seed.label}.py", seed.program)
                run_dir.save_record(f"{SEEDS_DIR}/{seed.label}.json",
                                    {"label": seed.label, "start": seed.start,
                                     "prefix_lines": seed.prefix_lines, "record": seed.record,
                                     **evaluation.to_json()})
        scored[seed_call(k)] = (seed, evaluation)
    others = [0.0 if ev.buggy else ev.score for s, ev in scored.values() if not s.start]
    for k, (seed, evaluation) in enumerate(scored.values()):
        start = seed.start and not evaluation.buggy and all(evaluation.score > o for o in others)
        search.seed(k, seed, evaluation, start)
        calls.remember(seed.program, seed.label, evaluation)
    return scored
