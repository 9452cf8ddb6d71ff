"""Static checks of a program that fit any program, before anything runs it.

A scoring pass costs a sandbox worker and a pass over the data; many programs a small model writes
fail on their first run for reasons that can be read off the source: a name used before it is
defined, randomness where the answer must be deterministic. `code_problems` finds these with `ast`
and pyflakes only (the program is untrusted: nothing here executes it) and says each in a sentence
the *fix* prompt can show; `StaticProblem`, `format_problems` and `unique_problems` are what every
world's checks (`codeworld.synthesis.types.Assists.static_problems`) report through. The checks of
a world's own contract live with the world (a CWMB program's state and action:
`codeworld.worlds.cwmb._checks`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# pyflakes messages that mean the program raises when the line runs.
_FATAL = ("UndefinedName", "UndefinedLocal", "UndefinedExport", "ReturnOutsideFunction",
          "YieldOutsideFunction", "ContinueOutsideLoop", "BreakOutsideLoop", "DuplicateArgument")


@dataclass(frozen=True)
class StaticProblem:
    """One thing wrong with a program.

    Attributes:
        line: 1-based line, or None when the problem has no single line.
        message: what is wrong, for the *fix* prompt.
        kind: a short tag (``"undefined_name"``, ``"state_unpacking"``, ``"state_index"``,
            ``"action_form"``, ``"random"``, ``"global"``, ``"no_model"``).
    """

    line: int | None
    message: str
    kind: str

    def text(self, lines: list[str] | None = None) -> str:
        if self.line is None:
            return self.message
        code = ""
        if lines and 1 <= self.line <= len(lines):
            code = f" (`{lines[self.line - 1].strip()}`)"
        return f"line {self.line}{code}: {self.message}"

    def to_json(self) -> dict:
        return {"line": self.line, "message": self.message, "kind": self.kind}


def format_problems(problems: list[StaticProblem], source: str) -> str:
    """The problems as the *fix* prompt shows them."""
    lines = source.splitlines()
    head = ("The program was not run: a check of its text found "
            + ("this problem" if len(problems) == 1 else f"these {len(problems)} problems") + ":")
    return "\n".join([head] + [f"- {p.text(lines)}" for p in problems])


_RANDOM_MESSAGE = ("this draws random numbers, but a world model must be deterministic (the same "
                   "state and action always give the same answer): predict the single most "
                   "likely outcome instead")


def _randomness(tree: ast.AST) -> list[StaticProblem]:
    """Uses of the `random` module or of numpy's random numbers, one problem per line."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
                a.name == "random" or a.name.startswith("numpy.random") for a in node.names):
            lines.add(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (
                node.module in ("random", "numpy.random")
                or (node.module == "numpy" and any(a.name == "random" for a in node.names))):
            lines.add(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr == "random"
              and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy")):
            lines.add(node.lineno)
    return [StaticProblem(line, _RANDOM_MESSAGE, "random") for line in sorted(lines)]


def pyflakes_messages(tree: ast.AST, filename: str = "model.py") -> list:
    """pyflakes' messages for a parsed program (pyflakes only reads the tree)."""
    from pyflakes.checker import Checker

    return list(Checker(tree, filename=filename).messages)


def code_problems(tree: ast.Module) -> list[StaticProblem]:
    """The problems of any program, whatever its contract: names pyflakes finds used but never
    defined (and its other errors that raise when the line runs), and randomness."""
    problems: list[StaticProblem] = []
    for msg in pyflakes_messages(tree):
        name = type(msg).__name__
        if name in _FATAL:
            text = msg.message % msg.message_args
            if name == "UndefinedName":
                text = (f"the name '{msg.message_args[0]}' is used but never defined "
                        "(define it before this line, or import it)")
            problems.append(StaticProblem(msg.lineno, text, "undefined_name"))
    return problems + _randomness(tree)


def unique_problems(problems: list[StaticProblem], max_problems: int) -> list[StaticProblem]:
    """The problems in line order, each said once, at most ``max_problems``."""
    seen: set[tuple] = set()
    unique = []
    for p in sorted(problems, key=lambda p: (p.line or 0, p.kind)):
        if (p.line, p.message) not in seen:
            seen.add((p.line, p.message))
            unique.append(p)
    return unique[:max_problems]


# ------------------------------------------------------------------------------------ helpers


def own_nodes(fn: ast.FunctionDef):
    """The nodes of a function's body, not those of the functions, lambdas or classes in it."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    stack = [node for node in fn.body if not isinstance(node, nested)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, nested))
