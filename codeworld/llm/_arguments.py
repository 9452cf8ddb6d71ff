"""The LLM options of every command that calls an LLM: ``--llm SPEC``, the client's retries and
cache, and the chosen backend's own settings.

A backend's settings are the fields of its options dataclass (see `codeworld.llm.backends`), and
each field of a registered backend's options is a ``--llm-FIELD`` flag made from the field: its
help is the field's line in the class's docstring, its default the field's own (shown in the
help, never restated: a flag not given leaves the field at its default), its value read by the
field's type (`codeworld._overrides`). ``--llm-set FIELD=VALUE`` sets a field of any backend,
one given as ``MODULE:FACTORY`` included. A flag that the chosen backend does not have is an
error that lists the ones it has.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import re
import typing
from typing import Any

from codeworld.llm.backends import (
    backend_names,
    factories,
    make_options,
    options_class,
    resolve,
)
from codeworld.llm._client import DEFAULT_SPEC, LLMClient, LLMConfig, RetryPolicy, make_llm

# Fields the caller sets rather than the user: ``slots``, the requests it sends at once.
CALLER_FIELDS = frozenset({"slots"})
_DEST = "llm_option_"


def field_docs(cls: type) -> dict[str, str]:
    """Each field's text in the ``Attributes:`` sections of a dataclass's docstrings (its bases'
    included), by name; ``"a, b: text"`` documents both."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        lines = inspect.cleandoc(klass.__dict__.get("__doc__") or "").splitlines()
        inside, indent, name = False, None, None
        for line in lines:
            if line.strip() == "Attributes:":
                inside, indent = True, None
                continue
            if not inside or not line.strip():
                continue
            depth = len(line) - len(line.lstrip())
            if depth == 0:
                break
            indent = depth if indent is None else indent
            match = re.match(r"\s*([\w, ]+):\s*(.*)", line)
            if depth == indent and match:
                name = [n.strip() for n in match.group(1).split(",")]
                for n in name:
                    docs[n] = match.group(2)
            elif name:
                for n in name:
                    docs[n] += " " + line.strip()
    return docs


def _first_sentence(text: str) -> str:
    text = text.replace("``", "").replace("`", "")
    end = re.search(r"\.(\s|$)", text)
    return (text[:end.start()] if end else text).strip()


def _shown(value: Any) -> str:
    return str(value).lower() if value is None or isinstance(value, bool) else str(value)


def backend_fields() -> dict[str, list[tuple[str, dataclasses.Field, str]]]:
    """The settings of the registered backends, by field name: ``(backend, field, doc)`` for each
    backend that has it, in registry order. A backend whose module cannot be imported offers no
    flags (choosing it reports why)."""
    out: dict[str, list[tuple[str, dataclasses.Field, str]]] = {}
    for name, factory in factories().items():
        cls = options_class(factory)
        if cls is None:
            continue
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            if f.name not in CALLER_FIELDS:
                out.setdefault(f.name, []).append((name, f, docs.get(f.name, "")))
    return out


def default_llm_spec() -> str:
    """The LLM of a command given no ``--llm``: ``$CODEWORLD_LLM``, else the embedded model."""
    return os.environ.get("CODEWORLD_LLM", DEFAULT_SPEC)


def add_llm_arguments(parser: argparse.ArgumentParser, *, continues_runs: bool = False) -> None:
    """Adds the options that choose and configure the LLM to a command's parser.

    Args:
        parser: the command's parser.
        continues_runs: the command can continue a saved run, which keeps its own LLM: ``--llm``
            then defaults to None (`default_llm_spec` for a new run), so that the command can
            tell a given ``--llm`` from none.
    """
    group = parser.add_argument_group("LLM")
    group.add_argument("--llm", default=None if continues_runs else default_llm_spec(),
                       metavar="SPEC",
                       help="local (embedded, the default), openai:MODEL, hf:MODEL, scripted:FILE, "
                            f"another registered backend (registered: {', '.join(backend_names())}), "
                            "or MODULE:FACTORY[:ARG] for a backend in a module of your own "
                            + ("(default: a continued run's own; a new run's from CODEWORLD_LLM, "
                               "else local)" if continues_runs else
                               "(default from CODEWORLD_LLM, else local)"))
    group.add_argument("--llm-set", action="append", default=[], metavar="FIELD=VALUE",
                       help="a setting of the chosen backend, e.g. --llm-set threads=2; any "
                            "backend's, one given as MODULE:FACTORY included (repeatable)")
    group.add_argument("--llm-retries", type=int, default=None, metavar="N",
                       help=f"tries per request in all (default {RetryPolicy().max_attempts})")
    group.add_argument("--llm-cache-dir", default=None, metavar="DIR",
                       help="completion cache (default: ~/.cache/codeworld/llm)")
    group.add_argument("--no-llm-cache", action="store_true", help="neither read nor write the cache")
    groups: dict[str, Any] = {}
    for name, owners in backend_fields().items():
        flag = f"--llm-{name.replace('_', '-')}"
        if flag in parser._option_string_actions:
            continue  # taken by an option above (--llm-set reaches the field)
        backend, f, doc = owners[0]
        defaults = {b: _shown(field.default) for b, field, _ in owners
                    if field.default is not dataclasses.MISSING}
        others = ", ".join(b for b, _, _ in owners[1:])
        if len(set(defaults.values())) <= 1:
            where = [f"also --llm {others}"] if others else []
            where += [f"default {d}" for d in list(defaults.values())[:1]]
        else:
            where = [f"{b}: default {d}" for b, d in defaults.items()]
        if backend not in groups:
            groups[backend] = parser.add_argument_group(f"LLM: settings of --llm {backend}")
        groups[backend].add_argument(
            flag, dest=_DEST + name, default=None, metavar=name.upper(),
            help=f"{_first_sentence(doc)} ({'; '.join(where)})".replace("%", "%%"))


