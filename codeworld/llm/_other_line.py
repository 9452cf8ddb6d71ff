"""An answer that goes on with another line than a given one: the decoding side of asking again
after a copy (`codeworld.synthesis.config.SamplingConfig.copy_resamples`).

A small model asked to continue a program from a prefill (an assistant message the answer
goes on from) often writes the same line it wrote before, and from there the same program.
Sampling the whole answer again mostly repeats it. `complete_with_other_line` samples the first
line alone (a short request that stops at the line's end; the server's prompt cache holds the
rest), up to ``tries`` times with other seeds, until it is a line of code that differs from
`avoid` (spaces and a trailing comment aside), then asks for the rest of the answer with that
line added to the prefill. It needs nothing of a backend beyond the prefill that every backend
here honours: no logit bias (a server applies one to every token of the answer, so forbidding
the line's first token, often its indentation, would forbid it on every line) and no grammar.
"""

from __future__ import annotations

from typing import Any

# the longest first line asked for, in tokens
LINE_TOKENS = 160
# at most this many first lines are sampled for one answer
LINE_TRIES = 4


def code_of(line: str) -> str:
    """A line's code: without its spaces and a trailing ``#`` comment (empty for a blank line, a
    comment or a code fence)."""
    code = line.split("#", 1)[0] if "'" not in line and '"' not in line else line
    code = "".join(code.split())
    return "" if code.startswith("```") else code


def first_line(text: str) -> str:
    """The first line of an answer (without its newline)."""
    return text.split("\n", 1)[0]


def complete_with_other_line(llm: Any, messages: list[dict], avoid: str, *, tries: int,
                             line_seeds: list[int], **sampling: Any) -> tuple[Any, dict]:
    """An answer to `messages` (which end with an assistant prefill at the start of a line)
    whose first line is code other than `avoid`'s; where no such line came in `tries`, the
    whole answer asked for as it is (one request more).

    Args:
        llm: a chat model (``complete(messages, **sampling)``).
        messages: the request, its last message the assistant's prefill.
        avoid: the first line of the answer to differ from.
        tries: at most this many first lines are sampled.
        line_seeds: the seed of each line's request (at least `tries`).
        **sampling: the request's sampling (its seed is that of the rest of the answer).

    Returns:
        The answer (the first line, a newline, the rest) as an object with the completion's
        fields, its tokens and seconds those of every request made; and a note for the call's
        record: ``{"avoided": avoid, "line_tries": n, "other_line": found}``.
    """
    from codeworld.llm.types import Completion, prefill_of

    prefill = prefill_of(messages)
    parts, line = [], None
    for seed in line_seeds[:tries]:
        answer = llm.complete(messages, **{**sampling, "seed": seed, "stop": ["\n"],
                                           "max_tokens": min(LINE_TOKENS,
                                                             sampling.get("max_tokens", LINE_TOKENS))})
        parts.append(answer)
        text = first_line(str(getattr(answer, "text", "") or ""))
        if code_of(text) and code_of(text) != code_of(avoid):
            line = text
            break
    note = {"avoided": avoid, "line_tries": len(parts), "other_line": line is not None}
    start = "" if line is None else line + "\n"
    rest = llm.complete(messages[:-1] + [{"role": "assistant", "content": prefill + start}],
                        **sampling)
    parts.append(rest)

    def total(name: str, kind=int):
        return kind(sum(kind(getattr(p, name, 0) or 0) for p in parts))

    return Completion(
        text=start + str(getattr(rest, "text", "") or ""),
        prompt_tokens=total("prompt_tokens"), completion_tokens=total("completion_tokens"),
        latency_s=total("latency_s", float),
        finish_reason=str(getattr(rest, "finish_reason", "") or "stop"),
        model=str(getattr(rest, "model", "") or ""), prefill=prefill,
        cached=all(bool(getattr(p, "cached", False)) for p in parts)), note
