"""Evaluation protocols by name, and the reference table of random and oracle returns under them.

A protocol fixes what the normalized return is measured over: the episodes, their step cap, and
the planner's config. ``paper`` is the CWMB paper's (Dainese et al., 2024): 10 episodes of up to
the environment's own step limit (1,000 on the MuJoCo robots), MCTS or CEM with the paper's
settings (CEM: plans of 100 steps, 20 iterations of 1,000 sequences, 100 elites, the best sequence
executed open loop before planning again), for the oracle and the model alike. Where the paper's
code and text differ (docs/planning.md, "The paper's protocol"), the protocol takes:

* the plan no longer than an episode may run (the code's ``T = min(T, max_episode_steps)``:
  Reacher's 50 steps; the text says 100 for every environment);
* 10 episodes (the text; the code's script defaults to 2);
* the plan is the best sequence seen in any iteration (the code returns the best of the last;
  on a deterministic simulator the best seen is never worse, `codeworld.planning._cem.CemConfig`).

``short`` is the cut-short planning the continuous grids used while the oracle stepped the
simulator from Python (3 episodes of at most 100 steps), kept to compare with those tables.

Random and oracle returns depend only on the environment, the seed and the protocol, so they are
computed once (``benchmarks/reference_returns.py``) and stored with the commit and versions that
made them in the package's reference table, ``codeworld/data/reference_returns.json``;
`codeworld.planning.evaluate.evaluate` reads them from there before its cache, so a grid spends
its time on the model.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec


@dataclass(frozen=True)
class Protocol:
    """A named evaluation setting.

    Attributes:
        name: its name (``--protocol`` on the command line, the reference table's key).
        episodes: seeded episodes per policy.
        max_steps: cap on steps per episode (None: the environment's own limit).
        summary: one line for help texts and tables.
    """

    name: str
    episodes: int
    max_steps: int | None
    summary: str


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol("paper", 10, None, "the CWMB paper's: 10 episodes up to the env's step limit, the paper's "
                                "planner settings (CEM 100 x 20 x 1000, 100 elites, open loop)"),
    Protocol("short", 3, 100, "cut short: 3 episodes of at most 100 steps, the paper's planner settings"),
)}


def get_protocol(protocol: str | Protocol) -> Protocol:
    """The protocol called `protocol` (a `Protocol` as it is).

    Raises:
        KeyError: an unknown name (the message lists the known ones).
    """
    if isinstance(protocol, Protocol):
        return protocol
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        raise KeyError(f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOLS)})") from None


def resolve_protocol(protocol: str | None, episodes: int | None = None,
                     max_steps: int | None = None) -> tuple[Protocol | None, int, int | None]:
    """What a command's ``--protocol``, ``--episodes`` and ``--max-steps`` ask for together.

    Returns:
        (the protocol, or None when there is none or either number overrides it (a record names a
        protocol only when it followed it), the episodes, the step cap). Where a number is not
        given it is the protocol's, else 10 episodes and the environment's own limit.

    Raises:
        KeyError: an unknown protocol (the message lists the known ones).
        ValueError: fewer than one episode, or a cap below one step.
    """
    chosen = None if protocol is None else get_protocol(protocol)
    if episodes is not None and episodes < 1:
        raise ValueError("--episodes must be at least 1")
    if max_steps is not None and max_steps < 1:
        raise ValueError("--max-steps must be at least 1")
    if chosen is None:
        return None, 10 if episodes is None else episodes, max_steps
    followed = (episodes in (None, chosen.episodes)) and (max_steps in (None, chosen.max_steps))
    return (chosen if followed else None, chosen.episodes if episodes is None else episodes,
            chosen.max_steps if max_steps is None else max_steps)


def episode_cap(spec: EnvSpec, max_steps: int | None) -> int | None:
    """The most steps an episode may run: `max_steps`, else the environment's limit."""
    return max_steps if max_steps is not None else spec.max_episode_steps


def default_config(spec: EnvSpec, max_steps: int | None = None, planner: str | None = None):
    """The paper's config of the env's planner (or `planner`), its plans no longer than an episode
    may run (the paper's code: a CEM horizon of ``min(100, step limit)``)."""
    from codeworld.planning.registry import make_config

    config = make_config(planner or spec.planner)
    cap = episode_cap(spec, max_steps)
    if cap is not None and "horizon" in {f.name for f in fields(config)} and config.horizon > cap:
        # replan_every must stay within the horizon.
        every = config.replan_every
        config = replace(config, horizon=cap, replan_every=None if every is None else min(every, cap))
    return config


# -- the reference table --------------------------------------------------------------------------

REFERENCE_FILE = "reference_returns.json"


def reference_path() -> Path:
    """The package's reference table (``$CODEWORLD_REFERENCE_RETURNS`` names another file)."""
    from codeworld._paths import data_dir

    explicit = os.environ.get("CODEWORLD_REFERENCE_RETURNS")
    return Path(explicit) if explicit else data_dir(REFERENCE_FILE)


def versions(spec: EnvSpec | None = None) -> dict[str, str]:
    """The simulator versions results depend on: Gymnasium's, and MuJoCo's for a MuJoCo env (or
    for `spec` None, when installed)."""
    import gymnasium

    out = {"gymnasium": gymnasium.__version__}
    if spec is None or spec.family == "mujoco":
        try:
            import mujoco

            out["mujoco"] = mujoco.__version__
        except ImportError:
            pass
    return out


def reference_key(policy: str, env_id: str, config: dict | None, episodes: int, seed: int,
                  max_steps: int | None) -> dict[str, Any]:
    """What identifies a reference entry: the policy, env, planner config (None for the random
    policy; speed-only fields left out), episodes, seed and step cap."""
    return {"policy": policy, "env_id": env_id, "config": config, "episodes": episodes, "seed": seed,
            "max_steps": max_steps}


def load_reference(path: Path | None = None) -> list[dict]:
    """The reference table's entries ([] when there is no table)."""
    path = path or reference_path()
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("entries", []))


def find_reference(key: dict[str, Any], path: Path | None = None) -> dict | None:
    """The stored result for `key` made with the simulator versions installed here, or None."""
    mine = versions()
    for entry in load_reference(path):
        if entry["key"] == key and all(mine.get(k) == v for k, v in entry.get("versions", {}).items()):
            return entry
    return None


def store_reference(key: dict[str, Any], stats: dict, meta: dict, spec: EnvSpec,
                    path: Path | None = None) -> None:
    """Add (or replace) the entry for `key` (`spec`'s env), with the simulator versions and `meta`
    (commit, protocol, ...); the file is written at once, so a run may stop any time after."""
    path = path or reference_path()
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data.setdefault("about", "Random and oracle returns per env, seed and protocol (codeworld.planning."
                             "protocol); written by benchmarks/reference_returns.py, read by evaluate().")
    entries = [e for e in data.get("entries", []) if e["key"] != key]
    entries.append({"key": key, "versions": versions(spec), **meta, "stats": stats})
    entries.sort(key=lambda e: (e["key"]["env_id"], e["key"]["policy"], e["key"]["seed"], e["key"]["episodes"]))
    data["entries"] = entries
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
