"""APPS-format code generation: problem loading, sandboxed test runs, comparison, the search and the harness."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from codeworld.experiments import Job
from codeworld.experiments._apps import run_apps_job
from codeworld.synthesis.types import FIX, GENERATE, IMPROVE, Request
from codeworld.worlds.apps._apps import (
    AppsEvaluator, AppsPrompts, load_problems, outputs_match, run_tests, search_tests,
)

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "benchmarks" / "apps_problems"


def _problem(pid: str):
    return {p.problem_id: p for p in load_problems(PROBLEMS)}[pid]


def test_shipped_problems_load_and_their_reference_solutions_pass():
    problems = load_problems(PROBLEMS)
    assert [p.problem_id for p in problems] == ["0000", "0001", "0002", "0003", "0004", "0005"]
    assert {p.difficulty for p in problems} == {"introductory", "interview", "competition"}
    call_based = _problem("0005")
    assert call_based.fn_name == "is_balanced" and call_based.starter_code.startswith("def is_balanced")
    for problem in problems:
        assert problem.n_tests >= 4 and problem.solutions
        assert run_tests(problem.solutions[0], problem.inputs, problem.outputs, problem.fn_name).all_passed


def test_hub_layout_file_loads_too(tmp_path):
    record = {"problem_id": 7, "question": "Print the sum.", "difficulty": "introductory",
              "input_output": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
              "solutions": json.dumps(["print(sum(map(int, input().split())))"])}
    path = tmp_path / "apps.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (problem,) = load_problems(path)
    assert problem.problem_id == "7" and problem.inputs == ["1 2\n"] and problem.solutions
    with pytest.raises(ValueError, match="at least one test"):
        path.write_text(json.dumps({**record, "input_output": "{}"}) + "\n")
        load_problems(path)


def test_outputs_match_like_apps():
    assert outputs_match("6\n", "6")
    assert outputs_match("1 2  3\n\n", "1 2 3")
    assert outputs_match("0.3333333\n", "0.33333333")
    assert not outputs_match("6 7", "6")
    assert not outputs_match("abc", "abd")
    assert outputs_match(True, [True]) and outputs_match([1, 2], [1, 2]) and not outputs_match(False, [True])


def test_failures_are_contained_per_test_and_per_program():
    p = _problem("0000")
    wrong = run_tests("print(0)\n", p.inputs, p.outputs)
    assert wrong.status == "ok" and wrong.passed == [False, True, True, False] and not wrong.crashed
    raising = run_tests("n = int(input())\nprint(1 // (n - 1))\n", p.inputs, p.outputs)
    assert raising.errors[1].startswith("ZeroDivisionError") and "line 2" in raising.errors[1]
    assert raising.crashed and raising.outputs[1] is None
    exiting = run_tests("import sys\nn = int(input())\nprint(max(map(int, input().split())) - "
                        "min(map(int, [1])))\nsys.exit(0)\n", p.inputs[:1], p.outputs[:1])
    assert exiting.errors == [None]  # exit() ends a program normally
    syntax = run_tests("print(\n", p.inputs, p.outputs)
    assert syntax.status == "exception" and "SyntaxError" in syntax.message and not any(syntax.passed)
    looping = run_tests("while True:\n    pass\n", p.inputs[:2], p.outputs[:2], timeout_s=0.5)
    assert looping.status == "timeout" and looping.passed == [False, False]


def test_evaluator_feeds_fix_and_improve():
    p = _problem("0000")
    evaluator = AppsEvaluator(p, search_tests(p))
    assert search_tests(p) == [0, 1]
    good = evaluator.evaluate(p.solutions[0])
    assert good.score == 1.0 and not good.buggy
    half = evaluator.evaluate("print(0)\n")  # right on the second search test only
    assert half.score == 0.5 and not half.buggy and half.mispredicted["expected"] == "6\n"
    bug = evaluator.evaluate("n = int(input())\nprint(n // 0)\n")
    assert bug.buggy and "ZeroDivisionError" in bug.feedback and "input" in bug.feedback
    # the synthesis core's checks and repairs that fit any program: a name never defined is
    # caught before a test runs, a missing import is added
    unknown = evaluator.evaluate("print(undefined_name)\n")
    assert unknown.buggy and unknown.report["status"] == "static_check"
    assert "the name 'undefined_name' is used but never defined" in unknown.feedback
    repaired, repairs = evaluator.prepare("print(math.floor(2.5))\n")
    assert repaired.startswith("import math\n") and repairs[0]["kind"] == "missing_import"
    prompts = AppsPrompts(p)
    improve = prompts.messages(Request(1, IMPROVE, 1, program="print(0)\n", mispredicted=half.mispredicted))
    assert "Expected output:\n```\n6\n" in improve[-1]["content"]
    fix = prompts.messages(Request(2, FIX, 2, program="print(x)\n", feedback=bug.feedback))
    assert "ZeroDivisionError" in fix[-1]["content"]
    generate = prompts.messages(Request(0, GENERATE, 0, prefix="n = int(input())\n"))
    assert generate[-1]["role"] == "assistant" and generate[-1]["content"].endswith("n = int(input())\n")
    answer = "Here:\n```python\nx = 1\nprint(x)\n```"
    assert prompts.program(Request(0, GENERATE, -1), answer) == "x = 1\nprint(x)\n"
    assert "function `is_balanced`" in AppsPrompts(_problem("0005")).messages(Request(0, GENERATE, -1))[-1]["content"]


@pytest.fixture()
def script(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    answers = ["```python\nx = 0\nprint(x)\n```",            # right on 1 of 2 search tests
               "```python\n" + _problem("0000").solutions[0] + "```"]
    path = tmp_path / "script.jsonl"
    path.write_text("\n".join(json.dumps({"text": a}) for a in answers * 3) + "\n")
    return path


def test_apps_job_searches_then_judges_on_all_tests(script, tmp_path):
    job = Job("apps/0000", "worldcoder", 0, f"scripted:{script}", 3, {"problems": str(PROBLEMS)})
    result = run_apps_job(job, str(tmp_path / "work"))
    assert result["calls"] == 2 and result["strict"] is True and result["passed"] == 1.0
    assert [h["score"] for h in result["history"]] == [0.5, 1.0]
    assert result["search_tests"] == 2 and result["n_tests"] == 4
    spec = json.loads((Path(result["run_dir"]) / "run.json").read_text())  # the keys of before
    legacy = json.loads((ROOT / "tests" / "data" / "legacy_runs" / "apps_job.run.json").read_text())
    # the keys of before, and the config, status and finish switches every run records now
    assert set(legacy) | {"created", "codeworld_version"} <= set(spec) and spec["problem"] == "0000"
    assert spec["status"] == "finished" and spec["config"]["c"] == 5.0


def test_harness_reports_strict_accuracy(script, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("apps_harness", ROOT / "benchmarks" / "apps.py")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    assert harness.main(["--check-solutions"]) == 0
    out = tmp_path / "out"
    argv = ["--limit", "1", "--methods", "zero-shot,worldcoder", "--llm", f"scripted:{script}",
            "--budget", "2", "--out", str(out), "--workdir", str(tmp_path / "work")]
    assert harness.main(argv) == 0
    table = json.loads((out / "table.json").read_text())
    # zero-shot's first answer passes half the tests: not solved; REx repairs it: solved
    assert table["methods"]["worldcoder"]["strict_accuracy"] == 1.0
    assert table["methods"]["zero-shot"]["per_difficulty"]["introductory"]["problems"] == 1
    text = (out / "table.md").read_text()
    assert "| worldcoder | 1.00 (1 runs) |" in text
    row = next(line for line in text.splitlines() if line.startswith("| worldcoder |"))
    assert row.endswith("| 25.1±1.4 |")  # the paper's Table 1
    assert table["paper_numbers"]["gif-mcts"] == [28.3, 1.4]
    assert harness.main(argv) == 0
    assert "0 finished, 0 failed, 2 already done" in capsys.readouterr().out
