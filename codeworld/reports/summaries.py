"""Run summaries as data: a synthesis run's calls, scores and accounting, an agent run's levels and
rewrites. ``codeworld show`` prints them and the report pages draw them; both read run directories
through `codeworld.synthesis.RunDir` only, so runs written by earlier versions are read too.
"""

from __future__ import annotations

import json
from pathlib import Path


def tree_nodes(tree: dict) -> list[dict]:
    """The programs of a run as ``{call, parent_call, action, score, buggy, ...}`` records.

    ``parent_call`` is the call that wrote the parent program, or -1 for the root (the empty
    program of GIF-MCTS, "from scratch" for REx and zero-shot). The records are the search's
    method-neutral ``programs`` (`codeworld.synthesis.types.Search.programs`), with what a
    GIF-MCTS tree or a REx pool adds (value, visits, refinements); runs saved before searches
    wrote them are read from the tree or pool. Pending nodes are left out.
    """
    extra: dict[int, dict] = {}
    for node in tree.get("nodes", []):
        if node["id"] and not node.get("pending") and not node.get("seed"):
            # the call that wrote it (a tree with seed nodes numbers nodes and calls apart)
            extra[node.get("call", node["id"] - 1)] = {"value": node.get("value"), "visits": node.get("visits"),
                                     "dead": node.get("dead", False),
                                     "parent_call": node["parent"] - 1, "action": node["action"],
                                     "score": node["score"], "buggy": node["buggy"]}
    for entry in tree.get("pool", []):
        extra[entry["call"]] = {"refined": entry.get("refined"), "parent_call": entry["parent"],
                                "action": entry["action"], "score": entry["score"],
                                "buggy": entry["buggy"]}
    programs = tree.get("programs")
    if programs is None:  # a run from before the method-neutral records
        programs = [{"call": call, **record} for call, record in extra.items() if call >= 0]
    out = [{**extra.get(p["call"], {}), **p} for p in programs]
    out.sort(key=lambda n: n["call"])
    return out


# what a world's seed programs (`codeworld.synthesis.types.Seed`) are called in summaries
SEED_NAMES = {"data": "the data model", "floor": "the floor (the do-nothing model)"}


def summarize(run_path: Path) -> dict:
    """The summary of a run directory as data."""
    from codeworld.synthesis import RunDir

    run_dir = RunDir(run_path)
    spec = run_dir.spec
    tree = run_dir.read_json("tree.json") if (run_path / "tree.json").is_file() else {}
    accounting = run_dir.read_json("accounting.json") if (run_path / "accounting.json").is_file() else {}
    nodes = tree_nodes(tree)
    reports = run_dir.program_reports()
    best_so_far = float("-inf")
    per_call = []
    mix: dict[str, dict[str, int]] = {}
    for node in nodes:
        score = 0.0 if node["buggy"] else float(node["score"])
        best_so_far = max(best_so_far, score)
        held = ((reports.get(node["call"]) or {}).get("report") or {}).get("heldout") or {}
        per_call.append({"call": node["call"] + 1, "action": node["action"],
                         # a call's number, a seed's label (``data``), or None: the root
                         "parent": node["parent_call"] + 1 if node["parent_call"] >= 0
                         else node.get("parent_seed"),
                         "score": score, "buggy": node["buggy"], "best": best_so_far,
                         "heldout": held.get("score"),
                         "duplicate_of": (reports.get(node["call"]) or {}).get(
                             "report", {}).get("duplicate_of")})
        counts = mix.setdefault(node["action"], {"calls": 0, "buggy": 0})
        counts["calls"] += 1
        counts["buggy"] += int(node["buggy"])
    best = run_dir.read_json("best_report.json") if (run_path / "best_report.json").is_file() else None
    return {
        "run_dir": str(run_path), "method": spec.method, "env_id": spec.env_id,
        # what the programs were written for: the env, an agent rewrite's level, an APPS problem
        "target": spec.env_id or spec.extra.get("level") or spec.extra.get("problem"),
        "llm": spec.llm, "seed": spec.seed, "budget": spec.budget,
        "status": None if spec.status is None else spec.status.value, "calls": len(nodes),
        "per_call": per_call,
        "action_mix": mix, "accounting": accounting,
        "best": None if best is None else {
            "call": best["call"] + 1, "score": 0.0 if best["buggy"] else best["score"],
            "buggy": best["buggy"], "path": str(run_path / "best_model.py"),
            **({"seed": best["seed"]} if best.get("seed") else {}),
            "report": best.get("report") or {}},
        "split": spec.split,
        # the world's programs written before the search (data model, floor), scored like calls
        "seeds": tree.get("seeds") or [],
        # calls by outcome: a new program, a copy of one seen before, a buggy one (or none)
        "outcomes": {"new": accounting.get("new_programs"), "copy": accounting.get("duplicates"),
                     "buggy": accounting.get("buggy_programs")},
    }


def agent_summary(path: Path) -> dict:
    """An agent run as data: its config, a row per level, a record per rewrite."""
    from codeworld.synthesis import RunDir

    accounting: dict = {}  # written after the first level; a run on its first level has none
    if (path / "accounting.json").is_file():
        try:
            accounting = json.loads((path / "accounting.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path / 'accounting.json'} cannot be read: {exc}") from None
    rewrites = []
    for folder in sorted((path / "rewrites").glob("[0-9]*")):
        run_dir = RunDir(folder)
        if not run_dir.exists():
            continue
        spec = run_dir.spec
        tree = run_dir.read_json("tree.json") if (folder / "tree.json").is_file() else {}
        programs = tree.get("programs") or []
        rewrites.append({"index": int(folder.name), "level": spec.extra.get("level"),
                         "reason": spec.extra.get("reason"), "status": str(spec.status),
                         "calls": len(programs), "best": max((0.0 if p["buggy"] else p["score"]
                                                               for p in programs), default=None),
                         "run_dir": str(folder)})
    return {"run_dir": str(path), "config": accounting.get("config", {}),
            "levels": accounting.get("levels", []), "rewrites": rewrites}
