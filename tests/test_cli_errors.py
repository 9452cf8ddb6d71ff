"""Bad input on the command line gets one line naming the problem, never a traceback."""

from __future__ import annotations

import pytest

from codeworld.cli import main


@pytest.mark.parametrize("argv, says", [
    (["agent", "minigrid:empty", "--llm", "nosuch"], "codeworld agent: unknown LLM backend 'nosuch'"),
    (["agent", "sokoban:gen:notanumber"], "codeworld agent: a generated Sokoban level is gen:SEED"),
    (["score", "missing.npz", "model.py"], "codeworld score: missing.npz: no such file"),
])
def test_bad_input_gets_one_line(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, says", [
    (["synthesize", "CartPole-v1", "--budget", "0"], "argument --budget: must be at least 1, not 0"),
    (["synthesize", "CartPole-v1", "--budget", "two"], "argument --budget: not a whole number: 'two'"),
    (["synthesize", "CartPole-v1", "--time-limit", "-1"], "argument --time-limit: must be above 0, not -1"),
    (["synthesize", "CartPole-v1", "--timeout", "nan"], "argument --timeout: must be above 0, not nan"),
    (["demo", "--episodes", "0"], "argument --episodes: must be at least 1, not 0"),
    (["plan", "CartPole-v1", "model.py", "--max-steps", "-1"], "argument --max-steps: must be at least 1, not -1"),
])
def test_a_count_or_duration_below_its_range_is_refused_before_any_work(argv, says, capsys, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"codeworld {argv[0]}: error: {says}"
    assert not (tmp_path / "runs").exists()  # no run directory was made
