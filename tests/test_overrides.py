"""One `--set` reading for every command: typed by the config's fields, errors that name them."""

from __future__ import annotations

import json

import pytest

from codeworld.cli import main
from codeworld._overrides import config_with_overrides, parse_overrides
from codeworld.planning import CemConfig, MctsConfig
from codeworld.synthesis import GifMctsConfig


def test_values_are_read_by_the_fields_type():
    config = config_with_overrides(CemConfig(), parse_overrides(
        ["horizon=20", "gamma=0.9", "replan_every=none", "warm_start=off"]))
    assert config.horizon == 20 and config.gamma == 0.9 and config.replan_every is None
    assert config.warm_start is False
    assert config_with_overrides(CemConfig(), {"replan_every": "5"}).replan_every == 5
    gif = config_with_overrides(GifMctsConfig(), parse_overrides(
        ["ucb_c=0.2", "sampling.temperature=0.5", "assist.scaffold=false"]))
    assert gif.ucb_c == 0.2 and gif.sampling.temperature == 0.5 and gif.assist.scaffold is False


@pytest.mark.parametrize("items, error", [
    (["num_simulations"], ValueError), (["nonsense=1"], TypeError), (["num_simulations=many"], ValueError),
    (["gamma.x=1"], TypeError),
])
def test_bad_overrides_are_errors_that_name_them(items, error):
    with pytest.raises(error, match="num_simulations|nonsense|gamma"):
        config_with_overrides(MctsConfig(), parse_overrides(items))


def test_plan_and_synthesize_read_set_the_same_way(tmp_path, capsys):
    model = tmp_path / "m.py"
    model.write_text((__import__("pathlib").Path(__file__).parent / "models" / "cartpole_functional.py").read_text())
    assert main(["plan", "CartPole-v1", str(model), "--episodes", "1", "--max-steps", "5", "--random-only",
                 "--set", "num_simulations=3", "--set", "gamma=0.5", "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert config["num_simulations"] == 3 and config["gamma"] == 0.5
    for command in (["plan", "CartPole-v1", str(model)], ["synthesize", "CartPole-v1", "--llm", "scripted:x"]):
        assert main([*command, "--set", "no_such_field=1"]) == 2
        assert "no_such_field" in capsys.readouterr().err
