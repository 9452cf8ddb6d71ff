"""Taking a program out of a completion, checked with `ast`.

Completions wrap code in many ways: fenced blocks (```` ```python ````, ```` ```py ````, a bare
```` ``` ````, ``~~~``, indented fences), no fence at all, prose before and after, two blocks
(a program and a usage example), output cut off at the token limit, or the continuation of an
assistant prefill that opened a block. `extract_code` handles these: every candidate is parsed,
one cut off mid-statement is trimmed back to its longest parseable prefix, and among candidates
the one that defines the world model (``step`` or ``class Environment``) wins.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# An opening fence: up to 3 spaces, ``` or ~~~ (or longer), an optional info string.
_OPEN = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_CODE_LANGS = {"", "python", "py", "python3", "py3", "ipython", "numpy", "pycon"}
# Lines that start Python code when a completion has no fence.
_CODE_START = re.compile(
    r"^(?:def |class |import |from \S+ import |@|async def |if __name__|#|[A-Za-z_][\w.]*\s*(?:=|\())")


class CodeExtractionError(ValueError):
    """No Python program could be taken from the completion."""


@dataclass(frozen=True)
class ExtractedCode:
    """A program taken from a completion.

    Attributes:
        source: the program text (parses with `ast`).
        defines_model: it defines a top-level ``step`` function or ``class Environment``.
        trimmed: lines at the end were dropped because the completion was cut off mid-statement.
        fenced: it came from a fenced block.
    """

    source: str
    defines_model: bool
    trimmed: bool
    fenced: bool


def _fenced_blocks(text: str) -> list[str]:
    """The contents of fenced blocks with Python or no language, in order; an unclosed last
    block runs to the end of the text (a truncated completion)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match.group("fence"), match.group("info").strip().lower()
        lang = info.split()[0] if info else ""
        lang = lang.lstrip("{.").rstrip("}")
        j = i + 1
        close = re.compile(r"^[ \t]{0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        if lang in _CODE_LANGS:
            blocks.append("\n".join(lines[i + 1:j]))
        i = j + 1
    return blocks


def _unfenced(text: str, max_starts: int = 20) -> list[str]:
    """The text from each line that looks like the start of code (prose before it dropped),
    for the first ``max_starts`` such lines."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:max_starts]
    return ["\n".join(lines[i:]) for i in starts]


def _parse_prefix(source: str) -> tuple[str, bool] | None:
    """``source`` if it parses; else its longest parseable prefix of whole lines (with the
    flag ``trimmed``); None when no non-empty prefix parses."""
    source = source.strip("\n")
    try:
        ast.parse(source)
        return source, False
    except SyntaxError:
        pass
    lines = source.splitlines()
    for end in range(len(lines) - 1, 0, -1):
        candidate = "\n".join(lines[:end]).rstrip()
        if not candidate.strip():
            break
        try:
            ast.parse(candidate)
        except SyntaxError:
            continue
        return candidate, True
    return None


def defines_world_model(source: str) -> bool:
    """True when the program defines a top-level ``step`` function or ``class Environment``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "step":
            return True
        if isinstance(node, ast.ClassDef) and node.name == "Environment":
            return True
    return False


def _has_statements(source: str) -> bool:
    tree = ast.parse(source)
    # A lone expression (a word of prose that happens to parse) is not a program.
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def extract_program(text: str, prefill: str = "") -> ExtractedCode:
    """The program in a completion, with how it was found.

    Args:
        text: the completion text.
        prefill: the assistant prefill the text continues (it is put in front of the text).

    Raises:
        CodeExtractionError: there is no parseable Python code in the completion.
    """
    full = prefill + text
    candidates: list[ExtractedCode] = []
    # A backend that ignores prefills answers with a fresh message: its own blocks count too.
    blocks = _fenced_blocks(full) + (_fenced_blocks(text) if prefill else [])
    for source in blocks:
        parsed = _parse_prefix(source)
        if parsed is not None and _has_statements(parsed[0]):
            candidates.append(ExtractedCode(parsed[0], defines_world_model(parsed[0]), parsed[1], True))
    if not candidates:  # no usable block: the code is unfenced, maybe with prose around it
        for source in _unfenced(full):
            parsed = _parse_prefix(source)
            if parsed is not None and _has_statements(parsed[0]):
                candidates.append(
                    ExtractedCode(parsed[0], defines_world_model(parsed[0]), parsed[1], False))
                break  # the earliest start that parses keeps the most code
    if not candidates:
        raise CodeExtractionError("no Python code found in the completion")
    # The world model wins over helpers and usage examples; an untrimmed block over a cut-off
    # one; among equals, the later block (models tend to revise).
    return max(enumerate(candidates),
               key=lambda ic: (ic[1].defines_model, not ic[1].trimmed, ic[0]))[1]


def extract_code(text: str, prefill: str = "") -> str:
    """The program in a completion: see `extract_program`.

    Raises:
        CodeExtractionError: there is no parseable Python code in the completion.
    """
    return extract_program(text, prefill).source
