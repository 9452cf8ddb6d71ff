"""The embedded model, for real: the ``local`` backend writes a CartPole ``step`` that parses.

This is the slowest LLM test (a 1.5B model generating ~250 tokens on the CPU: about half a
minute on two idle cores). The joined model file is kept in the user cache directory, so only
the first run on a machine pays for joining and hashing it.
"""

from __future__ import annotations

from codeworld.cli import main
from codeworld.llm import extract_program, make_llm, render
from codeworld.llm import local
from codeworld.model import check_model_source

CARTPOLE = (
    "CartPole: a pole is attached by an unactuated joint to a cart moving along a frictionless "
    "track. State: [cart position, cart velocity, pole angle (rad), pole angular velocity]. "
    "Actions: 0 pushes the cart left, 1 pushes it right, with a force of 10 N. Reward: 1 for every "
    "step. The episode terminates when |pole angle| > 0.2095 rad or |cart position| > 2.4. "
    "Physics: gravity 9.8, cart mass 1.0, pole mass 0.1, pole half-length 0.5, Euler integration "
    "with tau = 0.02 s."
)


def test_local_model_writes_a_cartpole_step(tmp_path):
    llm = make_llm("local", cache_dir=str(tmp_path / "cache"))
    model_file = local.ensure_model_file()
    stamp = model_file.stat().st_mtime_ns
    assert model_file.parent == local.model_dir() and model_file.stat().st_size == local.MODEL_SIZE

    messages = render("generate", description=CARTPOLE, form="", partial_program="import numpy as np\n")
    sampling = dict(temperature=0.0, seed=0, max_tokens=450, stop=["\n```"])
    completion = llm.complete(messages, **sampling)
    assert completion.backend == "local" and completion.prompt_tokens > 100
    assert completion.completion_tokens > 0 and not completion.cached
    program = extract_program(completion.text, completion.prefill)
    assert program.defines_model, completion.full_text
    assert check_model_source(program.source).form == "functional"
    assert program.source.startswith("import numpy as np")  # the prefill was continued

    again = llm.complete(messages, **sampling)
    assert again.cached and again.text == completion.text
    assert llm.accounting.calls == 1 and llm.accounting.cache_hits == 1
    assert llm.accounting.cost_usd == 0.0

    # The verified model file is reused, not joined again.
    assert local.ensure_model_file() == model_file
    assert model_file.stat().st_mtime_ns == stamp


def test_cli_checks_the_setup_in_one_step(tmp_path, capsys):
    status = main(["llm", "--llm", "local", "--llm-cache-dir", str(tmp_path), "--max-tokens", "24",
                   "write a haiku"])
    out = capsys.readouterr().out
    assert status == 0
    answer, _, accounting = out.rpartition("# llm: ")
    assert answer.strip() and "1 call" in accounting and "completion tokens" in accounting
