"""The ReAct baseline of the agent benchmark: the LLM chooses every action, thinking first.

WorldCoder's paper (Tang, Key, Ellis 2024) compares its agent with a ReAct-style agent (Yao et
al. 2023) that asks the LLM for each action; it solves 15% +- 8% of basic Sokoban levels there.
`ReActAgent` makes one LLM call per step, showing the rules, the actions, the mission, the last
few steps and the current state as the agent's prompts show states (`prompts/react.txt`); the
answer is a thought and an ``Action:`` line. An answer without a usable action still costs its
call; the agent then takes a random action and records the failure.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from codeworld.agent.envs import ObjectEnv, make_object_env
from codeworld.agent._loop import Milestone
from codeworld.llm._prompts import render
from codeworld.synthesis.config import SamplingConfig
from codeworld.worlds.objects._states import compact, state_diff

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"  # react.txt

_ACTION_LINE = re.compile(r"^\W*action\s*[:=](.*)$", re.IGNORECASE | re.MULTILINE)
_INTEGER = re.compile(r"\b\d+\b")


def parse_action(text: str, action_names: Sequence[str]) -> int | None:
    """The action an answer names on its last usable ``Action:`` line, or None.

    On a line, the last whole number that is a valid action wins; failing that, the action name
    that ends last (the longer name when two end together, so "move forward" beats "forward").
    """
    names = [n.lower() for n in action_names]
    for line in reversed(_ACTION_LINE.findall(text)):
        for token in reversed(_INTEGER.findall(line)):
            if 0 <= int(token) < len(names):
                return int(token)
        lowered = line.lower()
        best: tuple[int, int, int] | None = None  # (end, length, action)
        for action, name in enumerate(names):
            for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", lowered):
                candidate = (match.end(), len(name), action)
                best = candidate if best is None or candidate > best else best
        if best is not None:
            return best[2]
    return None


@dataclass(frozen=True)
class ReActConfig:
    """Settings of the ReAct baseline.

    Attributes:
        history: the last steps shown in each prompt.
        max_episode_steps: steps per episode (None: the level's own limit).
        sampling: sampling of every call (a thought and an action need few tokens).
        seed: seeds the random action taken after an unusable answer, and the calls.
    """

    history: int = 5
    max_episode_steps: int | None = 40
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=0.7,
                                                                             max_tokens=256))
    seed: int = 0


class ReActAgent:
    """Asks the LLM for every action.

    Args:
        llm: anything with ``complete(messages, **sampling)`` returning text and token counts
            (`codeworld.llm.make_llm`, or a scripted LLM in tests).
        config: the baseline's settings.

    Attributes:
        calls, tokens, parse_failures: running totals over every episode played.
    """

    def __init__(self, llm: Any, config: ReActConfig | None = None):
        self.llm = llm
        self.config = config or ReActConfig()
        self.rng = random.Random(self.config.seed)
        self.calls = 0
        self.tokens = 0
        self.parse_failures = 0

    def messages(self, env: ObjectEnv, mission: str, state: dict, history: list[dict], step: int,
                 limit: int) -> list[dict]:
        """The prompt of one step."""
        names = env.action_names
        shown = history[-self.config.history:] if self.config.history > 0 else []
        lines = [f"{h['action']} ({names[h['action']]}): {'; '.join(h['changes']) or 'nothing changed'}; "
                 f"reward {h['reward']:g}" for h in shown]
        return render(
            "react", PROMPT_DIR, description=env.description, mission=mission,
            actions=", ".join(f"{i} = {n}" for i, n in enumerate(names)),
            history="\n".join(lines) or "(none yet: this is the first step)",
            state=compact(state), step=step, limit=limit)

    def choose(self, messages: list[dict], action_names: Sequence[str]) -> tuple[int, bool, str]:
        """One call: ``(action, parsed, text)``; an unusable answer gives a random action."""
        sampling = self.config.sampling
        kwargs: dict[str, Any] = {"temperature": sampling.temperature, "max_tokens": sampling.max_tokens}
        if sampling.seed_per_call:
            kwargs.update(seed=self.config.seed, sample=self.calls)
        completion = self.llm.complete(messages, **kwargs)
        self.calls += 1
        self.tokens += int(completion.prompt_tokens) + int(completion.completion_tokens)
        action = parse_action(completion.text, action_names)
        if action is None:
            self.parse_failures += 1
            return self.rng.randrange(len(action_names)), False, completion.text
        return action, True, completion.text

    def run_episode(self, env: ObjectEnv, seed: int | None = None) -> dict:
        """Play one episode; returns its record (``success``, ``steps``, ``calls``, ``tokens``,
        ``parse_failures``, ``actions``)."""
        state, mission = env.reset(seed=seed)
        limit = self.config.max_episode_steps or env.max_steps
        calls, tokens, failures = self.calls, self.tokens, self.parse_failures
        history: list[dict] = []
        success = False
        for step in range(limit):
            messages = self.messages(env, mission, state, history, step, limit)
            action, _, _ = self.choose(messages, env.action_names)
            next_state, reward, terminated, truncated = env.step(action)
            history.append({"action": action, "changes": state_diff(state, next_state),
                            "reward": float(reward)})
            state = next_state
            success = success or reward > 0
            if terminated or truncated:
                break
        return {"seed": seed, "mission": mission, "success": success, "steps": len(history),
                "calls": self.calls - calls, "tokens": self.tokens - tokens,
                "parse_failures": self.parse_failures - failures,
                "actions": [h["action"] for h in history]}


def react_baseline(level: str, llm: Any, episodes: int, seed: int = 0, reliable: int = 3, *,
                   seeds: Sequence[int] | None = None, config: ReActConfig | None = None) -> dict:
    """Play ``episodes`` episodes of one level with a `ReActAgent`.

    Args:
        level: ``family:level``.
        llm: the LLM that chooses every action.
        episodes: episodes to play (all of them: the success rate is the measurement).
        seed: seeds the agent (its random fallback and its calls).
        reliable: successful episodes in a row that count as reliable success.
        seeds: episode seeds, cycled (default: 0, 1, 2, ...).
        config: the baseline's settings (its ``seed`` is replaced by ``seed``).

    Returns:
        The accounting in the shape of `codeworld.agent._loop.summary_row` (``level``,
        ``episodes``, ``successes``, ``env_steps``, ``llm_calls``, ``tokens``, ``first_success``,
        ``reliable_success``, ``wall_seconds``) plus ``method``, ``success_rate``,
        ``calls_per_episode``, ``tokens_per_episode``, ``parse_failures`` and ``episode_log``.
    """
    if episodes < 1 or reliable < 1:
        raise ValueError("episodes and reliable must be at least 1")
    config = replace(config or ReActConfig(), seed=seed)
    agent = ReActAgent(llm, config)
    env = make_object_env(level, max_steps=config.max_episode_steps)
    started = time.perf_counter()
    log: list[dict] = []
    env_steps = successes = streak = 0
    first = reliable_at = None
    try:
        for index in range(episodes):
            episode_seed = seeds[index % len(seeds)] if seeds else index
            record = agent.run_episode(env, episode_seed)
            env_steps += record["steps"]
            log.append(record)
            if record["success"]:
                successes += 1
                streak += 1
                here = Milestone(index + 1, env_steps, agent.calls, agent.tokens)
                first = first or here
                if streak >= reliable and reliable_at is None:
                    reliable_at = here
            else:
                streak = 0
    finally:
        env.close()
    milestone = (lambda m: None if m is None else asdict(m))
    return {"method": "react", "level": env.name, "episodes": episodes, "successes": successes,
            "success_rate": round(successes / episodes, 3), "env_steps": env_steps,
            "llm_calls": agent.calls, "tokens": agent.tokens,
            "calls_per_episode": round(agent.calls / episodes, 1),
            "tokens_per_episode": round(agent.tokens / episodes, 1),
            "parse_failures": agent.parse_failures, "first_success": milestone(first),
            "reliable_success": milestone(reliable_at), "seed": seed,
            "wall_seconds": round(time.perf_counter() - started, 2), "episode_log": log}
