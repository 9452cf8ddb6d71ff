"""Run directories: complete layout, saving after every call, resume without repeated calls, replay."""

from __future__ import annotations

import json

import pytest

from codeworld.synthesis import (
    GifMcts,
    GifMctsConfig,
    Rex,
    RunDir,
    RunDivergedError,
    RunSpec,
    get_method,
    synthesize,
)
from codeworld.synthesis.fakes import EchoPrompts, FakeEvaluator, ScriptedLLM, fake_program

BUDGET = 9


def script(call: int, messages) -> str:
    """A deterministic mix of healthy, buggy and empty answers."""
    if call % 4 == 1:
        return fake_program(bug=f"ZeroDivisionError at call {call}")
    if call == 6:
        return ""  # no code in the answer
    return fake_program(round(0.1 + 0.08 * call, 4), feedback=f"transition {call} wrong",
                        tag=str(call))


def run(path, llm, method="gif-mcts", budget=BUDGET, seed=3, config=None):
    run_dir = RunDir(path)
    if not run_dir.exists():
        run_dir.init(RunSpec(method, seed=seed, budget=budget))
    search = get_method(method).make(config, seed=seed)
    return synthesize(search, llm=llm, prompts=EchoPrompts(), evaluator=FakeEvaluator(),
                      budget=budget, run_dir=run_dir, seed=seed)


def snapshot(path) -> dict:
    """Everything in a run directory except the timings."""
    out = {}
    for file in sorted(path.rglob("*")):
        if file.is_file():
            rel = str(file.relative_to(path))
            text = file.read_text()
            if rel == "accounting.json":
                data = json.loads(text)
                text = {k: data[k] for k in ("calls", "prompt_tokens", "completion_tokens")}
            out[rel] = text
    return out


def test_run_directory_is_complete_and_best_is_the_maximum(tmp_path):
    result = run(tmp_path / "run", ScriptedLLM(script))
    path = tmp_path / "run"
    for name in ("run.json", "tree.json", "accounting.json", "best_model.py", "best_report.json"):
        assert (path / name).is_file(), name
    assert sorted(p.name for p in (path / "calls").iterdir()) == [f"{i:04d}.json" for i in range(BUDGET)]
    reports = RunDir(path).program_reports()
    assert sorted(reports) == list(range(BUDGET))
    healthy = {c: r["score"] for c, r in reports.items() if not r["buggy"]}
    best = json.loads((path / "best_report.json").read_text())
    assert best["score"] == max(healthy.values())
    assert (path / "best_model.py").read_text() == (path / best["program"]).read_text()
    assert result.best_evaluation.score == best["score"] and result.best_call == best["call"]
    call = json.loads((path / "calls" / "0002.json").read_text())
    assert call["messages"] and call["completion"]["text"] == script(2, None)
    assert call["sampling"]["seed"] == 3 and call["sampling"]["sample"] == 2
    assert not reports[6]["has_program"] and reports[6]["buggy"]  # the empty answer
    accounting = json.loads((path / "accounting.json").read_text())
    assert accounting["calls"] == accounting["new_calls"] == BUDGET
    tree = json.loads((path / "tree.json").read_text())
    assert len(tree["nodes"]) == BUDGET + 1


@pytest.mark.parametrize("method, config", [
    ("gif-mcts", None),
    ("gif-mcts", GifMctsConfig(parallel=3)),
    ("worldcoder", None),
    ("zero-shot", None),
])
def test_interrupted_run_resumes_without_repeating_calls(tmp_path, method, config):
    run(tmp_path / "whole", ScriptedLLM(script), method=method, config=config)

    first = ScriptedLLM(script, fail_after=4)
    with pytest.raises(ScriptedLLM.Interrupted):
        run(tmp_path / "cut", first, method=method, config=config)
    saved = sorted(RunDir(tmp_path / "cut").load_calls())
    assert saved == sorted(first.calls) and len(saved) == 4

    second = ScriptedLLM(script)
    result = run(tmp_path / "cut", second, method=method, config=config)
    assert sorted(second.calls) == [c for c in range(BUDGET) if c not in saved]  # no repeats
    assert result.accounting.replayed_calls == 4
    assert snapshot(tmp_path / "cut") == snapshot(tmp_path / "whole")


