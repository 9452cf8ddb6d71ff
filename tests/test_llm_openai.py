"""The openai backend against a real HTTP server on 127.0.0.1 that speaks the chat-completions
protocol with canned answers: retries on 429 and timeouts, cache hits, accounting, prefill."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from codeworld.llm import (
    LLMConfig,
    LLMError,
    LLMUnavailableError,
    RetryPolicy,
    make_llm,
)
from codeworld.experiments._outcomes import program_outcome
from codeworld.llm._accounting import LLMAccounting
from codeworld.llm._openai_compatible import OpenAIOptions
from codeworld.llm.types import PromptTooLongError

FAST_RETRY = RetryPolicy(max_attempts=3, initial_delay_s=0.01, max_delay_s=0.05, jitter=0.0)


class FakeOpenAI:
    """A chat-completions server whose answers come from a queue of scripted behaviours.

    Each behaviour is ``("ok", text)``, ``("429",)``, ``("500",)``, ``("400",)`` (optionally
    with the error's message) or ``("sleep", seconds, text)``; when the queue is empty, every request gets ``("ok", "default")``.
    """

    def __init__(self):
        self.behaviours: list[tuple] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.stop_sleeping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests.append({"path": self.path, "body": body,
                                          "auth": self.headers.get("Authorization")})
                    behaviour = fake.behaviours.pop(0) if fake.behaviours else ("ok", "default")
                kind = behaviour[0]
                if kind == "sleep":
                    fake.stop_sleeping.wait(behaviour[1])
                    behaviour = ("ok", behaviour[2])
                    kind = "ok"
                if kind in ("429", "500", "400"):
                    message = behaviour[1] if len(behaviour) > 1 else f"canned {kind}"
                    payload = {"error": {"message": message, "type": "test"}}
                    self._send(int(kind), payload, {"Retry-After": "0"} if kind == "429" else {})
                    return
                text = behaviour[1]
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": behaviour[2] if len(behaviour) > 2 else "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                })

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.stop_sleeping.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


def client(fake, tmp_path, timeout_s=5.0, retry=FAST_RETRY, **kwargs):
    return make_llm(LLMConfig(
        spec="openai:test-model",
        options=OpenAIOptions(api_key="sk-test", base_url=fake.base_url, timeout_s=timeout_s),
        retry=retry, cache_dir=str(tmp_path / "cache"), **kwargs))


HELLO = [{"role": "user", "content": "hello"}]


def test_completion_carries_text_tokens_and_sampling_parameters(fake, tmp_path):
    fake.behaviours = [("ok", "hi there")]
    llm = client(fake, tmp_path)
    completion = llm.complete(HELLO, temperature=0.5, top_p=0.9, top_k=20, max_tokens=64,
                              stop=["\n\n"], seed=7, sample=2)
    assert completion.text == "hi there"
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 7)
    assert completion.finish_reason == "stop" and not completion.cached
    assert completion.backend == "openai" and completion.model == "test-model"
    body = fake.requests[0]["body"]
    assert fake.requests[0]["path"] == "/v1/chat/completions"
    assert fake.requests[0]["auth"] == "Bearer sk-test"
    assert body["messages"] == HELLO
    assert body["temperature"] == 0.5 and body["top_p"] == 0.9 and body["top_k"] == 20
    assert body["max_tokens"] == 64 and body["stop"] == ["\n\n"]
    assert body["seed"] == 9  # seed + sample index: repeated samples differ


def test_429_is_retried_then_succeeds(fake, tmp_path):
    fake.behaviours = [("429",), ("ok", "after the rate limit")]
    llm = client(fake, tmp_path)
    completion = llm.complete(HELLO, temperature=0)
    assert completion.text == "after the rate limit"
    assert len(fake.requests) == 2
    assert llm.accounting.retries == 1 and llm.accounting.calls == 1


def test_timeout_is_retried_then_succeeds(fake, tmp_path):
    fake.behaviours = [("sleep", 5.0, "too late"), ("ok", "in time")]
    llm = client(fake, tmp_path, timeout_s=0.5)
    completion = llm.complete(HELLO, temperature=0)
    assert completion.text == "in time"
    assert llm.accounting.retries == 1 and llm.accounting.calls == 1


def test_second_identical_call_is_a_cache_hit(fake, tmp_path):
    fake.behaviours = [("ok", "first answer"), ("ok", "second answer")]
    llm = client(fake, tmp_path)
    first = llm.complete(HELLO, temperature=0.7, seed=1)
    again = llm.complete(HELLO, temperature=0.7, seed=1)
    assert again.text == first.text == "first answer" and again.cached
    assert len(fake.requests) == 1
    assert llm.accounting.calls == 1 and llm.accounting.cache_hits == 1
    assert llm.accounting.prompt_tokens == 11 and llm.accounting.completion_tokens == 7
    # Another client on the same cache directory (a rerun) replays it too, without a request.
    rerun = client(fake, tmp_path)
    assert rerun.complete(HELLO, temperature=0.7, seed=1).text == "first answer"
    assert len(fake.requests) == 1 and rerun.accounting.cache_hits == 1


def test_sample_index_and_parameters_separate_cache_entries(fake, tmp_path):
    fake.behaviours = [("ok", "a"), ("ok", "b"), ("ok", "c")]
    llm = client(fake, tmp_path)
    texts = [llm.complete(HELLO, temperature=1.0, sample=0).text,
             llm.complete(HELLO, temperature=1.0, sample=1).text,
             llm.complete(HELLO, temperature=0.9, sample=0).text]
    assert texts == ["a", "b", "c"] and len(fake.requests) == 3
    assert llm.complete(HELLO, temperature=1.0, sample=1).text == "b"  # replayed
    assert len(fake.requests) == 3


def test_without_cache_every_call_reaches_the_server(fake, tmp_path):
    llm = client(fake, tmp_path, use_cache=False)
    llm.complete(HELLO)
    llm.complete(HELLO)
    assert len(fake.requests) == 2 and llm.accounting.cache_hits == 0


def test_last_failed_try_raises_a_clear_error_naming_the_log(fake, tmp_path):
    fake.behaviours = [("ok", "first"), ("429",), ("429",), ("429",)]
    llm = client(fake, tmp_path, run_dir=str(tmp_path / "run"))
    llm.complete(HELLO)
    with pytest.raises(LLMUnavailableError) as info:
        llm.complete([{"role": "user", "content": "again"}])
    assert info.value.attempts == 3 and len(fake.requests) == 4
    assert "3 times" in str(info.value) and "rate_limit" in str(info.value)
    assert llm.accounting.failures == 1 and llm.accounting.retries == 2
    # The log holds the completion made before the failure; the layer writes no totals file.
    assert info.value.log_path == str(tmp_path / "run" / "llm_completions.jsonl")
    assert LLMAccounting.from_log(info.value.log_path).calls == 1
    assert not (tmp_path / "run" / "llm_accounting.json").exists()


def test_server_errors_are_retried_but_rejections_are_not(fake, tmp_path):
    fake.behaviours = [("500",), ("ok", "recovered")]
    llm = client(fake, tmp_path)
    assert llm.complete(HELLO).text == "recovered"
    fake.behaviours = [("400",)]
    with pytest.raises(LLMError, match="HTTP 400"):
        llm.complete([{"role": "user", "content": "bad"}])
    assert len(fake.requests) == 3


# What llama.cpp's server answers a prompt longer than its context (seen on a Humanoid prompt).
LLAMA_TOO_LONG = ("request (13820 tokens) exceeds the available context size (8192 tokens), "
                  "try increasing it")


def test_a_prompt_longer_than_the_context_is_its_own_error_naming_the_lengths(fake, tmp_path):
    fake.behaviours = [("400", LLAMA_TOO_LONG)]
    with pytest.raises(PromptTooLongError, match="exceeds the available context") as info:
        client(fake, tmp_path).complete(HELLO)
    assert (info.value.prompt_tokens, info.value.context) == (13820, 8192)
    assert len(fake.requests) == 1  # never retried: the same prompt can never fit


def test_a_search_records_a_call_whose_prompt_is_too_long_and_goes_on(fake, tmp_path):
    # call 2's prompt does not fit: the run does not fail, that call has no program, the others
    # are scored, and a resume replays the record without asking the server again
    from codeworld.synthesis.fakes import EchoPrompts, FakeEvaluator, fake_program
    from codeworld.synthesis.run import Run
    from codeworld.synthesis.types import World

    fake.behaviours = [("ok", fake_program(0.4)), ("400", LLAMA_TOO_LONG), ("ok", fake_program(0.7))]
    run = Run.start(tmp_path / "run", "worldcoder", budget=3, seed=0)
    result = run.execute(World(EchoPrompts(), FakeEvaluator()), client(fake, tmp_path))
    assert run.spec.status.value == "finished"
    assert result.accounting.calls == 3 and result.accounting.too_long == 1
    assert result.best_evaluation.score == 0.7
    record = json.loads((tmp_path / "run" / "programs" / "0001.json").read_text())
    assert record["report"]["status"] == "prompt_too_long" and record["buggy"]
    assert program_outcome(record) == "prompt too long"
    again = Run.resume(tmp_path / "run")
    replayed = again.execute(World(EchoPrompts(), FakeEvaluator()), None)
    assert replayed.accounting.replayed_calls == 3 and replayed.accounting.too_long == 1
    assert len(fake.requests) == 3


def test_accounting_prices_known_models_and_run_log_is_replayable(fake, tmp_path):
    fake.behaviours = [("ok", "x")]
    llm = make_llm(LLMConfig(
        spec="openai:gpt-4o-mini-2024-07-18",
        options=OpenAIOptions(api_key="k", base_url=fake.base_url),
        retry=FAST_RETRY, cache_dir=str(tmp_path / "cache"), run_dir=str(tmp_path / "run")))
    llm.complete(HELLO)
    # gpt-4o-mini: $0.15 / $0.60 per million prompt / completion tokens.
    assert llm.accounting.cost_usd == pytest.approx((11 * 0.15 + 7 * 0.60) / 1e6)
    assert "1 call" in llm.accounting.summary()
    log = tmp_path / "run" / "llm_completions.jsonl"
    replay = make_llm(f"scripted:{log}", use_cache=False)
    assert replay.complete(HELLO).text == "x"


def test_prefill_echoed_by_the_server_is_not_repeated(fake, tmp_path):
    prefill = "```python\nimport numpy as np\n"
    fake.behaviours = [("ok", prefill + "def step(s, a):\n    return s, 0.0, False\n```")]
    llm = client(fake, tmp_path)
    completion = llm.complete(HELLO + [{"role": "assistant", "content": prefill}])
    assert completion.text.startswith("def step")
    assert completion.full_text.startswith(prefill + "def step")


def test_missing_key_for_openai_itself_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        make_llm("openai:gpt-4o-mini", cache_dir=str(tmp_path))


def test_key_and_base_url_come_from_the_environment(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    fake.behaviours = [("ok", "from env")]
    llm = make_llm("openai:m", cache_dir=str(tmp_path), retry=FAST_RETRY)
    assert llm.complete(HELLO).text == "from env"
    assert fake.requests[0]["auth"] == "Bearer sk-env"


def test_cli_prints_completion_and_accounting(fake, tmp_path, capsys):
    from codeworld.cli import main

    fake.behaviours = [("ok", "an old pond")]
    status = main(["llm", "--llm", "openai:m", "--llm-base-url", fake.base_url, "--llm-api-key", "k",
                   "--llm-cache-dir", str(tmp_path), "write a haiku"])
    out = capsys.readouterr().out
    assert status == 0
    assert "an old pond" in out and "1 call" in out and "11 prompt + 7 completion tokens" in out


def test_retry_delays_grow_and_honour_retry_after():
    policy = RetryPolicy(initial_delay_s=1.0, multiplier=2.0, max_delay_s=5.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert policy.delay(1, retry_after_s=3.0) == 3.0


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(ValueError, match="local.*openai.*scripted"):
        make_llm("nonsense:x")


