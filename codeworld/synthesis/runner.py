"""The driver of a synthesis run: asks the search what to do, does the calls, saves everything.

`synthesize` is the only place where a search meets the world: it turns each `Request` into chat
messages, gets a completion (from the run directory when the call was already made, otherwise
from the LLM), extracts the program, lets the evaluator repair its form when it can (an evaluator
with a ``prepare`` method: mechanical repairs, saved in the run directory and never counted as
LLM calls), scores it with the evaluator (one with a ``refine`` method may then replace a healthy
program by one with its constants fitted to the data, saved in ``fits/``), and hands the `Outcome` back to the search. The run directory is written after every call, so an interrupted run resumes by
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

from codeworld.synthesis.config import FinishConfig, SamplingConfig
from codeworld.synthesis.run_dir import RunDir
from codeworld.synthesis.types import (FIX, ChatModel, Evaluator, Outcome, ProgramEvaluation, PromptBuilder, Request,
                                       Search)

NO_CODE_FEEDBACK = ("The answer contained no Python program to run: answer with the whole "
                    "corrected program in one ```python code block.")


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
            `codeworld.synthesis.repairs`), replayed calls included.
        fits: programs replaced in the search by their constants fitted to the data (no LLM
            call; see `AssistConfig.fit_constants`), replayed calls included.
        duplicates: programs equal (up to comments and layout) to the skeleton the prompts
            start from or to a program of an earlier call: not scored again, and not expanded
            by the search (see `normalized`).
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
        programs: ``(call, program, score)`` of every program that ran without a bug, in call
            order (the finish step composes from them).
    """

    best_call: int | None
    best_program: str | None
    best_evaluation: ProgramEvaluation | None
    accounting: SearchAccounting
    search: Any
    run_dir: RunDir | None = None
    history: list[dict] = field(default_factory=list)
    finish: dict = field(default_factory=dict)
    fast_program: str | None = None
    programs: list[tuple[int, str, float]] = field(default_factory=list)

    @property
    def program_to_plan_with(self) -> str | None:
        """The kept compiled port of the best program, else the best program itself."""
        return self.fast_program or self.best_program