_SECRET = re.compile(r"key|token|secret|password", re.IGNORECASE)


def llm_argv(args: argparse.Namespace) -> list[str]:
    """The options of `add_llm_arguments` as given, for a command to print (a resume hint):
    ``--llm SPEC`` and each setting given, secrets (``api_key``) left out, since they come from
    the environment again."""
    argv = ["--llm", args.llm]
    settings = {key[len(_DEST):]: value for key, value in vars(args).items()
                if key.startswith(_DEST) and value is not None}
    for item in getattr(args, "llm_set", None) or []:
        key, _, value = item.partition("=")
        settings[key.strip()] = value.strip()
    for key, value in settings.items():
        if not _SECRET.search(key):
            argv += ["--llm-set", f"{key}={value}"]
    if getattr(args, "llm_retries", None) is not None:
        argv += ["--llm-retries", str(args.llm_retries)]
    if getattr(args, "llm_cache_dir", None):
        argv += ["--llm-cache-dir", str(args.llm_cache_dir)]
    if getattr(args, "no_llm_cache", False):
        argv.append("--no-llm-cache")
    return argv


def llm_from_args(args: argparse.Namespace, run_dir: str | None = None, *, slots: int = 1) -> LLMClient:
    """The client the options of `add_llm_arguments` describe.

    Args:
        args: the parsed options.
        run_dir: the run directory whose completions log the client appends to (None: none).
        slots: requests the caller sends at once (a search's ``parallel``); a backend whose
            options have a ``slots`` field (the local model) decodes that many together.

    Raises:
        ValueError: an unknown backend, a setting it does not have, or a value it refuses.
    """
    from codeworld._overrides import parse_overrides

    spec = args.llm
    factory, _ = resolve(spec)
    cls = options_class(factory)
    given = {key[len(_DEST):]: value for key, value in vars(args).items()
             if key.startswith(_DEST) and value is not None}
    given.update(parse_overrides(getattr(args, "llm_set", None) or [], "--llm-set"))
    known = {f.name for f in dataclasses.fields(cls)} if cls is not None else set()
    unknown = sorted(set(given) - known)
    if unknown:
        theirs = ", ".join(sorted(known - CALLER_FIELDS)) or "none"
        raise ValueError(f"the LLM backend {spec.partition(':')[0]!r} has no setting "
                         f"{', '.join(unknown)} (its settings: {theirs})")
    if "slots" in known:  # the caller's (CALLER_FIELDS), unless set with --llm-set
        given.setdefault("slots", max(1, slots))
    # A text setting keeps "none" as text (--llm-speculation none): the field's None default is
    # had by leaving the flag out.
    hints = typing.get_type_hints(cls) if cls is not None else {}
    texts = {k: v for k, v in given.items() if isinstance(v, str) and hints.get(k) == str | None}
    try:
        options = make_options(factory, {k: v for k, v in given.items() if k not in texts})
        options = dataclasses.replace(options, **texts) if texts else options
    except ValueError as exc:
        raise ValueError(f"--llm {spec}: {exc}") from None
    retries = getattr(args, "llm_retries", None)
    retry = RetryPolicy(max_attempts=max(1, retries)) if retries is not None else RetryPolicy()
    return make_llm(LLMConfig(spec=spec, options=options, retry=retry,
                              cache_dir=getattr(args, "llm_cache_dir", None),
                              use_cache=not getattr(args, "no_llm_cache", False), run_dir=run_dir))
