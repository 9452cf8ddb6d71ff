"""The registry of LLM backends: a spec string names a backend and its argument.

* ``local``: the embedded Qwen2.5-Coder-1.5B-Instruct (`codeworld.llm._local`);
* ``openai:MODEL``: any OpenAI-compatible endpoint (`codeworld.llm._openai_compatible`);
* ``hf:MODEL``: a Hugging Face ``transformers`` model (`codeworld.llm._hf`);
* ``scripted:FILE``: replays completions from a file (`codeworld.llm._scripted`);
* ``MODULE:FACTORY[:ARG]``: a backend defined outside the registry (``mypkg.llm:EchoBackend``).

A backend is made by a *factory*, ``factory(arg, options) -> Backend`` (see
`codeworld.llm.types.Backend`), where ``arg`` is what follows the name's colon and ``options`` an
instance of the factory's ``Options`` attribute: a frozen dataclass of the backend's own
settings, declared in its module, whose fields become ``--llm-FIELD`` flags
(`codeworld.llm._arguments`); a factory without ``Options`` takes ``options=None``. The registry
maps a name to its factory as a ``"module:attribute"`` string, so that a backend's module (and
an optional dependency it needs) is imported only when it is chosen or its flags are listed.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any, Callable

from codeworld.llm.types import Backend
from codeworld.registry import Registry, load_attribute

BackendFactory = Callable[[str, Any], Backend]


def load_factory(entry: str) -> BackendFactory:
    """The factory a ``"module:attribute"`` entry names (the attribute may be dotted:
    ``Class.method``).

    Raises:
        ValueError: the module cannot be imported or has no such attribute.
    """
    target = load_attribute(entry, "LLM backend", noun="LLM backend factory")
    if not callable(target):
        raise ValueError(f"{entry} is not callable, so it cannot make an LLM backend")
    return target


_REGISTRY: Registry[BackendFactory] = Registry(
    "LLM backend", {
        "local": "codeworld.llm._local:LocalBackend",
        "openai": "codeworld.llm._openai_compatible:OpenAIBackend",
        "hf": "codeworld.llm._hf:HFBackend",
        "scripted": "codeworld.llm._scripted:ScriptedBackend.from_spec",
    }, unknown="unknown {kind} {name!r}{hint}; known: {known_sorted}, or MODULE:FACTORY for one defined elsewhere",
    error=ValueError, load=load_factory)
_MODULE = re.compile(r"[A-Za-z_][\w.]*")


def register_backend(name: str, factory: str | BackendFactory) -> None:
    """Makes ``name`` (and ``name:ARG``) a valid backend spec.

    Args:
        name: the name used in ``--llm NAME[:ARG]``.
        factory: ``"module:attribute"`` (imported when the backend is chosen) or the factory
            itself: ``factory(arg, options)`` builds the backend.
    """
    if not name.isidentifier():
        raise ValueError(f"backend name must be an identifier, got {name!r}")
    _REGISTRY.register(name, factory, replace=True)


def backend_names() -> list[str]:
    """The registered backend names."""
    return sorted(_REGISTRY)


def factories() -> dict[str, BackendFactory]:
    """The registered backends' factories by name, in registration order (each module is
    imported). A backend whose module cannot be imported is left out: choosing it says why."""
    out = {}
    for name in _REGISTRY:
        try:
            out[name] = _REGISTRY.get(name)
        except ValueError:
            continue
    return out


def resolve(spec: str) -> tuple[BackendFactory, str]:
    """The factory and argument a spec names: ``"openai:gpt-4o-mini"`` gives the openai factory
    and ``"gpt-4o-mini"``; ``"mypkg.llm:Echo:loud"`` gives ``mypkg.llm.Echo`` and ``"loud"``.

    A registered name takes everything after its colon as the argument (a model name may hold
    colons); any other name is a module, the next part its factory, the rest the argument.

    Raises:
        ValueError: an unknown backend (the message lists the known ones and close matches), or
            a module that cannot be imported or lacks the factory.
    """
    name, _, rest = spec.strip().partition(":")
    if name in _REGISTRY:
        return _REGISTRY.get(name), rest
    attribute, _, arg = rest.partition(":")
    if attribute and _MODULE.fullmatch(name) and importlib.util.find_spec(name.split(".")[0]):
        return load_factory(f"{name}:{attribute}"), arg
    raise _REGISTRY.unknown_error(name)


def options_class(factory: BackendFactory) -> type | None:
    """The options dataclass a factory takes (its ``Options`` attribute), or None."""
    return getattr(factory, "Options", None)


def make_options(factory: BackendFactory, values: Any = None) -> Any:
    """The options to build a backend with.

    Args:
        factory: the backend's factory.
        values: an instance of its ``Options``, a dict of field values (strings are read by
            the field's type, see `codeworld._overrides`), or None for the defaults.

    Raises:
        ValueError: a field the backend does not have, a value that does not read as its type
            or that its options refuse, or options for a backend that takes none.
    """
    cls = options_class(factory)
    if values is None or (isinstance(values, dict) and not values):
        return cls() if cls is not None else None
    if cls is not None and isinstance(values, cls):
        return values
    if cls is None:
        raise ValueError(f"this LLM backend takes no options, got {values!r}")
    if not isinstance(values, dict):
        raise ValueError(f"expected {cls.__name__} or a dict of its fields, "
                         f"got {type(values).__name__}")
    from codeworld._overrides import config_with_overrides

    try:
        return config_with_overrides(cls(), values)
    except TypeError as exc:  # an unknown field
        raise ValueError(str(exc)) from None


def make_backend(spec: str, options: Any = None) -> Backend:
    """Builds the backend a spec string names.

    Args:
        spec: ``NAME[:ARG]`` of a registered backend, or ``MODULE:FACTORY[:ARG]``.
        options: its options (see `make_options`).

    Raises:
        ValueError: an unknown backend, bad options, or a missing argument (``openai:`` needs
            a model).
    """
    factory, arg = resolve(spec)
    options = make_options(factory, options)
    if spec.strip().partition(":")[0] in _REGISTRY:
        return factory(arg, options)
    try:  # a MODULE:FACTORY of the user's: say so when it is no backend factory
        backend = factory(arg, options)
    except TypeError as exc:
        raise ValueError(f"{spec} is not an LLM backend factory (one called as FACTORY(arg, "
                         f"options)): {exc}") from None
    if not callable(getattr(backend, "chat", None)):
        raise ValueError(f"{spec} made no LLM backend (it has no chat method)")
    return backend