def test_call_saved_before_scoring_is_not_paid_again(tmp_path):
    class FailingEvaluator(FakeEvaluator):
        def evaluate(self, program):
            if len(self.seen) == 2:
                raise KeyboardInterrupt
            return super().evaluate(program)

    run_dir = RunDir(tmp_path / "r")
    run_dir.init(RunSpec("gif-mcts", seed=3))
    llm = ScriptedLLM(script)
    with pytest.raises(KeyboardInterrupt):
        synthesize(GifMcts(seed=3), llm=llm, prompts=EchoPrompts(), evaluator=FailingEvaluator(),
                   budget=BUDGET, run_dir=run_dir, seed=3)
    assert llm.calls == [0, 1, 2]  # call 2 answered, then scoring was interrupted
    again = ScriptedLLM(script)
    run(tmp_path / "r", again)
    assert again.calls == list(range(3, BUDGET))


def test_finished_run_replays_exactly_without_an_llm(tmp_path):
    run(tmp_path / "a", ScriptedLLM(script))
    before = snapshot(tmp_path / "a")
    evaluator = FakeEvaluator()
    result = synthesize(GifMcts(seed=3), llm=None, prompts=EchoPrompts(), evaluator=evaluator,
                        budget=BUDGET, run_dir=RunDir(tmp_path / "a"), seed=3)
    assert result.accounting.replayed_calls == BUDGET and result.accounting.new_calls == 0
    assert evaluator.seen == []  # saved evaluations are reused, nothing is rescored
    assert snapshot(tmp_path / "a") == before


def test_resume_with_more_budget_continues(tmp_path):
    run(tmp_path / "a", ScriptedLLM(script), budget=5)
    llm = ScriptedLLM(script)
    run(tmp_path / "a", llm, budget=BUDGET)
    assert llm.calls == list(range(5, BUDGET))


def test_resume_with_another_seed_is_refused(tmp_path):
    run(tmp_path / "a", ScriptedLLM(script), method="worldcoder", seed=1)
    with pytest.raises(RunDivergedError):
        synthesize(Rex(seed=2), llm=ScriptedLLM(script), prompts=EchoPrompts(),
                   evaluator=FakeEvaluator(), budget=BUDGET + 5, run_dir=RunDir(tmp_path / "a"),
                   seed=2)


def test_early_stop_leaves_budget_unused(tmp_path):
    def perfect_second(call, messages):
        return fake_program(0.4 if call == 0 else 1.0)

    result = run(tmp_path / "p", ScriptedLLM(perfect_second))
    assert result.accounting.calls == 2 and result.best_evaluation.score == 1.0


def test_an_answer_without_code_keeps_the_program_and_its_error_for_the_next_fix(tmp_path):
    buggy = fake_program(bug="NameError: name 'sin' is not defined")
    texts = [buggy, "  ", fake_program(0.7)]  # the second answer has no code
    llm = ScriptedLLM(lambda call, messages: texts[call])
    prompts = EchoPrompts()
    sent = []

    class Recording(EchoPrompts):
        def messages(self, request):
            sent.append(request)
            return prompts.messages(request)

    result = synthesize(GifMcts(GifMctsConfig(allow_generate=False)), llm=llm, prompts=Recording(),
                        evaluator=FakeEvaluator(), budget=3)
    fix_of_no_code = sent[2]
    assert fix_of_no_code.action == "fix" and fix_of_no_code.program == buggy
    assert "name 'sin' is not defined" in fix_of_no_code.feedback
    assert "no program" in fix_of_no_code.feedback
    assert result.best_evaluation.score == 0.7


def test_time_limit_stops_new_calls_but_replays_saved_ones(tmp_path):
    run(tmp_path / "a", ScriptedLLM(script), budget=4)
    llm = ScriptedLLM(script)
    result = synthesize(GifMcts(seed=3), llm=llm, prompts=EchoPrompts(), evaluator=FakeEvaluator(),
                        budget=BUDGET, run_dir=RunDir(tmp_path / "a"), seed=3, time_limit_s=0.0)
    assert llm.calls == [] and result.accounting.replayed_calls == 4
    assert result.accounting.stopped_by_time_limit
    accounting = json.loads((tmp_path / "a" / "accounting.json").read_text())
    assert accounting["stopped_by_time_limit"] is True and accounting["calls"] == 4
