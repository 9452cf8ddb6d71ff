"""A call whose answer copies a program the search has (the one it was given, an earlier call's,
a seed, the skeleton) asks again within the same call with another seed, a bounded number of
times, and its record says so (`SamplingConfig.copy_resamples`). The LLM here is a fake whose
answer depends on the call and the seed."""

from __future__ import annotations

from codeworld.synthesis import synthesize
from codeworld.synthesis._gif_mcts import GifMcts
from codeworld.synthesis._run_dir import RunDir
from codeworld.synthesis._run_spec import RunSpec
from codeworld.synthesis._runner import RESAMPLE_SEED_STRIDE
from codeworld.synthesis.config import SamplingConfig
from codeworld.synthesis.fakes import EchoPrompts, FakeCompletion, FakeEvaluator, fake_program

SEED = 3
FIRST = fake_program(0.5, lines=6)
NEW = fake_program(0.8, lines=7)  # another program (comments aside, the fakes differ by lines)


class SeededLLM:
    """Answers ``answer(call, seed)``; `asked` lists the (call, seed) of every request."""

    def __init__(self, answer):
        self.answer = answer
        self.asked: list[tuple[int, int]] = []

    def complete(self, messages, **sampling):
        call, seed = int(sampling["sample"]), int(sampling["seed"])
        self.asked.append((call, seed))
        return FakeCompletion(self.answer(call, seed), prompt_tokens=5, completion_tokens=10)


def _run(tmp_path, llm, resamples: int = 2, temperature: float = 1.0):
    run_dir = RunDir(tmp_path / "run")
    if not run_dir.exists():
        run_dir.init(RunSpec("gif-mcts", seed=SEED, budget=2))
    evaluator = FakeEvaluator()
    evaluator.detect_copies = True
    return synthesize(GifMcts(seed=SEED), llm=llm, prompts=EchoPrompts(), evaluator=evaluator,
                      budget=2, run_dir=run_dir, seed=SEED,
                      sampling=SamplingConfig(temperature=temperature, copy_resamples=resamples))


def test_an_answer_that_copies_is_asked_again_with_another_seed_and_the_record_says_so(tmp_path):
    # the second call's first answer is the first call's program; its resample is new
    llm = SeededLLM(lambda call, seed: NEW if call == 1 and seed != SEED else FIRST)
    result = _run(tmp_path, llm)
    assert llm.asked == [(0, SEED), (1, SEED), (1, SEED + RESAMPLE_SEED_STRIDE)]
    accounting = result.accounting
    assert accounting.calls == 2 and accounting.duplicates == 0 and accounting.new_programs == 2
    assert accounting.resamples == 1 and accounting.completion_tokens == 30
    assert result.best_evaluation.score == 0.8
    record = RunDir(tmp_path / "run").load_calls()[1]
    assert record["completion"]["text"] == NEW
    assert record["sampling"]["seed"] == SEED + RESAMPLE_SEED_STRIDE
    (copy,) = record["completion"]["resampled"]
    assert copy["text"] == FIRST and copy["copy_of"] == 1 and copy["sampling"]["seed"] == SEED
    # a resumed run replays the kept answer: no new request, the same best, the same counts
    replayed = _run(tmp_path, None)
    assert replayed.best_evaluation.score == 0.8 and replayed.accounting.replayed_calls == 2
    assert replayed.accounting.resamples == 1 and replayed.accounting.duplicates == 0


def test_resamples_are_bounded_and_a_copy_is_kept_when_every_answer_is_one(tmp_path):
    llm = SeededLLM(lambda call, seed: FIRST)
    result = _run(tmp_path / "two", llm)
    assert llm.asked == [(0, SEED)] + [(1, SEED + k * RESAMPLE_SEED_STRIDE) for k in range(3)]
    assert result.accounting.duplicates == 1 and result.accounting.resamples == 2
    record = RunDir(tmp_path / "two" / "run").load_calls()[1]
    assert record["sampling"]["seed"] == SEED and record["completion"]["text"] == FIRST
    assert [r["sampling"]["seed"] for r in record["completion"]["resampled"]] == [
        SEED + RESAMPLE_SEED_STRIDE, SEED + 2 * RESAMPLE_SEED_STRIDE]
    # off, and at temperature 0 (greedy decoding repeats itself): one answer per call
    for tmp, kwargs in (("off", {"resamples": 0}), ("greedy", {"temperature": 0.0})):
        llm = SeededLLM(lambda call, seed: FIRST)
        result = _run(tmp_path / tmp, llm, **kwargs)
        assert llm.asked == [(0, SEED), (1, SEED)] and result.accounting.resamples == 0
        assert "resampled" not in RunDir(tmp_path / tmp / "run").load_calls()[1]["completion"]


class PrefilledPrompts(EchoPrompts):
    """Requests whose answer goes on from an assistant prefill that ends a line (as a generate
    or a targeted improve does); a program scores 0.8 where its first line sets ``x`` to 3."""

    def messages(self, request):
        return super().messages(request) + [{"role": "assistant", "content": "```python\n"}]

    def program(self, request, completion_text):
        code = completion_text.split("```")[0]
        return f"# score={0.8 if code.startswith('x = 3') else 0.5}\n{code}"


def test_a_copy_after_a_prefill_is_asked_again_from_another_first_line(tmp_path):
    asked = []

    class LineLLM:
        """Writes ``x = 1`` then ``y = 2`` from the prefill; a request for one line (it stops at
        the newline) gives ``x = 1`` at the first seed it sees, ``x = 3`` at the next."""

        def complete(self, messages, **sampling):
            prefill, stop = messages[-1]["content"], sampling.get("stop")
            asked.append((int(sampling["sample"]), int(sampling["seed"]), tuple(stop or ())))
            if stop:
                text = "x = 1" if sum(1 for a in asked if a[2]) == 1 else "x = 3"
            else:
                text = "y = 2\n```" if prefill.endswith("x = 3\n") else "x = 1\ny = 2\n```"
            return FakeCompletion(text, completion_tokens=len(text.split()))

    evaluator = FakeEvaluator()
    evaluator.detect_copies = True
    result = synthesize(GifMcts(seed=SEED), llm=LineLLM(), prompts=PrefilledPrompts(),
                        evaluator=evaluator, budget=2, run_dir=RunDir(tmp_path / "run"),
                        seed=SEED, sampling=SamplingConfig(copy_resamples=2))
    again = SEED + RESAMPLE_SEED_STRIDE
    # call 1 copies call 0; one line at a time until it differs, then the rest from that line
    assert asked == [(0, SEED, ()), (1, SEED, ()), (1, again + 1, ("\n",)),
                     (1, again + 2, ("\n",)), (1, again, ())]
    assert result.accounting.duplicates == 0 and result.accounting.resamples == 1
    assert result.best_evaluation.score == 0.8
    completion = RunDir(tmp_path / "run").load_calls()[1]["completion"]
    assert completion["text"] == "x = 3\ny = 2\n```"
    assert (completion["avoided"], completion["line_tries"], completion["other_line"]) == (
        "x = 1", 2, True)
    assert completion["resampled"][0]["text"] == "x = 1\ny = 2\n```"
