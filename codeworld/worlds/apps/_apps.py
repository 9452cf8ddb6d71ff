"""The APPS world: problems, sandboxed test runs, prompts and the evaluator.

The APPS benchmark (Hendrycks et al., 2021) gives each problem a statement and input/output
tests; the CWMB paper (its Table 1) ran GIF-MCTS and its baselines on it and reported the *strict
accuracy*: the fraction of problems whose program passes every test. This module reads problems
in APPS's layouts, runs programs against tests inside codeworld's sandbox, and wires them to the
synthesis searches:

* `load_problems` reads a folder of APPS problem folders (``question.txt``,
  ``input_output.json``, optionally ``metadata.json``, ``solutions.json``, ``starter_code.py``),
  a single such folder, or a ``.json`` / ``.jsonl`` file of records with the same fields (the
  layout of the APPS release on the Hugging Face hub, ``input_output`` and ``solutions`` as JSON
  strings or as data).
* `run_tests` runs a program on test inputs in a sandbox worker (`op_run_tests`): a standard-input
  program is executed once per test with the input as ``sys.stdin``; a call-based problem
  (``fn_name``) calls the function (or ``Solution().fn_name``) with the test's arguments.
* `outputs_match` compares as APPS does, loosely: equal after stripping each line, else equal
  token by token, else equal as numbers within 1e-6.
* `make_apps_world` is the `World` of one problem: its prompts (`AppsPrompts`) and its evaluator
  (`AppsEvaluator`) on the tests the search sees (`search_tests`: the first half, at least one).
  The APPS job (`codeworld.experiments._apps.run_apps_job`) judges the strict accuracy on all.
"""

from __future__ import annotations

import io
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeworld._model import compile_candidate
from codeworld.sandbox._ops import SandboxTimeout, candidate_error
from codeworld.synthesis._checks import StaticProblem
from codeworld.synthesis.types import (FIX, GENERATE, IMPROVE, Evaluator, ProgramEvaluation, Request,
                                       World)

if TYPE_CHECKING:
    from codeworld.synthesis.run import Run

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
FILENAME = "solution.py"
OUTPUT_CAP = 1 << 20  # characters of a program's output kept per test
STDIO_RULES = ("Write a Python 3 program that reads the input from standard input and prints the "
               "answer to standard output.")


@dataclass(frozen=True)
class Problem:
    """One APPS problem.

    Attributes:
        problem_id: its id (the folder name, or the record's ``problem_id``).
        question: the statement.
        inputs: the tests' inputs (strings for standard-input problems, argument lists for
            call-based ones).
        outputs: the expected outputs, in the same order.
        fn_name: the function to call, for call-based problems (None: standard input/output).
        starter_code: code the answer must start from (call-based problems), or "".
        difficulty: ``introductory``, ``interview``, ``competition`` or "".
        solutions: reference solutions, if the data has them.
    """

    problem_id: str
    question: str
    inputs: list
    outputs: list
    fn_name: str | None = None
    starter_code: str = ""
    difficulty: str = ""
    solutions: list[str] = field(default_factory=list)

    @property
    def n_tests(self) -> int:
        return len(self.inputs)

    def io_rules(self) -> str:
        """What the prompt says about input and output."""
        if self.fn_name is None:
            return STDIO_RULES
        rules = (f"Write a Python 3 module that defines the function `{self.fn_name}` (or a class "
                 f"`Solution` with that method); it is called with each test's arguments and its "
                 f"return value is compared with the expected one.")
        if self.starter_code:
            rules += f" Start from:\n```python\n{self.starter_code.rstrip()}\n```"
        return rules


