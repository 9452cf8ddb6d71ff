"""GIF-MCTS with the real embedded model on CartPole-v1, end to end, at a small budget.

Two LLM calls with the 1.5B model on the CPU (answers capped at 300 tokens; the second builds on
what the first left): the slowest test of the suite, kept because it is the path `make demo`
takes. It checks the run, not the model's skill: the run directory is complete and the best
report is the best program's (or the better program the finish step made from it: a composition
or a constant fit).
"""

from __future__ import annotations

import json

import pytest

from codeworld.cli import main


@pytest.mark.timeout(1200)  # two CPU-bound calls; about 1.5 minutes on two idle cores
def test_gif_mcts_with_the_embedded_model_writes_a_complete_run(tmp_path, capsys):
    out = tmp_path / "run"
    status = main(["synthesize", "CartPole-v1", "--method", "gif-mcts", "--llm", "local",
                   "--budget", "2", "--seed", "0", "--out", str(out),
                   "--llm-cache-dir", str(tmp_path / "cache"),
                   "--set", "sampling.max_tokens=300", "--set", "sampling.temperature=0.7"])
    printed = capsys.readouterr().out
    assert status == 0, printed

    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "finished" and meta["method"] == "gif-mcts" and meta["env_id"] == "CartPole-v1"
    calls = sorted((out / "calls").glob("*.json"))
    assert len(calls) == 2
    for call in calls:
        record = json.loads(call.read_text())
        assert record["messages"] and record["completion"]["text"].strip()
        assert record["completion"]["completion_tokens"] > 0
    # The data model is written before the first call, and the first call builds on it.
    assert (out / "seeds" / "data.py").read_text().strip()
    assert json.loads(calls[0].read_text())["request"]["action"] in ("improve", "generate")

    reports = [json.loads(p.read_text()) for p in sorted((out / "programs").glob("*.json"))]
    assert len(reports) == 2
    assert all(0.0 <= r["score"] <= 1.0 for r in reports)
    best = json.loads((out / "best_report.json").read_text())
    searched = max(r["score"] for r in reports)
    if "composed_from" in best or "fitted_from" in best:  # the finish step made a better program
        assert best["score"] > searched
    elif "seed" in best:  # the data model (or the floor) beat every call's program
        assert best["score"] >= searched
    else:
        assert best["score"] == searched
    assert (out / "tree.json").exists() and (out / "accounting.json").exists()
    accounting = json.loads((out / "accounting.json").read_text())
    assert accounting["calls"] == 2
    if any(r["has_program"] for r in reports):
        assert (out / "best_model.py").read_text().strip()
