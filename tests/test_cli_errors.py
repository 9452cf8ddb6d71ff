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
