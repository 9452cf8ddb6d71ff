"""Run summaries as data: a synthesis run's calls, scores and accounting, an agent run's levels and
rewrites. ``codeworld show`` prints them and the report pages draw them; both read run directories
through `codeworld.synthesis.RunDir` only, so runs written by earlier versions are read too.
"""

from __future__ import annotations

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


def best_label(best: dict) -> str:
    """What the run's best program is, numbered as the command line numbers calls: ``call 3``,
    ``composed from calls 2, 8``, ``call 3, constants fitted``, ``the skeleton``."""
    origin = best.get("origin") or {}
    if origin.get("composed_from"):
        return "composed from calls " + ", ".join(str(c + 1) for c in origin["composed_from"])
    if origin.get("floor"):
        return "the skeleton (every program the search wrote was buggy)"
    if origin.get("fitted_from") is not None:
        return f"call {origin['fitted_from'] + 1}, constants fitted"
    if origin.get("seed"):
        return SEED_NAMES.get(origin["seed"], origin["seed"])
    return f"call {best['call']}"


def llm_segments(per_call: list[dict]) -> list[dict]:
    """The LLMs that answered a run's calls, in order: ``{"llm", "first", "last"}`` for each
    stretch of calls one LLM answered (calls whose record names none, saved before records
    named it, are left out)."""
    out: list[dict] = []
    for row in per_call:
        if not row.get("llm"):
            continue
        if out and out[-1]["llm"] == row["llm"]:
            out[-1]["last"] = row["call"]
        else:
            out.append({"llm": row["llm"], "first": row["call"], "last": row["call"]})
    return out


def summarize(run_path: Path) -> dict:
    """The summary of a run directory as data.

    A record that is truncated or wrong is named in ``problems`` and left out, so that the
    rest of the run is still shown; ``status`` says ``interrupted (process gone)`` for a run
    recorded as running whose process is gone.

    Raises:
        RunRecordError: ``run.json``, ``tree.json``, ``accounting.json`` or ``best_report.json``
            is truncated or wrong (a ValueError).
    """
    from codeworld.synthesis import RunDir

    run_dir = RunDir(run_path)
    spec = run_dir.spec
    tree = run_dir.read_json("tree.json") if (run_path / "tree.json").is_file() else {}
    accounting = run_dir.read_json("accounting.json") if (run_path / "accounting.json").is_file() else {}
    nodes = tree_nodes(tree)
    problems: list[str] = []
    calls = run_dir.load_calls(problems)
    reports = run_dir.program_reports(problems)
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
                             "report", {}).get("duplicate_of"),
                         "llm": (calls.get(node["call"]) or {}).get("llm")})
        counts = mix.setdefault(node["action"], {"calls": 0, "buggy": 0})
        counts["calls"] += 1
        counts["buggy"] += int(node["buggy"])
    best = run_dir.read_json("best_report.json") if (run_path / "best_report.json").is_file() else None
    # how the best program was made from the search's programs, when it was (composed, fitted)
    origin = ({k: best[k] for k in ("composed_from", "fitted_from", "floor", "seed") if k in best}
              if best else {})
    return {
        "run_dir": str(run_path), "method": spec.method, "env_id": spec.env_id,
        # what the programs were written for: the env, an agent rewrite's level, an APPS problem
        "target": spec.world_target or spec.extra.get("level") or spec.extra.get("problem"),
        "llm": spec.llm, "llms": llm_segments(per_call), "seed": spec.seed, "budget": spec.budget,
        "status": run_dir.shown_status(spec), "calls": len(nodes),
        "per_call": per_call, "problems": problems,
        "action_mix": mix, "accounting": accounting,
        "best": None if best is None else {
            "call": best["call"] + 1, "score": 0.0 if best["buggy"] else best["score"],
            "buggy": best["buggy"], "path": str(run_path / "best_model.py"),
            **({"seed": best["seed"]} if best.get("seed") else {}),
            **({"origin": origin} if origin else {}),
            "report": best.get("report") or {}},
        "split": spec.split,
        # the world's programs written before the search (data model, floor), scored like calls
        "seeds": tree.get("seeds") or [],
        # calls by outcome: a new program, a copy of one seen before, a buggy one (or none)
        "outcomes": {"new": accounting.get("new_programs"), "copy": accounting.get("duplicates"),
                     "buggy": accounting.get("buggy_programs")},
    }


def agent_summary(path: Path) -> dict:
    """An agent run (`codeworld.synthesis._run_dir.AgentRunDir`) as data: its config, a row per
    level, a record per rewrite.

    Raises:
        RunRecordError: ``accounting.json`` or a rewrite's ``run.json`` cannot be read (named).
    """
    from codeworld.synthesis._run_dir import AgentRunDir

    agent_dir = AgentRunDir(path)
    accounting = agent_dir.accounting()  # empty while the run is on its first level
    rewrites = []
    for index, run_dir in agent_dir.rewrites():
        spec = run_dir.spec
        tree = run_dir.read_json("tree.json") if (run_dir.path / "tree.json").is_file() else {}
        programs = tree.get("programs") or []
        rewrites.append({"index": index, "level": spec.extra.get("level"),
                         "reason": spec.extra.get("reason"), "status": str(spec.status),
                         "calls": len(programs), "best": max((0.0 if p["buggy"] else p["score"]
                                                               for p in programs), default=None),
                         "run_dir": str(run_dir.path)})
    return {"run_dir": str(path), "config": accounting.config, "levels": list(accounting.levels),
            "rewrites": rewrites}
