"""The ``scripted`` backend: replays given completions in order, for tests and exact replays of a
run (``--llm scripted:FILE``, where FILE may be a run's completions log)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from codeworld.llm.types import LLMError, RawCompletion, Sampling, prefill_of, strip_echoed_prefill


class ScriptExhaustedError(LLMError):
    """A scripted backend was asked for more completions than its script holds."""


class ScriptedBackend:
    """Replays given completions in order, for tests and exact replays.

    Args:
        completions: each a string (the text) or a dict with ``text`` and optionally
            ``prompt_tokens``, ``completion_tokens``, ``finish_reason``.
        model: the model name reported.

    Attributes:
        requests: every ``(messages, sampling)`` asked for, in order.
    """

    name = "scripted"
    cacheable = False

    def __init__(self, completions: list[str | dict], model: str = "script"):
        self._script = [c if isinstance(c, dict) else {"text": c} for c in completions]
        for i, entry in enumerate(self._script):
            if not isinstance(entry.get("text"), str):
                raise ValueError(f"scripted completion {i} has no text")
        self.model = model
        self.requests: list[tuple[list[dict], Sampling]] = []
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "ScriptedBackend":
        """Reads a script: a JSON list, or JSON Lines (one string or object per line, such as a
        run's completions log, whose entries carry ``text``)."""
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise LLMError(f"cannot read script {path}: {exc.strerror}") from exc
        stripped = raw.lstrip()
        try:
            if stripped.startswith("["):
                entries = json.loads(raw)
            else:
                entries = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise LLMError(f"script {path} is neither a JSON list nor JSON Lines: {exc}") from exc
        return cls(entries, model=path.name)

    @classmethod
    def from_spec(cls, arg: str, options: None = None) -> "ScriptedBackend":
        """The factory of ``--llm scripted:FILE`` (see `from_file`); the backend takes no options."""
        if not arg:
            raise ValueError("the scripted backend needs a file: --llm scripted:FILE")
        return cls.from_file(arg)

    @property
    def remaining(self) -> int:
        return len(self._script) - len(self.requests)

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        with self._lock:
            index = len(self.requests)
            if index >= len(self._script):
                raise ScriptExhaustedError(
                    f"the script has {len(self._script)} completions; call {index + 1} has none")
            self.requests.append((messages, sampling))
            entry = self._script[index]
        return RawCompletion(
            text=strip_echoed_prefill(entry["text"], prefill_of(messages)),
            prompt_tokens=int(entry.get("prompt_tokens", 0)),
            completion_tokens=int(entry.get("completion_tokens", 0)),
            finish_reason=entry.get("finish_reason", "stop"),
            model=self.model,
        )

    def close(self) -> None:
        pass
