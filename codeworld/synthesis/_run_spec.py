"""What a synthesis run is and where it stands: the contents of its ``run.json``.

`RunSpec` is the one description of a run that every writer builds (``codeworld synthesize``,
``codeworld demo``, the CWMB and APPS jobs, the WorldCoder agent's rewrites) and every reader gets
back (resume, ``codeworld show``); `RunStatus` is the set of states a run can be left in. Only
`RunDir` writes the file, from a `RunSpec`.

The file is flat JSON, one key per field. A field that is None is left out, except ``buffer`` in a
run that scores on a buffer (None there means the committed one). Keys this version does not know
are kept in ``extra`` and written back, so files written by earlier or later versions survive a
resume. Files from before the spec existed load as they are: each writer used a subset of these
keys (the demo wrote no version, only a CWMB job wrote ``variant`` and ``job``), and the APPS job's
``problem`` and an agent rewrite's ``level``, ``reason``, ... land in ``extra``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeworld.synthesis.types import MethodConfig

KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
              list: "a list", dict: "an object", type(None): "null"}
"""How a message names each kind of JSON value."""


def _is_kind(value: Any, kinds: tuple[type, ...]) -> bool:
    """Whether ``value`` is JSON data of one of ``kinds`` (a bool is no number; an int is a
    float)."""
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, kinds)


def kind_problem(name: str, value: Any, kinds: tuple[type, ...]) -> str | None:
    """What is wrong with a record's field ``name`` holding ``value`` where JSON data of one of
    ``kinds`` belongs, in a few words; None when nothing is."""
    if _is_kind(value, kinds):
        return None
    wanted = " or ".join(KIND_NAMES.get(k, k.__name__) for k in kinds)
    shown = repr(value)
    return f"{name!r} should be {wanted}, not {shown[:40] + '...' if len(shown) > 40 else shown}"


class RunStatus(str, enum.Enum):
    """Where a run stands; the value is what ``run.json`` and ``codeworld show`` say."""

    RUNNING = "running"
    """The search is under way (or the process died without saying so: resume it)."""
    NOT_STARTED = "not started"
    """The LLM or the environment could not be set up; no call was made in this session."""
    INTERRUPTED = "interrupted"
    """The LLM failed or the user stopped the run; resuming goes on from the saved calls."""
    STOPPED_AT_TIME_LIMIT = "stopped at the time limit"
    """The session's time ran out with budget left; resuming goes on."""
    FINISHED = "finished"
    """The search spent its budget or found a perfect program."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def ended(cls, stopped_by_time_limit: bool) -> RunStatus:
        """The status of a search that returned: stopped at its time limit, or finished."""
        return cls.STOPPED_AT_TIME_LIMIT if stopped_by_time_limit else cls.FINISHED


@dataclass(frozen=True)
class RunSpec:
    """The contents of ``run.json``: what was run, with what, and where it stands.

    Attributes:
        method: the synthesis method's registry name (``gif-mcts``, ``worldcoder``, ...), or the
            name of a search run by hand (``worldcoder-agent-rewrite``).
        variant: the method with its ablation variant, for a CWMB job (``gif-mcts/no-fix``).
        env_id: the environment whose world model is searched for (None for APPS and the agent).
        world: the kind of world searched (`codeworld.worlds.world_kinds`; None: ``cwmb``, as
            in every run saved before kinds were recorded).
        target: what the world is built for, as the command line named it (a CWMB env id, an
            object level, an APPS problem's path; None: ``env_id``).
        llm: the LLM spec of the latest session (``local``, ``openai:MODEL``, ``scripted:FILE``).
        budget: the most LLM calls in the whole run.
        seed: the run's seed.
        mode: the scoring mode used as the search signal (``sound`` or ``paper``).
        buffer: the replay buffer of the search (None: the environment's committed one).
        timeout_s: seconds one program may take over the whole buffer.
        config: the method's config as `config_to_json` data.
        status: where the run stands (None in runs that do not track it: APPS, agent rewrites).
        job: the experiment job that made the run, as `Job.to_json` data.
        created: when the run was started, ISO 8601 in UTC.
        codeworld_version: the version that started it.
        description_file: the environment description given on the command line, if any.
        finish: the `FinishConfig` switches of the latest session (``fit_constants``,
            ``speed_step``).
        split: the run's `EpisodeSplit` as JSON data (which episodes are training and which
            held out); read back on resume, so a resumed run keeps its split.
        extra: keys the spec does not interpret (an APPS problem, an agent rewrite's level and
            reason, keys from other versions), written back as they are.
    """

    method: str
    variant: str | None = None
    env_id: str | None = None
    world: str | None = None
    target: str | None = None
    llm: str | None = None
    budget: int | None = None
    seed: int = 0
    mode: str | None = None
    buffer: str | None = None
    timeout_s: float | None = None
    config: dict | None = None
    status: RunStatus | None = None
    job: dict | None = None
    created: str | None = None
    codeworld_version: str | None = None
    description_file: str | None = None
    finish: dict | None = None
    split: dict | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status is not None and not isinstance(self.status, RunStatus):
            try:
                object.__setattr__(self, "status", RunStatus(self.status))
            except ValueError:
                raise ValueError(f"unknown run status {self.status!r} (known: "
                                 f"{', '.join(repr(s.value) for s in RunStatus)})") from None

    @classmethod
    def new(cls, method: str, config: MethodConfig | None = None, **fields: Any) -> RunSpec:
        """The spec of a run starting now, stamped with the time and the codeworld version.

        Args:
            method: the method's name.
            config: the method's config dataclass (stored as `config_to_json` data), or None.
            **fields: the other fields.
        """
        from codeworld._version import __version__
        from codeworld.synthesis.registry import config_to_json

        stamp = {"created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                 "codeworld_version": __version__}
        return cls(method, config=None if config is None else config_to_json(config),
                   **{**stamp, **fields})

    @property
    def world_kind(self) -> str:
        """The kind of world the run searched (``cwmb`` in a run that records none)."""
        return self.world or "cwmb"

    @property
    def world_target(self) -> str | None:
        """What the run's world is built for (its env id in a run that records no target)."""
        return self.target if self.target is not None else self.env_id

    def replace(self, **changes: Any) -> RunSpec:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """The ``run.json`` data (see the module docstring for which keys are written)."""
        out: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name == "extra":
                continue
            if value is not None or (item.name == "buffer" and self.mode is not None):
                out[item.name] = value.value if isinstance(value, RunStatus) else value
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, data: dict) -> RunSpec:
        """Read ``run.json`` data from this version or an earlier one.

        Raises:
            ValueError: the data names no method, has a field of the wrong kind (``"budget":
                "ten"``) or an unknown status.
        """
        if not isinstance(data, dict) or "method" not in data:
            raise ValueError("run.json names no method")
        known = {item.name for item in dataclasses.fields(cls)} - {"extra"}
        for name, hint in typing.get_type_hints(cls).items():
            if name not in known or name not in data:
                continue
            kinds = tuple(str if k is RunStatus else k for k in typing.get_args(hint) or (hint,))
            problem = kind_problem(name, data[name], kinds)
            if problem:
                raise ValueError(problem)
        return cls(**{k: v for k, v in data.items() if k in known},
                   extra={k: v for k, v in data.items() if k not in known})
