"""One reading of ``--set FIELD=VALUE`` for every command: fields of a frozen config dataclass,
set from text by the field's declared type.

``parse_overrides(["ucb_c=0.2", "sampling.temperature=0.5"])`` gives the text by field name (a
dotted name reaches into a nested config); ``config_with_overrides(config, overrides)`` returns a
copy of `config` with each field parsed as its type says: ``bool`` from true/false, yes/no, on/off
or 1/0; ``int``; ``float``; a tuple of floats from a comma list; ``X | None`` from ``none``/``null``
or as X; anything else stays text. An unknown field or an unreadable value is an error that names
it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


def parse_overrides(items: list[str], flag: str = "--set") -> dict[str, str]:
    """``["a=1", "b.c=x"]`` as ``{"a": "1", "b.c": "x"}``; raises ValueError on an item without ``=``."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} needs FIELD=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def config_with_overrides(config: Any, overrides: dict[str, Any]) -> Any:
    """A copy of `config` with fields set from strings (``"ucb_c": "0.2"``, ``"sampling.temperature": "0.5"``).

    Values that are not strings are taken as they are.

    Raises:
        TypeError: an unknown field, or a dotted name whose head is not a nested config.
        ValueError: a value that does not parse as the field's type.
    """
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, text in overrides.items():
        head, _, rest = key.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = text
        else:
            top[head] = text
    changes = {}
    hints = typing.get_type_hints(type(config))
    fields = [f.name for f in dataclasses.fields(config)]  # not its class constants
    for key, text in top.items():
        if key not in fields:
            raise TypeError(f"{type(config).__name__} has no field {key!r}; "
                            f"fields: {', '.join(fields)}")
        changes[key] = parse_value(hints[key], text, key)
    for key, sub in nested.items():
        inner = getattr(config, key, None)
        if inner is None or not dataclasses.is_dataclass(inner):
            raise TypeError(f"{type(config).__name__} has no nested config {key!r}")
        changes[key] = config_with_overrides(inner, sub)
    return dataclasses.replace(config, **changes)


def parse_value(hint: Any, text: Any, key: str) -> Any:
    """`text` read as the type `hint` (see the module docstring); non-strings pass through."""
    if not isinstance(text, str):
        return text
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if type(None) in typing.get_args(hint) and text.lower() in ("none", "null"):
            return None
        if len(options) == 1:
            return parse_value(options[0], text, key)
        return text
    try:
        if hint is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if hint is int:
            return int(text)
        if hint is float:
            return float(text)
        if typing.get_origin(hint) is tuple:
            return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"cannot read {key}={text!r} as {getattr(hint, '__name__', hint)}") from None
    return text
