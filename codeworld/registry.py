"""One registry type for every name-to-thing table of codeworld: planners, synthesis methods, LLM
backends, agent environment families, training algorithms, experiment executors.

A `Registry` maps a name to an entry of one kind, or to a ``"module:attribute"`` string that is
imported the first time the entry is asked for (so an optional dependency of one entry is imported
only when that entry is chosen). Asking for an unknown name raises the registry's own error, which
names close matches and the known names. Close matches are computed here and nowhere else
(`close_matches`), so every "did you mean" of the package reads the same.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

UNKNOWN = "unknown {kind} {name!r}{hint} (known: {known})"
HINT = " (did you mean {close}?)"


def close_matches(name: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The (at most `n`) candidates closest to `name`, best first (`difflib`'s ratio >= `cutoff`)."""
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=cutoff)


def load_attribute(reference: str, kind: str = "entry", noun: str | None = None) -> Any:
    """The object a ``"module:attribute"`` reference names (the attribute may be dotted:
    ``Class.method``).

    Args:
        reference: ``"module:attribute"``.
        kind: what the object is, for the messages (``"LLM backend"``).
        noun: what the attribute is called in the messages (default: `kind`).

    Raises:
        ValueError: the module cannot be imported or has no such attribute.
    """
    module_name, _, attribute = reference.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import the {kind} module {module_name!r}: {exc}") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"module {module_name!r} has no {noun or kind} {attribute!r}")
        target = getattr(target, part)
    return target


class Registry(Generic[T]):
    """Names mapped to entries of one kind, in registration order.

    ``registry[name]`` and `get` give the entry (importing a lazy one), ``name in registry``,
    ``iter(registry)``, `names`, `values` and `items` read it, `register` adds to it.

    Args:
        kind: what an entry is, for messages (``"planner"``, ``"synthesis method"``).
        entries: the first entries (an entry may be a ``"module:attribute"`` string: lazy).
        unknown: the message of an unknown name, a `str.format` template with ``kind``, ``name``,
            ``hint`` (`hint` filled with the close matches, or empty), ``known`` (the names in
            registration order) and ``known_sorted``.
        hint: the template of the close matches, with ``close`` (the matches, comma-separated).
        error: the exception type raised for an unknown name (called with the message).
        load: turns a lazy entry's string into the entry (default `load_attribute`).
    """

    def __init__(self, kind: str, entries: dict[str, T | str] | None = None, *, unknown: str = UNKNOWN,
                 hint: str = HINT, error: Callable[[str], Exception] = KeyError,
                 load: Callable[[str], T] | None = None):
        self.kind = kind
        self._entries: dict[str, T | str] = dict(entries or {})
        self._unknown = unknown
        self._hint = hint
        self._error = error
        self._load = load or (lambda reference: load_attribute(reference, kind))

    def register(self, name: str, entry: T | str, *, replace: bool = False) -> T | str:
        """Add `entry` under `name` (a ``"module:attribute"`` string is imported when first asked for).

        Raises:
            ValueError: `name` is taken (unless `replace`).
        """
        if not replace and name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove `name` if it is registered."""
        self._entries.pop(name, None)

    def get(self, name: str) -> T:
        """The entry called `name`, a lazy one imported.

        Raises:
            KeyError: an unknown name (or the registry's own error type); the message names close
                matches and the known names.
            ValueError: a lazy entry that cannot be imported (`load_attribute`).
        """
        try:
            entry = self._entries[name]
        except KeyError:
            raise self.unknown_error(name) from None
        if isinstance(entry, str):
            return self._load(entry)
        return entry

    __getitem__ = get

    def raw(self, name: str) -> T | str:
        """The entry as registered (a lazy one still a string); the registry's error if unknown."""
        try:
            return self._entries[name]
        except KeyError:
            raise self.unknown_error(name) from None

    def unknown_error(self, name: str) -> Exception:
        """The error for an unknown `name`: close matches (if any) and the known names."""
        close = close_matches(name, self._entries)
        hint = self._hint.format(close=", ".join(close)) if close else ""
        return self._error(self._unknown.format(kind=self.kind, name=name, hint=hint,
                                                known=", ".join(self._entries),
                                                known_sorted=", ".join(sorted(self._entries))))

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._entries)

    def values(self) -> list[T]:
        """The entries, in registration order (lazy ones imported)."""
        return [self.get(name) for name in self._entries]

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs, in registration order (lazy ones imported)."""
        return [(name, self.get(name)) for name in self._entries]

    def copy(self) -> Registry[T]:
        """A registry with the same settings and entries (adding to one leaves the other alone)."""
        new = Registry.__new__(Registry)
        new.__dict__.update(self.__dict__, _entries=dict(self._entries))
        return new

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"
