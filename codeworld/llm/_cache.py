"""An on-disk cache of completions, so that a run can be replayed exactly and for free.

A completion is stored under the SHA-256 of its request: backend, model, messages and every
sampling parameter, the sample index included. One JSON file per entry, written atomically
(temporary file, then rename), so several processes may share a cache directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from codeworld.llm.types import Completion, Sampling

CACHE_VERSION = 1


def request_key(backend: str, model: str, messages: list[dict], sampling: Sampling) -> str:
    """The cache key of a request: a hex SHA-256 of its canonical JSON."""
    payload = {
        "version": CACHE_VERSION,
        "backend": backend,
        "model": model,
        "messages": messages,
        "sampling": sampling.to_json(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CompletionCache:
    """Completions on disk, one JSON file per request key.

    Args:
        directory: where entries live (created on first write).
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        """The stored completion for ``key``, or None (a corrupt entry counts as missing)."""
        try:
            with open(self._path(key), encoding="utf-8") as handle:
                return Completion.from_json(json.load(handle)["completion"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, completion: Completion, request: dict | None = None) -> None:
        """Stores ``completion`` (and, for inspection, the request) under ``key``."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"completion": completion.to_json(), "request": request or {}}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __len__(self) -> int:
        if not self.directory.is_dir():
            return 0
        return sum(1 for _ in self.directory.glob("??/*.json"))
