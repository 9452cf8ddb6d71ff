"""The static checks' homes: ``codeworld.synthesis._checks`` holds the checks that fit any program;
a CWMB program's contract (its state's length, its action's form, a pure ``step``) is checked by
the CWMB world (`codeworld.worlds.cwmb._checks`), which its assists call."""

from __future__ import annotations

import inspect

CONTRACT = {"state_dim", "discrete", "action_dim", "n_actions"}


def test_the_core_checks_take_no_world_contract():
    import codeworld.synthesis._checks as core

    for name, fn in inspect.getmembers(core, inspect.isfunction):
        if fn.__module__ == core.__name__:
            assert not CONTRACT & set(inspect.signature(fn).parameters), name


def test_the_cwmb_world_checks_its_programs_contract():
    from codeworld.synthesis._checks import code_problems
    from codeworld.worlds.cwmb._checks import static_problems

    program = ("counter = 0\n\ndef step(state, action):\n    global counter\n    x, v, w = state\n"
               "    return [x + undefined], 0.0, False\n")
    kinds = [p.kind for p in static_problems(program, state_dim=2, discrete=True, n_actions=2)]
    assert kinds == ["global", "state_unpacking", "undefined_name"]
    import ast

    assert [p.kind for p in code_problems(ast.parse(program))] == ["undefined_name"]