def _as_data(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def problem_from_record(record: dict, default_id: str = "") -> Problem:
    """A `Problem` from an APPS record (hub layout: JSON strings or data)."""
    io_spec = _as_data(record.get("input_output") or {}) or {}
    inputs, outputs = list(io_spec.get("inputs", [])), list(io_spec.get("outputs", []))
    if len(inputs) != len(outputs) or not inputs:
        raise ValueError(f"problem {record.get('problem_id', default_id)}: needs as many outputs as "
                         f"inputs and at least one test (got {len(inputs)} / {len(outputs)})")
    solutions = _as_data(record.get("solutions") or []) or []
    return Problem(problem_id=str(record.get("problem_id", default_id)), question=record["question"],
                   inputs=inputs, outputs=outputs, fn_name=io_spec.get("fn_name"),
                   starter_code=record.get("starter_code") or "",
                   difficulty=record.get("difficulty") or "", solutions=list(solutions))


def _problem_from_folder(folder: Path) -> Problem:
    def read(name: str) -> str | None:
        path = folder / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    metadata = json.loads(read("metadata.json") or "{}")
    record = {"problem_id": folder.name, "question": read("question.txt"),
              "input_output": read("input_output.json"), "solutions": read("solutions.json"),
              "starter_code": read("starter_code.py"), "difficulty": metadata.get("difficulty", "")}
    if record["question"] is None or record["input_output"] is None:
        raise ValueError(f"{folder}: an APPS problem folder needs question.txt and input_output.json")
    return problem_from_record(record)


def load_problems(path: str | Path) -> list[Problem]:
    """Problems from an APPS folder tree, one problem folder, or a .json / .jsonl file (sorted by id)."""
    path = Path(path)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            records = data if isinstance(data, list) else [
                {"problem_id": key, **value} for key, value in data.items()]
        problems = [problem_from_record(r, str(i)) for i, r in enumerate(records)]
    elif (path / "question.txt").is_file():
        problems = [_problem_from_folder(path)]
    elif path.is_dir():
        problems = [_problem_from_folder(p) for p in sorted(path.iterdir())
                    if p.is_dir() and (p / "question.txt").is_file()]
    else:
        raise FileNotFoundError(f"no APPS problems at {path}")
    if not problems:
        raise ValueError(f"no APPS problems found in {path}")
    return sorted(problems, key=lambda p: (len(p.problem_id), p.problem_id))


# ------------------------------------------------------------------------------------------ running


def op_run_tests(ctx, source: str, inputs: list, fn_name: str | None = None) -> int:
    """Sandbox op: run `source` on each input, emitting ``{"test", "output" | "error"}`` per test."""
    ctx.state["filename"] = FILENAME
    code = compile_candidate(source, FILENAME)
    for k, test_input in enumerate(inputs):
        stdout = io.StringIO()
        saved = sys.stdin, sys.stdout
        sys.stdin = io.StringIO(test_input if isinstance(test_input, str) else "")
        sys.stdout = stdout
        result: dict[str, Any] = {"test": k}
        try:
            namespace: dict[str, Any] = {"__name__": "__main__" if fn_name is None else "solution"}
            try:
                exec(code, namespace)  # noqa: S102 - this is the sandbox worker
            except SystemExit:
                pass
            if fn_name is not None:
                fn = namespace.get(fn_name)
                if fn is None and "Solution" in namespace:
                    fn = getattr(namespace["Solution"](), fn_name)
                if fn is None:
                    raise NameError(f"the program defines no function {fn_name!r}")
                args = test_input if isinstance(test_input, list) else [test_input]
                value = fn(*args)
                result["output"] = json.loads(json.dumps(value, default=list))
            else:
                result["output"] = stdout.getvalue()[:OUTPUT_CAP]
        except (SandboxTimeout, MemoryError):
            raise
        except BaseException as exc:  # noqa: BLE001 - the candidate's failure on this test
            error = candidate_error(exc, FILENAME)
            result["error"] = error["message"]
            result["line"] = error["line"]
        finally:
            sys.stdin, sys.stdout = saved
        ctx.emit(result)
    return len(inputs)


def outputs_match(got: Any, expected: Any) -> bool:
    """APPS-style loose comparison of a program's output with the expected one."""
    if not isinstance(expected, str) or not isinstance(got, str):
        if isinstance(expected, list) and len(expected) == 1 and not isinstance(got, list):
            expected = expected[0]  # APPS wraps call-based outputs in a list
        return _same_value(got, expected)
    if _lines(got) == _lines(expected):
        return True
    got_tokens, expected_tokens = got.split(), expected.split()
    if got_tokens == expected_tokens:
        return True
    if len(got_tokens) != len(expected_tokens):
        return False
    try:
        return all(math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
                   for a, b in zip(got_tokens, expected_tokens))
    except ValueError:
        return False


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


def _same_value(got: Any, expected: Any) -> bool:
    if isinstance(got, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(got) == len(expected) and all(_same_value(a, b) for a, b in zip(got, expected))
    if isinstance(got, (int, float)) and isinstance(expected, (int, float)) and not isinstance(got, bool):
        return math.isclose(float(got), float(expected), rel_tol=1e-6, abs_tol=1e-6)
    return got == expected


@dataclass
class TestRun:
    """A program's results on some tests.

    Attributes:
        passed: per test, whether its output matched (False for a test that did not run).
        outputs: per test, the output (None when it raised or did not run).
        errors: per test, the error message, or None.
        status: the sandbox status of the whole request (``ok``, ``timeout``, ``exception``...).
        message: the request's failure (a syntax error, the time limit), or None.
        line: the program line of that failure, when known.
    """

    passed: list[bool]
    outputs: list[Any]
    errors: list[str | None]
    status: str
    message: str | None
    line: int | None = None

    @property
    def fraction(self) -> float:
        return sum(self.passed) / len(self.passed) if self.passed else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.passed) and all(self.passed)

    @property
    def crashed(self) -> bool:
        """The program did not run to the end on every test (an error, a timeout, no code)."""
        return self.status != "ok" or any(e is not None for e in self.errors)


def run_tests(source: str, inputs: list, outputs: list, fn_name: str | None = None,
              timeout_s: float = 4.0) -> TestRun:
    """Run `source` on the tests in a sandbox worker (``timeout_s`` per test) and compare."""
    from codeworld.sandbox import Sandbox, SandboxLimits

    n = len(inputs)
    limits = SandboxLimits(timeout_s=timeout_s * max(1, n), memory_bytes=2 << 30)
    with Sandbox(limits) as box:
        result = box.call(op_run_tests, source=source,
                          inputs=list(inputs), fn_name=fn_name)
    got: list[Any] = [None] * n
    errors: list[str | None] = [None] * n
    ran = [False] * n
    for item in result.partial:
        k = item["test"]
        ran[k] = True
        if "error" in item:
            errors[k] = item["error"] + (f" (line {item['line']})" if item.get("line")
                                         and f"line {item['line']}" not in item["error"] else "")
        else:
            got[k] = item["output"]
    passed = [ran[k] and errors[k] is None and outputs_match(got[k], outputs[k]) for k in range(n)]
    message = None if result.ok else result.summary()
    return TestRun(passed, got, errors, result.status, message, result.line)


# ------------------------------------------------------------------------------------------ search


def _render(name: str, **values: Any) -> list[dict]:
    from codeworld.llm._prompts import render

    return render(name, PROMPT_DIR, **values)


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 2000 else text[:2000] + "\n... (cut)"


class AppsPrompts:
    """GIF-MCTS / REx / zero-shot prompts for one problem (templates in ``prompts/apps_*.txt``)."""

    def __init__(self, problem: Problem):
        self.problem = problem

    def messages(self, request: Request) -> list[dict]:
        p = self.problem
        common = {"question": p.question.strip(), "io_rules": p.io_rules()}
        if request.action == GENERATE:
            if request.parent < 0:  # from nothing, outside a tree (REx's seed, zero-shot)
                return _render("apps_zero_shot", **common)
            return _render("apps_generate", **common, partial_program=request.prefix)
        mis = request.mispredicted
        if request.action == IMPROVE and mis and "expected" in mis:
            return _render("apps_improve", **common, program=request.program,
                           test_input=_show(mis["input"]), expected=_show(mis["expected"]),
                           got=_show(mis["got"]))
        if request.action in (IMPROVE, FIX):
            error = request.feedback or "The program gives wrong answers."
            return _render("apps_fix", **common, program=request.program, error=error)
        raise ValueError(f"unknown action {request.action!r}")

    def program(self, request: Request, completion_text: str) -> str | None:
        from codeworld.llm import CodeExtractionError, extract_code
        from codeworld.llm.types import prefill_of

        try:
            return extract_code(completion_text, prefill_of(self.messages(request))) + "\n"
        except CodeExtractionError:
            return None


class AppsAssists:
    """The APPS world's `codeworld.synthesis.types.Assists`: the static checks that fit any
    program (names never defined, randomness); a problem has no skeleton, no data section, no
    data model and no composition."""

    def skeleton(self) -> None:
        return None

    def data_section(self) -> str:
        return ""

    def data_model(self) -> None:
        return None

    def static_problems(self, source: str) -> list[StaticProblem]:
        import ast

        from codeworld.synthesis._checks import code_problems, unique_problems

        try:
            return unique_problems(code_problems(ast.parse(source)), 5)
        except SyntaxError:
            return []  # the test run reports it, with its line

    def compose(self, programs: list[tuple[int, str]]) -> None:
        return None


class AppsEvaluator(Evaluator):
    """Scores a program by the fraction of the given tests it passes (in a sandbox).

    A program that raises or runs out of time on a test is buggy (the search then offers *fix*,
    with the error and the test's input); otherwise the first failed test feeds *improve*. The
    synthesis core's help that fits any program reaches it too: the missing-import repair
    (`prepare`), and the static checks of names never defined and of randomness, which make a
    program buggy before any test runs.
    """

    def prepare(self, program: str, parent: str = "") -> tuple[str, list[dict]]:
        from codeworld.synthesis._repairs import repair_imports

        repaired, repairs = repair_imports(program)
        return repaired, [r.to_json() for r in repairs]

    def __init__(self, problem: Problem, tests: list[int], timeout_s: float = 4.0,
                 assists: AppsAssists | None = None):
        self.problem = problem
        self.tests = tests
        self.timeout_s = timeout_s
        self.assists = assists or AppsAssists()

    def evaluate(self, program: str) -> ProgramEvaluation:
        from codeworld.synthesis._checks import format_problems

        problems = self.assists.static_problems(program)
        if problems:
            return ProgramEvaluation(0.0, True, format_problems(problems, program), None,
                                     {"status": "static_check", "problems": [q.to_json() for q in problems]})
        p = self.problem
        inputs = [p.inputs[k] for k in self.tests]
        outputs = [p.outputs[k] for k in self.tests]
        run = run_tests(program, inputs, outputs, p.fn_name, self.timeout_s)
        report = {"passed": run.passed, "status": run.status, "message": run.message}
        if run.crashed:
            if run.message is not None:
                feedback = run.message
            else:
                k = next(i for i, e in enumerate(run.errors) if e is not None)
                feedback = f"{run.errors[k]}\nIt happened on the input:\n{_show(inputs[k])}"
            return ProgramEvaluation(0.0, True, feedback, None, report)
        failed = [k for k, ok in enumerate(run.passed) if not ok]
        if not failed:
            return ProgramEvaluation(1.0, False, "", None, report)
        k = failed[0]
        mis = {"input": inputs[k], "expected": outputs[k], "got": run.outputs[k]}
        feedback = f"wrong answer on input {_show(inputs[k])!r}: expected {_show(outputs[k])!r}"
        return ProgramEvaluation(run.fraction, False, feedback, mis, report)


def search_tests(problem: Problem, fraction: float = 0.5) -> list[int]:
    """The tests the search sees: the first `fraction` of them, at least one."""
    return list(range(max(1, int(problem.n_tests * fraction))))


def _one_problem(path: str | Path) -> Problem:
    found = load_problems(path)
    if len(found) != 1:
        raise ValueError(f"{path} holds {len(found)} APPS problems: give the folder or file of one")
    return found[0]


def problem_target(path: str) -> str:
    """The whole path of the one APPS problem at ``path`` (the ``apps`` kind's check of a command
    line's target).

    Raises:
        FileNotFoundError: nothing at the path.
        ValueError: the path holds no problem, several, or an unreadable one.
    """
    _one_problem(path)
    return str(Path(path).resolve())


def make_apps_world(problem: Problem | str | Path, assists: None = None,
                    split: list[int] | None = None, *, timeout_s: float = 4.0,
                    heldout_fraction: float | None = None, run: "Run | None" = None) -> World:
    """The world of one APPS problem: its prompts, its evaluator on the tests the search sees,
    and its assists (`AppsAssists`); no finish step. Registered as the ``apps`` kind of
    `codeworld.worlds.make_world`.

    Args:
        problem: the problem, or the path of a file or folder holding one (`load_problems`;
            ``codeworld synthesize --world apps PATH``).
        assists: unused (the import repair and the static checks are always on).
        split: the indices of the tests the search sees (None: `search_tests`).
        timeout_s: wall-clock limit of one test.
        heldout_fraction: the share of the tests the search does not see (None: half).
        run: unused (the tests the search sees follow from the problem alone).

    Raises:
        ValueError: the path holds no problem or several.
        FileNotFoundError: nothing at the path.
    """
    if not isinstance(problem, Problem):
        problem = _one_problem(problem)
    if split is None:
        split = search_tests(problem, 0.5 if heldout_fraction is None else 1.0 - heldout_fraction)
    tests = list(split)
    assist = AppsAssists()
    return World(AppsPrompts(problem), AppsEvaluator(problem, tests, timeout_s, assist),
                 assists=assist)
