"""The agent's frozen configuration."""

from __future__ import annotations

from dataclasses import dataclass, field

from codeworld.synthesis.config import SamplingConfig
from codeworld.synthesis._rex import RexConfig


@dataclass(frozen=True)
class AgentConfig:
    """Settings of the WorldCoder agent (Tang, Key, Ellis 2024, arXiv 2402.12275).

    Attributes:
        optimism: require that a planner on the model reaches the mission's reward from the
            episode's start state (the optimism objective), besides explaining every recorded
            transition (the data-consistency objective). Off: data consistency only.
        transfer: carry the model and the data from one level of a curriculum to the next. Off:
            every level starts from nothing.
        epsilon: probability of a random action at each step (exploration beside the plan).
        max_env_steps: environment steps per level before the agent gives up on it.
        max_llm_calls: LLM calls per level before the agent stops rewriting (it keeps acting).
        rewrite_calls: the most LLM calls of one rewrite (one REx search).
        rewrite_growth: after a rewrite that found no program explaining all data, the next one
            waits until the data has grown by this fraction of what the level had recorded then
            (and by at least one transition per action); 0 with one action rewrites at every
            contradiction.
        reliable_successes: successful episodes in a row that count as reliable success; the
            level ends there.
        max_episode_steps: steps per episode (None: the environment's own limit).
        plan_max_nodes: states the breadth-first planner may expand per plan.
        plan_max_depth: the longest plan.
        eval_timeout_s: wall-clock limit of one sandbox request (checking a program on the data
            and planning over it); past it that program counts as failed, the agent goes on.
            The agent's only dependence on speed (its work is bounded by the data and
            ``plan_max_nodes``): a test that must not depend on load sets it, and the sandbox's
            startup limit, beyond pytest's own hang guard.
        prompt_examples: recorded transitions shown in a *generate* prompt.
        assists: the synthesis core's help for every rewrite, built from the recorded states and
            transitions (`codeworld.worlds.objects._states`): the state's schema and a data section
            in the prompts, a skeleton to start from, static checks and mechanical repairs before a
            program runs, and answers that copy the skeleton or an earlier program recognised.
            Off: the prompts show the description and a few transitions only.
        rule_model: before each rewrite's LLM calls, learn the rule model from the data
            (`codeworld.worlds.objects._rules`: each action's changes and their conditions, the
            reward once a step got one) and put it in REx's pool as the parent of the rewrite;
            an accepted one ends the rewrite with no call, and while no step got reward the
            calls write only the reward from the mission. A contradiction between rewrites
            refits it. Needs the assists. Off: the LLM writes every program.
        explore_unseen: when the model's planner reaches no reward, plan to the nearest state
            from which an action is tried in a situation of the agent (the values of the
            leaves the actions change) never recorded (`codeworld.agent._explore`), instead of
            a random step. Off: explore at random.
        keep_going_after_success: keep acting after reliable success until `max_env_steps`
            (off: the level ends at reliable success).
        rex: REx's settings (C = 5, the REx paper's value).
        sampling: sampling of every LLM call.
        seed: seeds exploration and REx.
    """

    optimism: bool = True
    transfer: bool = True
    epsilon: float = 0.1
    max_env_steps: int = 300
    max_llm_calls: int = 20
    rewrite_calls: int = 4
    rewrite_growth: float = 1.0
    reliable_successes: int = 10
    max_episode_steps: int | None = 50
    plan_max_nodes: int = 20000
    plan_max_depth: int = 60
    eval_timeout_s: float = 30.0
    prompt_examples: int = 4
    assists: bool = True
    rule_model: bool = True
    explore_unseen: bool = True
    keep_going_after_success: bool = False
    rex: RexConfig = field(default_factory=RexConfig)
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=0.7,
                                                                             max_tokens=1200))
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError("epsilon must be in [0, 1]")
        if self.rewrite_calls < 1 or self.max_llm_calls < 0 or self.max_env_steps < 1:
            raise ValueError("rewrite_calls >= 1, max_llm_calls >= 0 and max_env_steps >= 1")
        if self.rewrite_growth < 0:
            raise ValueError("rewrite_growth must be >= 0")
        if self.reliable_successes < 1:
            raise ValueError("reliable_successes must be at least 1")
