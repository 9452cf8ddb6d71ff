"""Records that say what happened: the page and `show` do not call a composition a call (the
composed program's header: tests/test_synthesis_finish.py), the tree's colours mean "better than
doing nothing", and rare outcomes are reported only where a reward has few values."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np

from codeworld.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "models" / "cartpole_functional.py"
LEGACY_RUN = ROOT / "tests" / "data" / "legacy_runs" / "synthesize-cartpole"


def test_the_page_and_show_call_a_composition_a_composition(tmp_path, capsys):
    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    best = json.loads((run / "best_report.json").read_text())
    (run / "best_report.json").write_text(json.dumps({**best, "call": 1, "program": "best_model.py",
                                                      "composed_from": [1, 0]}))
    assert main(["show", str(run)]) == 0
    assert "(composed from calls 2, 1)" in capsys.readouterr().out
    headline = re.search(r"<p id='headline'>(.*?)</p>", (run / "report.html").read_text()).group(1)
    assert headline.startswith("best program (composed from calls 2, 1): score")


def test_the_trees_colours_follow_the_floor_normalised_score():
    from codeworld.reports import tree_svg

    nodes = [{"call": c, "parent_call": -1, "action": "generate", "score": s, "buggy": False}
             for c, s in enumerate((0.6667, 0.8333, 1.0))]
    svg = tree_svg(nodes, floor=0.6667, ceiling=1.0)
    hues = [int(h) for h in re.findall(r"fill='hsl\((\d+),", svg)]
    assert hues == [0, 60, 120]  # at the floor red, halfway yellow, at the ceiling green
    assert [int(h) for h in re.findall(r"fill='hsl\((\d+),", tree_svg(nodes))] == [80, 100, 120]


def test_rare_outcomes_are_reported_for_few_valued_rewards_only():
    from codeworld.envs._buffer_format import load_buffer
    from codeworld.envs._buffers import default_buffer
    from codeworld.envs import resolve_env
    from codeworld.scoring._scorer import Predictions, rare_accuracy

    def exact(buffer):
        return Predictions(buffer.next_obs, buffer.rewards, buffer.terminated, len(buffer))

    pendulum = resolve_env("Pendulum-v1")  # a reward with a value per transition
    buffer = load_buffer(default_buffer(pendulum), pendulum)
    assert len(np.unique(buffer.rewards)) > 100
    assert rare_accuracy(buffer, pendulum, "sound", exact(buffer))["reward"] == {}
    cliff = resolve_env("CliffWalking-v1")  # -1 a step, -100 off the cliff
    buffer = load_buffer(default_buffer(cliff), cliff)
    rare = rare_accuracy(buffer, cliff, "sound", exact(buffer))["reward"]
    assert rare == {"-100": 1.0}


def test_show_prints_no_rare_line_for_a_many_valued_reward():
    from codeworld.reports._text import score_lines

    held = {"score": 0.5, "n_transitions": 300,
            "rare": {"reward": {f"{-v / 100:g}": 0.0 for v in range(300)}, "n_ends": 0,
                     "done_on_ends": None}}
    lines = score_lines({"score": 0.5, "n_transitions": 700, "heldout": held})
    assert not any("rare" in line for line in lines)


def test_a_copy_names_what_it_copied_in_words():
    import io

    from codeworld.reports._progress import progress_printer

    out = io.StringIO()
    show = progress_printer(12, stream=out)
    event = {"call": 0, "action": "improve", "buggy": False, "score": 0.99, "best": 0.99,
             "tokens": 10, "replayed": False}
    for copied in ("data", "skeleton", 3):
        show({**event, "duplicate_of": copied})
    lines = out.getvalue().splitlines()
    assert "(a copy of the data model)" in lines[0]
    assert "(a copy of the skeleton)" in lines[1]
    assert "(a copy of call 3)" in lines[2]