def _completion_record(completion: Any) -> dict:
    return {
        "text": completion.text,
        "prompt_tokens": int(getattr(completion, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(completion, "completion_tokens", 0) or 0),
        "latency_s": float(getattr(completion, "latency_s", 0.0) or 0.0),
        "finish_reason": str(getattr(completion, "finish_reason", "") or ""),
        "model": str(getattr(completion, "model", "") or ""),
        "cached": bool(getattr(completion, "cached", False)),
    }


def synthesize(search: Search, *, llm: ChatModel | None, prompts: PromptBuilder, evaluator: Evaluator,
               budget: int, run_dir: RunDir | None = None, seed: int = 0,
               sampling: SamplingConfig | None = None,
               progress: Callable[[dict], None] | None = None,
               time_limit_s: float | None = None,
               finish: FinishConfig | None = None) -> SynthesisResult:
    """Run a search for at most ``budget`` LLM calls (saved calls in ``run_dir`` are replayed).

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
        time_limit_s: start no new wave of calls after this many seconds of this session (the
            calls under way finish); None has no limit. Saved calls replay regardless.
        finish: fit the best program's constants and make it fast after the search
            (`codeworld.synthesis.finish`); None does neither.

    Returns:
        The best program, its evaluation, the accounting and the final search.

    Raises:
        RunDivergedError: a saved call's prompt differs from the one the search asks for now.
    """
    sampling = sampling or SamplingConfig()
    started = time.perf_counter()
    recorded = run_dir.load_calls() if run_dir is not None else {}
    accounting = SearchAccounting()
    history: list[dict] = []
    programs: list[tuple[int, str, float]] = []
    lock = threading.Lock()
    best_score = [float("-inf")]
    # normalized program -> (call that wrote it, its evaluation); the skeleton as call None
    seen: dict[str, tuple[int | None, ProgramEvaluation | None]] = {}
    detect_copies = bool(getattr(evaluator, "detect_copies", False))
    skeleton = normalized(getattr(evaluator, "skeleton", None)) if detect_copies else None
    if skeleton is not None:
        seen[skeleton] = (None, None)

    def sampling_kwargs(call: int) -> dict:
        kwargs = {"temperature": sampling.temperature, "max_tokens": sampling.max_tokens}
        if sampling.seed_per_call:
            kwargs.update(seed=seed, sample=call)
        return kwargs

    def run_one(request: Request) -> Outcome:
        messages = prompts.messages(request)
        saved = recorded.get(request.call)
        if saved is not None:
            if saved["messages"] != messages:
                raise RunDivergedError(
                    f"call {request.call} ({request.action}) was saved with a different prompt; "
                    f"the run directory does not belong to this method, config, seed or env")
            completion = saved["completion"]
            with lock:
                accounting.replayed_calls += 1
        else:
            if llm is None:
                raise RuntimeError(f"call {request.call} is not saved and no LLM was given")
            kwargs = sampling_kwargs(request.call)
            completion = _completion_record(llm.complete(messages, **kwargs))
            if run_dir is not None:
                run_dir.save_call(request.call, {"call": request.call,
                                                 "request": request.to_json(),
                                                 "messages": messages, "sampling": kwargs,
                                                 "completion": completion})
            with lock:
                accounting.new_calls += 1
                accounting.cached_calls += int(completion["cached"])
        with lock:
            accounting.calls += 1
            accounting.prompt_tokens += completion["prompt_tokens"]
            accounting.completion_tokens += completion["completion_tokens"]
            accounting.llm_seconds += completion["latency_s"]
        program = prompts.program(request, completion["text"])
        repairs: list[dict] = []
        prepare = getattr(evaluator, "prepare", None)
        if program is not None and prepare is not None:
            original = program
            program, repairs = prepare(program, request.program)
            if repairs:
                with lock:
                    accounting.repairs += len(repairs)
                if run_dir is not None:
                    run_dir.save_repairs(request.call, original, program, repairs)
        fitted = run_dir.fitted_program(request.call, program) if run_dir else None
        evaluation = run_dir.load_evaluation(request.call, fitted or program) if run_dir else None
        if evaluation is not None and fitted is not None:
            program = fitted
            with lock:
                accounting.fits += 1
        key = normalized(program) if detect_copies else None
        with lock:
            copied = seen.get(key) if key is not None else None
        if evaluation is None and copied is not None and copied[1] is not None:
            # a copy of an earlier program (or of the skeleton again): its evaluation, not a new
            # scoring pass
            call, earlier = copied
            evaluation = ProgramEvaluation(
                earlier.score, earlier.buggy,
                earlier.feedback if call is None else copy_feedback(f"the program of call {call + 1}"),
                earlier.mispredicted,
                {**earlier.report, "duplicate_of": "skeleton" if call is None else call + 1})
            if run_dir is not None:
                run_dir.save_program(request.call, program, evaluation)
        if evaluation is None:
            t0 = time.perf_counter()
            if program is None:
                # The next fix sees the program it was given again, with its error if it had one.
                feedback = NO_CODE_FEEDBACK
                if request.action == FIX and request.feedback:
                    feedback = f"{request.feedback}\n\n(The last answer had no program.) {feedback}"
                evaluation = ProgramEvaluation(0.0, True, feedback, None, {"status": "no_code"})
            else:
                evaluation = evaluator.evaluate(program)
                refine = getattr(evaluator, "refine", None)
                refined = refine(program, evaluation) if refine is not None else None
                if refined is not None:  # constants fitted to the data: not an LLM call
                    fitted, evaluation, fit = refined
                    with lock:
                        accounting.fits += 1
                    if run_dir is not None:
                        run_dir.save_fit(request.call, program, fitted, fit)
                    program = fitted
            with lock:
                accounting.eval_seconds += time.perf_counter() - t0
            if copied is not None and copied[0] is None:  # the skeleton, as it was given
                evaluation = ProgramEvaluation(
                    evaluation.score, evaluation.buggy,
                    copy_feedback("the skeleton the prompt gave") + "\n\n" + evaluation.feedback,
                    evaluation.mispredicted, {**evaluation.report, "duplicate_of": "skeleton"})
            if run_dir is not None:
                run_dir.save_program(request.call, program, evaluation)
        with lock:
            if evaluation.report.get("duplicate_of") is not None:
                accounting.duplicates += 1
            if key is not None and key not in seen:
                seen[key] = (request.call, evaluation)
            elif key is not None and seen[key][1] is None:  # the skeleton, scored once
                seen[key] = (None, evaluation)
        return Outcome(program, evaluation)

    def save() -> None:
        accounting.wall_seconds = time.perf_counter() - started
        accounting.stopped_by_time_limit = stopped_by_time
        if run_dir is not None:
            run_dir.save_state(search.to_json(), accounting.to_json(), search.best())

    pool = None
    stopped_by_time = False
    try:
        while search.calls < budget and not search.finished:
            if (time_limit_s is not None and search.calls not in recorded
                    and time.perf_counter() - started > time_limit_s):
                stopped_by_time = True
                break
            requests = search.propose(budget - search.calls)
            if not requests:
                break
            if len(requests) == 1:
                outcomes = [run_one(requests[0])]
            else:
                if pool is None:
                    pool = ThreadPoolExecutor(max_workers=len(requests),
                                              thread_name_prefix="synthesis-call")
                outcomes = list(pool.map(run_one, requests))
            for request, outcome in zip(requests, outcomes):
                search.apply(request, outcome)
                ev = outcome.evaluation
                score = 0.0 if ev.buggy else ev.score
                best_score[0] = max(best_score[0], score)
                if outcome.program is not None and not ev.buggy:
                    programs.append((request.call, outcome.program, score))
                event = {"call": request.call, "action": request.action, "score": score,
                         "buggy": ev.buggy, "best": best_score[0], "budget": budget,
                         "tokens": accounting.tokens, "replayed": request.call in recorded,
                         "duplicate_of": ev.report.get("duplicate_of"),
                         "fitted_from": (ev.report.get("fitted") or {}).get("score_before")}
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
    evaluation = (run_dir.load_evaluation(call, program) if run_dir else None) or best[2]
    result = SynthesisResult(call, program, evaluation, accounting, search, run_dir, history,
                             programs=programs)
    if finish is not None:  # also after a time limit: the fit has its own cap (FitConfig)
        from codeworld.synthesis.finish import finish_run

        result.finish = finish_run(result, evaluator, finish, run_dir)
    return result
