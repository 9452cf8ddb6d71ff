"""The LLM-versus-code inference-speed benchmark: per-transition prompts paired with their truth."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from codeworld.envs import get_spec
from codeworld.envs._buffers import buffer_path, load_buffer
from codeworld.llm import format_value

ROOT = Path(__file__).resolve().parents[1]
ENV = "CartPole-v1"


def _load():
    spec = importlib.util.spec_from_file_location("inference_speed", ROOT / "benchmarks" / "inference_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class _Answer:
    text: str
    prompt_tokens: int = 10
    completion_tokens: int = 5


class OracleLLM:
    """Answers each predict prompt with the recorded outcome of the state and action it asks about
    (shifted by `offset` rows to mimic prompts and truths that do not belong together)."""

    def __init__(self, buffer, offset: int = 0):
        self.buffer, self.offset, self.prompts = buffer, offset, []

    def complete(self, messages, **sampling):
        text = messages[-1]["content"]
        self.prompts.append(text)
        state = re.search(r"this step:\nstate: (.*)\naction: (.*)", text)
        rows = [i for i in range(len(self.buffer))
                if format_value(self.buffer.obs[i]) == state.group(1)
                and format_value(int(self.buffer.actions[i][0])) == state.group(2)]
        i = (rows[0] + self.offset) % len(self.buffer)
        b = self.buffer
        return _Answer(f"next_state: {format_value(b.next_obs[i])}\nreward: {format_value(b.rewards[i])}\n"
                       f"done: {format_value(bool(b.terminated[i]))}")


def test_each_transition_has_its_own_prompt_and_its_own_truth():
    bench = _load()
    spec, buffer = get_spec(ENV), load_buffer(buffer_path(ENV))
    examples, queries = bench.pick_transitions(len(buffer), 3, 6, seed=1)
    assert not set(examples) & set(queries) and len(set(queries)) == 6
    batch = bench.query_buffer(buffer, queries)
    llm = OracleLLM(buffer)
    result = bench.run_llm(llm, spec, "desc", buffer, examples, batch, max_tokens=100)
    assert len(llm.prompts) == 6 and len(set(llm.prompts)) == 6  # one prompt per transition
    for prompt, i in zip(llm.prompts, queries):
        assert f"state: {format_value(buffer.obs[i])}" in prompt.split("this step:")[1]
    assert result["accuracy"]["strict"] == 1.0 and result["accuracy"]["unreadable"] == 0
    assert len(result["seconds"]) == 6 and result["seconds_per_transition"] > 0
    # truths of other transitions (the flaw this benchmark fixes) would not score as right
    shifted = bench.run_llm(OracleLLM(buffer, offset=1), spec, "desc", buffer, examples, batch, 100)
    assert shifted["accuracy"]["strict"] < 1.0


def test_unreadable_answers_count_as_wrong():
    bench = _load()
    spec, buffer = get_spec(ENV), load_buffer(buffer_path(ENV))
    batch = bench.query_buffer(buffer, [0, 1])

    class Mumbler:
        def complete(self, messages, **sampling):
            return _Answer("I think the pole falls.")

    result = bench.run_llm(Mumbler(), spec, "desc", buffer, [5], batch, 50)
    assert result["accuracy"] == {"strict": 0.0, "state": 0.0, "reward": 0.0, "done": 0.0, "score": 0.0,
                                  "unreadable": 2}
    assert len(result["errors"]) == 2


def test_code_world_models_are_exact_on_their_transitions():
    bench = _load()
    spec, buffer = get_spec(ENV), load_buffer(buffer_path(ENV))
    batch = bench.query_buffer(buffer, [3, 40, 77])
    sim = bench.run_simulator(spec, batch)
    assert sim["accuracy"]["strict"] == 1.0 and sim["seconds_per_transition"] > 0
    program = bench.run_program(spec, (ROOT / "tests" / "models" / "cartpole_functional.py").read_text(), batch)
    assert program["accuracy"]["strict"] == 1.0 and program["cold_start_s"] > 0


def test_main_writes_json_and_markdown(tmp_path):
    bench = _load()
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps({"text": "next_state: [0, 0, 0, 0]\nreward: 1\ndone: false"})
                                for _ in range(2)) + "\n")
    out = tmp_path / "speed.json"
    assert bench.main(["--envs", ENV, "--llm", f"scripted:{script}", "--transitions", "2",
                       "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    entry = data["envs"][ENV]
    assert entry["ratio"] == pytest.approx(entry["llm"]["seconds_per_transition"]
                                           / entry["code"]["seconds_per_transition"])
    assert entry["code"]["accuracy"]["strict"] == 1.0
    assert np.isfinite(entry["ratio"]) and len(entry["queries"]) == 2
    text = out.with_suffix(".md").read_text()
    assert "| CartPole-v1 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| CartPole-v1 |"))
    assert row.endswith("| 2.2 | 5e-05 | 4.4e+04 |")  # the paper's Table 8 beside it
    # --merge measures another env in a command of its own and keeps the first one's results
    assert bench.main(["--envs", "Taxi-v4", "--llm", f"scripted:{script}", "--transitions", "2",
                       "--out", str(out), "--merge"]) == 0
    data = json.loads(out.read_text())
    assert set(data["envs"]) == {ENV, "Taxi-v4"}
    assert data["envs"]["Taxi-v4"]["llm"]["errors"]  # a 4-number answer for a 1-number state
    assert data["envs"][ENV]["command"] != data["envs"]["Taxi-v4"]["command"]
    # --report-only writes the table again from the JSON alone
    out.with_suffix(".md").unlink()
    assert bench.main(["--out", str(out), "--report-only"]) == 0
    text = out.with_suffix(".md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| Taxi-v4 |"))
    assert row.count("|") == text.splitlines()[4].count("|") and row.endswith("|  |  |  |")  # not in Table 8
    assert "Table 8" in text
