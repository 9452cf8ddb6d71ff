"""The registry of LLM backends: a spec string names a backend and its argument.

* ``local``: the embedded Qwen2.5-Coder-1.5B-Instruct (`codeworld.llm.local`);
* ``openai:MODEL``: any OpenAI-compatible endpoint (`codeworld.llm.openai_compatible`);
* ``hf:MODEL``: a Hugging Face ``transformers`` model (`codeworld.llm.hf`);
* ``scripted:FILE``: replays completions from a file (`codeworld.llm.scripted`).

Each backend lives in its own module and turns ``(messages, Sampling)`` into a `RawCompletion`
(see `codeworld.llm.types.Backend`); the client (`codeworld.llm.client`) adds retries, caching
and accounting around it. A backend's module is imported only when its name is chosen, so that an
optional dependency is needed only by those who use it. `register_backend` adds a new name.
"""

from __future__ import annotations

from typing import Callable

from codeworld.llm.types import Backend, BackendOptions

BackendFactory = Callable[[str, BackendOptions], Backend]
_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Makes ``name`` (and ``name:ARG``) a valid backend spec. ``factory(arg, options)`` builds it."""
    if not name.isidentifier():
        raise ValueError(f"backend name must be an identifier, got {name!r}")
    _REGISTRY[name] = factory


def backend_names() -> list[str]:
    """The registered backend names."""
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, str]:
    """Splits ``"openai:gpt-4o-mini"`` into ``("openai", "gpt-4o-mini")``; ``"local"`` into
    ``("local", "")``."""
    name, _, arg = spec.strip().partition(":")
    return name, arg


def make_backend(spec: str, options: BackendOptions | None = None) -> Backend:
    """Builds the backend a spec string names.

    Raises:
        ValueError: an unknown backend name, or a missing argument (``openai:`` needs a model).
    """
    name, arg = parse_spec(spec)
    if name not in _REGISTRY:
        raise ValueError(f"unknown LLM backend {name!r} in {spec!r}; known: "
                         + ", ".join(f"{n}" for n in backend_names()))
    return _REGISTRY[name](arg, options or BackendOptions())


def _local(arg: str, options: BackendOptions) -> Backend:
    from codeworld.llm.local import LocalBackend

    if arg:
        raise ValueError(f"the local backend takes no argument, got local:{arg}")
    return LocalBackend(options)


def _openai(arg: str, options: BackendOptions) -> Backend:
    from codeworld.llm.openai_compatible import OpenAIBackend

    return OpenAIBackend(arg, options)


def _hf(arg: str, options: BackendOptions) -> Backend:
    from codeworld.llm.hf import HFBackend

    return HFBackend(arg, options)


def _scripted(arg: str, options: BackendOptions) -> Backend:
    from codeworld.llm.scripted import ScriptedBackend

    if not arg:
        raise ValueError("the scripted backend needs a file: --llm scripted:FILE")
    return ScriptedBackend.from_file(arg)


register_backend("local", _local)
register_backend("openai", _openai)
register_backend("hf", _hf)
register_backend("scripted", _scripted)
