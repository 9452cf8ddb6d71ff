"""The embedded model, for real: the ``local`` backend writes a CartPole ``step`` that parses;
speculative decoding keeps greedy answers; a run's later calls reuse the shared prompt prefix.

This is the slowest LLM test (a 1.5B model generating ~250 tokens on the CPU: about half a
minute on two idle cores). The joined model file is kept in the user cache directory, so only
the first run on a machine pays for joining and hashing it.
"""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from codeworld.cli import main
from codeworld.llm import extract_program, make_llm
from codeworld.worlds.cwmb._cwmb import render_cwmb
from codeworld.llm import _local as local, _native as native
from codeworld._model import check_model_source

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

    messages = render_cwmb("generate", description=CARTPOLE, form="", partial_program="import numpy as np\n")
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

    # After a copy, another first line (`_other_line`): each line's request stops at its newline,
    # and the answer goes on from the prefill plus the new line.
    from codeworld.llm._other_line import code_of, complete_with_other_line, first_line

    sent = []

    class Recording:
        def complete(self, messages, **kwargs):
            answer = llm.complete(messages, **kwargs)
            sent.append((kwargs, answer))
            return answer

    avoid = first_line(completion.text)
    answer, note = complete_with_other_line(Recording(), messages, avoid, tries=4, line_seeds=[1, 2, 3, 4],
                                            temperature=1.0, seed=0, max_tokens=60, stop=["\n```"])
    line_answers = [a for kwargs, a in sent if kwargs.get("stop") == ["\n"]]
    lines = [a.text for a in line_answers]
    # one request per line tried, then one for the rest of the answer
    assert len(sent) == note["line_tries"] + 1 and sent[-1][0].get("stop") == ["\n```"]
    # the server stopped each line request at its first newline, not at its token limit (it
    # fails where `stop` is not honoured and a line request runs on into the program)
    assert line_answers and all(a.finish_reason == "stop" and "\n" not in a.text
                                and a.completion_tokens < 60 for a in line_answers)
    if note["other_line"]:
        assert code_of(first_line(answer.text)) not in ("", code_of(avoid))
        assert answer.text.startswith(lines[-1] + "\n")
    assert answer.completion_tokens == sum(a.completion_tokens for _, a in sent)  # every request counted

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


# --- speed settings, on the real model: short answers, so that make test stays fast ------------

PROGRAM = '''import numpy as np

GRAVITY = 9.8
FORCE_MAG = 10.0
TAU = 0.02


def step(state, action):
    x, x_dot, theta, theta_dot = state
    force = FORCE_MAG if action == 1 else -FORCE_MAG
    x = x + TAU * x_dot
    x_dot = x_dot + TAU * force
    next_state = np.array([x, x_dot, theta, theta_dot], dtype=np.float64)
    return next_state, 1.0, False
'''

# Copying a program is what an improve or fix answer mostly does: the case speculation is for.
COPY = [{"role": "user", "content": f"Repeat this program exactly:\n\n```python\n{PROGRAM}```"}]


def _greedy(server, messages, max_tokens, **extra):
    return server.request({"messages": messages, "temperature": 0.0, "max_tokens": max_tokens,
                           "seed": 0, **extra})


def _text(response):
    return response["choices"][0]["message"]["content"]


# Long enough for n-gram-mod drafts: they start after 24 matching tokens and are 48 or more long.
COPY_TOKENS = 96

# Every engine this machine has: the wheel's always, the native build where `make native-llm` ran.
ENGINES = ["xllamacpp"] + (["native"] if native.native_server_binary() else [])


@pytest.fixture(scope="module", params=ENGINES)
def plain_answer(request):
    """The greedy answer to COPY without speculation, from a fresh server (nothing cached), with
    the engine it came from."""
    server = local.LocalServer(local.ensure_model_file(), local.ServerSettings(
        speculation="none", context=2048, engine=request.param))
    try:
        answer = _greedy(server, COPY, COPY_TOKENS)
        answer["engine"] = request.param
        return answer
    finally:
        server.close()


@pytest.mark.parametrize("kind", ["ngram-mod", "ngram"])
def test_ngram_speculation_drafts_and_keeps_the_greedy_tokens(plain_answer, kind):
    server = local.LocalServer(local.ensure_model_file(), local.ServerSettings(
        speculation=kind, context=2048, slots=2, engine=plain_answer["engine"]))
    try:
        answer = _greedy(server, COPY, COPY_TOKENS)
        assert answer["timings"].get("draft_n_accepted", 0) > 0, answer["timings"]  # it did speculate
        assert _text(answer) == _text(plain_answer)
        assert answer["usage"]["completion_tokens"] == plain_answer["usage"]["completion_tokens"]

        # Two slots decode two requests at once.
        assert len(server.slots_state()) == 2
        results = [None, None]

        def ask(i):
            results[i] = _greedy(server, COPY, 8)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert all(r is not None and r["usage"]["completion_tokens"] == 8 for r in results)
    finally:
        server.close()


def test_draft_model_speculation_keeps_the_greedy_tokens(plain_answer):
    draft = local.ensure_draft_file()
    assert draft.stat().st_size == local.DRAFT_SIZE
    server = local.LocalServer(local.ensure_model_file(), local.ServerSettings(
        speculation="draft", context=2048, engine=plain_answer["engine"]))
    try:
        answer = _greedy(server, COPY, COPY_TOKENS)
        assert answer["timings"].get("draft_n", 0) > 0, answer["timings"]
        assert _text(answer) == _text(plain_answer)
    finally:
        server.close()


def test_a_later_call_of_a_run_processes_only_its_new_tokens():
    from codeworld.worlds.cwmb._cwmb import make_cwmb_world
    from codeworld.synthesis.types import FIX, IMPROVE, Request

    # Two calls of one CartPole run as the search sends them: the system text, description and
    # scaffold come first and are the same; the program and its feedback differ.
    world = make_cwmb_world("CartPole-v1")
    prompts, _ = world.prompts, world.evaluator
    first = prompts.messages(Request(call=1, action=FIX, parent=0, program=PROGRAM,
                                     feedback="NameError: name 'g' is not defined"))
    second = prompts.messages(Request(call=2, action=IMPROVE, parent=0, program=PROGRAM,
                                      feedback="Over all 568 recorded transitions, 40% are wrong."))
    # The process's server, the one `--llm local` runs on (started by the tests above when they
    # ran). It is kept for the CartPole run of test_synthesis_local.py, whose first prompt begins
    # as `second` does: 86 of its 2,035 tokens are then new (measured: 15 s of prompt processing
    # instead of 211 s on 2 cores at load average 8).
    server = local.shared_server()

    # The tokens the two prompts share, counted by the server's own template and tokenizer.
    ids = []
    for messages in (first, second):
        prompt = _post(server, "/apply-template", {"messages": messages})["prompt"]
        ids.append(_post(server, "/tokenize", {"content": prompt})["tokens"])
    shared = next((i for i, (a, b) in enumerate(zip(*ids)) if a != b), min(map(len, ids)))
    assert shared > 150  # the system text, the description and the scaffold

    _greedy(server, first, 1)
    timings = _greedy(server, second, 1)["timings"]
    assert timings["cache_n"] >= shared - 1, timings
    assert timings["prompt_n"] <= len(ids[1]) - shared + 1, timings


def _post(server, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())
