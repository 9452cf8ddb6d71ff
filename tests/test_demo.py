"""`codeworld demo` end to end with a scripted LLM (the embedded model's run is the LLM layer's test)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from codeworld.cli import main

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"
LEGACY = Path(__file__).parent / "data" / "legacy_runs"


def test_demo_synthesizes_scores_and_plans(tmp_path, capsys):
    good = MODEL.read_text()
    wrong = good.replace("0.02", "0.03")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f"```python\n{wrong}```", f"```python\n{good}```"]))
    out = tmp_path / "demo"
    code = main(["demo", "--llm", f"scripted:{script}", "--budget", "2", "--episodes", "2",
                 "--max-steps", "15", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    for mode in ("sound", "paper"):  # held out and training, each beside its floor
        assert f"accuracy ({mode}, held-out)" in printed and f"accuracy ({mode}, training)" in printed
    assert "strict" in printed and "floor" in printed
    assert "normalized return" in printed and str(out) in printed
    result = json.loads((out / "demo.json").read_text())
    # the first program's wrong constant is fitted in the search: a perfect model after one call
    assert result["calls"] == 1 and result["missing"] == []
    assert json.loads((out / "fits" / "0000.json").read_text())["fit"]["accepted"]
    sound = result["score_sound"]
    assert sound["heldout"] and sound["training"]["score"] == 1.0
    assert sound["normalized"] == 1.0
    assert sound["model"] == 1.0 and sound["floor"] < sound["model"] and sound["ceiling"] is not None
    paper = result["score_paper"]  # the paper's rule: the true dynamics score as the ceiling
    assert paper["model"] == paper["ceiling"] and paper["floor"] < paper["model"]
    planning = result["planning"]
    assert planning["return_model"] == planning["return_oracle"] == 15.0
    # the model plans as well as the oracle: normalized 1, unless the random policy ties them
    if planning["return_random"] < planning["return_oracle"]:
        assert planning["normalized_return"] == 1.0 and planning["note"] is None
    else:
        assert planning["normalized_return"] is None and "tie" in planning["note"]
    assert (out / "best_model.py").read_text() == (out / "programs" / "0000.py").read_text()
    assert "TAU = 0.03" not in (out / "best_model.py").read_text()
    spec = json.loads((out / "run.json").read_text())  # the keys of before, and the version
    legacy = json.loads((LEGACY / "demo.run.json").read_text())
    assert set(spec) == set(legacy) | {"codeworld_version", "split", "finish"}
    split = spec["split"]  # episodes held out, recorded; none of them in training
    assert split["heldout_episodes"] and not set(split["heldout_episodes"]) & set(split["train_episodes"])
    assert spec["status"] == "finished" and spec["budget"] == 2 and spec["mode"] == "sound"
    # the last line's command works as printed, from where the demo ran (nothing on the PATH
    # after `make demo`: it names the virtualenv's codeworld)
    command = printed.rsplit("(inspect with: ", 1)[1].split(")")[0]
    shown = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0 and shown.stdout.startswith(f"{out}: gif-mcts on CartPole-v1")


def test_demo_reports_a_synthesis_that_could_not_run(tmp_path, capsys):
    code = main(["demo", "--llm", f"scripted:{tmp_path / 'missing.json'}", "--budget", "1",
                 "--out", str(tmp_path / "d")])
    printed = capsys.readouterr().out
    assert code == 1
    assert "not measured: synthesis stopped" in printed
    # nothing was run: no run directory is left, and none is pointed at
    assert not (tmp_path / "d").exists() and "inspect with" not in printed
