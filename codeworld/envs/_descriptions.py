"""Environment descriptions for the LLM, built from the installed Gymnasium class docstrings.

As in the CWMB paper, the description of an environment is its Gymnasium documentation: the
sections that say what the environment is (Description, Action Space, Observation Space, Rewards,
Starting State, Episode End, and MountainCar's Transition Dynamics) are kept; arguments, version
history, references, code examples and links are dropped. The ``-v4`` MuJoCo classes have no
docstring in Gymnasium 1.4, so their description comes from the ``-v5`` class of the same robot
(a short note says so). A fixed note on the world-model contract and codeworld's flat state
encoding closes every description.

Descriptions are built at run time (`describe`) and also written to ``codeworld/data/descriptions/`` by
`write_descriptions`, so that they can be reviewed in the repository.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from codeworld._paths import data_dir
from codeworld.envs.registry import EnvSpec, list_envs, resolve_env

# Top-level docstring sections kept, matched on their lower-cased title without a trailing colon.
KEPT_SECTIONS = (
    "description",
    "action space",
    "observation space",
    "transition dynamics",
    "reward",
    "rewards",
    "starting state",
    "episode end",
    "episode truncation",
)

DESCRIPTION_DIR = data_dir("descriptions")

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*$")  # CommonMark: up to 3 spaces before
_MD_LINK = re.compile(r"\[([^\]]*)\]\((?:[^()]|\([^()]*\))*\)")
_HTML_TAG = re.compile(r"<[^>]+>")
# A citation mark is a bracketed number holding a link to the references (``[<a href="#ref">1</a>]``);
# a bare bracketed number or pair is content (a grid cell ``[3, 11]``, a state ``[36]``) and stays.
_CITATION = re.compile(r"\s*\[\s*<a\s[^>]*>\s*\d+\s*</a>\s*\]")
_URL = re.compile(r"\s*\(?https?://\S+\)?")
_TABLE_RULE = re.compile(r":?-+:?")


def _docstring_class(spec: EnvSpec) -> tuple[type, str]:
    """The Gymnasium class whose docstring describes `spec`, and a note when it is a v5 stand-in."""
    import gymnasium as gym

    entry_point = gym.spec(spec.gym_id).entry_point
    if callable(entry_point):  # registered with the class (or a factory) itself
        return entry_point, ""
    module_name, class_name = entry_point.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    note = ""
    if not (cls.__doc__ or "").strip() and module_name.endswith("_v4"):
        cls = getattr(importlib.import_module(module_name[:-3] + "_v5"), class_name)
        note = "(From the documentation of the v5 version of this environment.)"
    if spec.shipped and spec.gym_id != spec.env_id:
        note = (f"(From the documentation of {spec.gym_id}, which codeworld runs as {spec.env_id}; "
                "the observation, actions and reward terms are the same.)")
    return cls, note


def _clean(text: str, compact: bool = True) -> str:
    """Drop links, HTML tags, citation marks and fenced code blocks from docstring markdown, and
    compact its tables (`compact_tables`; ``compact`` off keeps them as written)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = _CITATION.sub("", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _URL.sub("", text)
    if compact:
        text = compact_tables(text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _compact_table(lines: list[str]) -> list[str]:
    rows = [_cells(line) for line in lines]
    width = len(rows[0])
    separator = len(rows) > 1 and all(_TABLE_RULE.fullmatch(c) for c in rows[1])
    if not separator or any(len(row) != width for row in rows):
        return [" ".join(line.split()) for line in lines]
    header, body = rows[0], rows[2:]
    same = [j for j in range(width) if len(body) >= 3 and len({row[j] for row in body}) == 1]
    keep = [j for j in range(width) if j not in same] or list(range(width))
    out = ["| " + " | ".join(row[j] for j in keep) + " |" for row in [header] + body]
    out.insert(1, "|" + "---|" * len(keep))
    shared = [f"{header[j] or f'column {j + 1}'} = {body[0][j]}" for j in same if j not in keep]
    if shared:
        out.append("(In every row: " + ", ".join(shared) + ".)")
    return out


def compact_tables(text: str) -> str:
    """Markdown tables with their cells' padding removed, and a column that holds the same value
    in every row (three rows or more) said once under its table instead of in each row.

    The documentation's tables pad every cell to the widest one and repeat bounds such as
    ``-Inf | Inf`` on each of dozens of rows; both cost prompt tokens and say nothing more.
    """
    lines, out, table = text.split("\n"), [], []
    for line in lines + [""]:
        if line.strip().startswith("|") and line.strip().endswith("|") and len(line.strip()) > 1:
            table.append(line)
            continue
        if table:
            out += _compact_table(table)
            table = []
        out.append(line)
    return "\n".join(out[:-1])


def _sections(doc: str) -> list[tuple[str, str]]:
    """Split a docstring into (top-level title, body) pairs; text before any heading has title ''.

    Subheadings deeper than the first heading level found stay inside their section.
    """
    lines = inspect.cleandoc(doc).splitlines()
    # A "#" line inside a fenced code block is a comment, not a heading.
    in_code = False
    headings: list = []
    for line in lines:
        if line.lstrip().startswith("```"):
            in_code = not in_code
        headings.append(None if in_code else _HEADING.match(line))
    levels = [len(m.group(1)) for m in headings if m]
    top = min(levels) if levels else 0
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line, match in zip(lines, headings):
        if match and len(match.group(1)) == top:
            sections.append((match.group(2).rstrip(":").strip(), []))
        else:
            sections[-1][1].append(line)
    return [(title, "\n".join(body)) for title, body in sections]


def contract_note(spec: EnvSpec) -> str:
    """The fixed note on the world-model contract and the state/action encoding of `spec`."""
    if spec.action_doc:
        action = spec.action_doc
    elif spec.discrete:
        action = f"an int in 0..{spec.n_actions - 1}"
    else:
        action = (f"a 1-D float64 numpy array of {spec.action_dim} values in "
                  f"[{min(spec.action_low):g}, {max(spec.action_high):g}]")
    if spec.state_doc:
        state = spec.state_doc
    elif spec.obs_dim == 1:
        state = "1 number (the discrete observation)"
    else:
        state = f"{spec.obs_dim} numbers, in the order of the observation above"
    return (
        "## World-model contract\n\n"
        "Write a Python module with a pure function `step(state, action) -> (next_state, reward, done)`.\n"
        f"`state` is a 1-D float64 numpy array of {state}; `action` is {action}.\n"
        "Return `next_state` in the same encoding, `reward` as a float and `done` as a bool that is\n"
        "True only when the episode terminates (never for a time-limit truncation).\n"
        "Use only `numpy` and `math`, module-level constants and helper functions."
    )


def _spaces_text(spec: EnvSpec) -> str:
    """What the spaces say, for an environment whose documentation says nothing."""
    if spec.discrete:
        actions = f"{spec.n_actions} discrete actions"
    else:
        actions = (f"a vector of {spec.action_dim} values between {list(spec.action_low)} and "
                   f"{list(spec.action_high)}")
    return (f"No documentation was found for this environment.\n\nObservation: {spec.obs_dim} "
            f"numbers. Actions: {actions}.")


def describe(env: EnvSpec | str, contract: bool = True, compact: bool = True) -> str:
    """The description of an environment: the spec's own (a user's file, a dataset's), else built
    from the installed Gymnasium docstring, cleaned as for CWMB.

    Args:
        env: its spec, or any id `codeworld.envs.get_spec` accepts.
        contract: append the note on the world-model contract.
        compact: compact the documentation's tables (`compact_tables`); off gives the text that
            runs saved before tables were compacted were prompted with.
    """
    spec = resolve_env(env)
    if spec.description is not None:
        text = spec.description.strip()
        if contract:
            text += "\n\n" + contract_note(spec)
        return text + "\n"
    if not spec.simulator:
        raise ValueError(f"{spec.env_id}: a logged dataset needs a description (--description FILE.md)")
    cls, note = _docstring_class(spec)
    parts = [f"# {spec.env_id}"]
    if note:
        parts.append(note)
    if not inspect.cleandoc(cls.__doc__ or "").strip():
        parts.append(_spaces_text(spec))
    for title, body in _sections(cls.__doc__ or ""):
        body = _clean(inspect.cleandoc(body) if not spec.shipped else body, compact)
        if not body:
            continue
        if title == "":
            parts.append(body)
        elif title.lower() in KEPT_SECTIONS:
            parts.append(f"## {title}\n\n{body}")
    if contract:
        parts.append(contract_note(spec))
    return "\n\n".join(parts) + "\n"


def description_path(env: EnvSpec | str, directory: Path | str | None = None) -> Path:
    """Where the reviewable copy of an environment's description lives."""
    from codeworld.envs.derive import safe_name

    return Path(directory or DESCRIPTION_DIR) / f"{safe_name(resolve_env(env).env_id)}.md"


def write_descriptions(directory: Path | str | None = None,
                       envs: list[EnvSpec | str] | None = None) -> list[Path]:
    """Write the descriptions (markdown) of `envs`, specs or ids (default: all 18), into `directory`.

    Raises:
        RunWriteError: a file could not be written (an OSError naming it).
    """
    from codeworld._files import write_atomic

    paths = []
    for env in envs or list_envs():
        spec = resolve_env(env)
        path = description_path(spec, directory)
        write_atomic(path, describe(spec))  # its folder made; never half a file
        paths.append(path)
    return paths
