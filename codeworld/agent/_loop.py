"""The WorldCoder agent loop: act, record, rewrite the model with REx when data contradicts it.

Per level (an environment with a mission), episode after episode:

1. At the start of an episode the current program is checked on every recorded transition and,
   under the optimism objective, the planner must reach reward over it from the start state. A
   program that fails either is rewritten with REx (`codeworld.synthesis.Rex`, driven by
   `codeworld.synthesis.synthesize`), the pool seeded with the current program.
2. The agent follows the planner's plan, with probability ``epsilon`` a random action instead.
   Every transition is stored. A transition the model mispredicts triggers a rewrite at once;
   then the agent replans from where it stands (and acts at random when no plan exists).
3. Success is an episode that gets reward; reliable success is ``reliable_successes`` in a row.

Across levels (`run_curriculum`), the model and the data carry over (transfer); the prompts of a
new mission name the known missions nearest to it, whose reward code the program already holds.
Everything runs through one sandbox: no generated code runs in this process.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from codeworld.agent._config import AgentConfig
from codeworld.agent._explore import explore_arguments, op_plan_explore
from codeworld.agent.envs import ObjectEnv
from codeworld.sandbox import Sandbox, SandboxLimits
from codeworld.synthesis._rex import PoolEntry, Rex
from codeworld.synthesis.run import Run
from codeworld.synthesis._run_dir import AgentAccounting, AgentRunDir
from codeworld.synthesis.types import ProgramEvaluation
from codeworld.worlds.objects._evaluate import AgentEvaluator, ModelCheck
from codeworld.worlds.objects._ops import op_evaluate, op_plan
from codeworld.worlds.objects._rules import (RewardPrompts, learn_rules, with_reward,
                                            written_reward)
from codeworld.worlds.objects._states import (mission_parts, normalize_state, state_key,
                                             with_current_schema)
from codeworld.worlds.objects._world import ObjectLevel, ObjectSettings, object_evaluator
from codeworld.worlds.registry import make_world


class SeededRex(Rex):
    """REx whose pool starts with given programs (the current model), so a rewrite refines it.

    Seed entries have negative ids (-1, -2, ...) and cost no LLM call.
    """

    def seed_program(self, program: str, score: float, buggy: bool, feedback: str) -> None:
        self.pool.append(PoolEntry(call=-1 - len(self.pool), parent=-1, action="seed",
                                   program=program, score=0.0 if buggy else score, buggy=buggy,
                                   feedback=feedback))


@dataclass
class Milestone:
    """Where the agent stood when it reached a milestone (first success, reliable success)."""

    episodes: int
    env_steps: int
    llm_calls: int
    tokens: int


@dataclass
class LevelResult:
    """What happened on one level.

    Attributes:
        level: the level's name.
        missions: the missions seen.
        episodes: episodes played.
        successes: episodes that got reward.
        env_steps, llm_calls, prompt_tokens, completion_tokens: the level's cost.
        rewrites: REx searches run (each: reason, calls, accepted, score).
        first_success, reliable_success: the cost up to each milestone (None: not reached).
        final_program: the model at the end of the level.
        final_check: its check on all data at the end.
        plan_timeouts: plans that ran out of time (the model hung or was too slow).
        wall_seconds: wall time of the level.
    """

    level: str
    missions: list[str] = field(default_factory=list)
    episodes: int = 0
    successes: int = 0
    env_steps: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rewrites: list[dict] = field(default_factory=list)
    first_success: Milestone | None = None
    reliable_success: Milestone | None = None
    final_program: str | None = None
    final_check: dict | None = None
    plan_timeouts: int = 0
    wall_seconds: float = 0.0
    episode_log: list[dict] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict:
        data = asdict(self)
        data["tokens"] = self.tokens
        return data


def _mission_words(mission: str) -> set[str]:
    return set(mission.lower().replace(",", " ").split())


def nearest_missions(mission: str, known: list[str], k: int = 3) -> list[str]:
    """The known missions most like ``mission`` (word overlap, Jaccard), nearest first."""
    words = _mission_words(mission)

    def similarity(other: str) -> float:
        o = _mission_words(other)
        return len(words & o) / max(1, len(words | o))

    return sorted((m for m in known if m != mission), key=lambda m: (-similarity(m), m))[:k]


class WorldCoderAgent:
    """Learns a world model program by acting, and plans with it.

    Args:
        llm: anything with ``complete(messages, **sampling)`` (`codeworld.llm.make_llm`, or a
            scripted LLM in tests).
        config: the agent's settings.
        run_dir: where to write the run (levels, rewrites, programs, accounting); None: a
            temporary directory, removed by `close`.
        limits: the sandbox's limits (its timeout is replaced per request by
            ``config.eval_timeout_s``).
        progress: called with a small dict after each LLM call (``"event": "call"``, as
            `codeworld.synthesis._runner.synthesize` reports it, plus the level), each rewrite
            (``"rewrite"``) and each episode (``"episode"``).
    """

    def __init__(self, llm: Any, config: AgentConfig | None = None, run_dir: str | Path | None = None,
                 limits: SandboxLimits | None = None,
                 progress: Callable[[dict], None] | None = None):
        self.llm = llm
        backend = getattr(llm, "backend", None)  # an LLMClient: record its backend and model
        self.llm_name = (f"{backend.name}:{backend.model}".rstrip(":") if backend is not None
                         else type(llm).__name__)
        self.config = config or AgentConfig()
        # every rewrite is a synthesis run with its directory: a temporary one when none is given
        self._scratch = tempfile.TemporaryDirectory(prefix="codeworld-agent-") if run_dir is None else None
        self.run_dir = Path(run_dir) if run_dir is not None else Path(self._scratch.name)
        self.agent_dir = AgentRunDir(self.run_dir)
        self.sandbox = Sandbox(limits or SandboxLimits(seccomp=True))
        self.rng = random.Random(self.config.seed)
        self.program: str | None = None
        self.data: list[dict] = []
        self.known_missions: dict[str, str] = {}  # mission -> the level it was first met on
        self.rewrite_count = 0
        # the data's size at the last rewrite that found no accepted program (None: the last one
        # did, or none ran yet): the next rewrite waits for more data (`_rewrite_due`)
        self.failed_at: int | None = None
        # the data's size when the current level started (earlier levels' data, with transfer)
        self.level_start = 0
        # (state key, action, mission) -> the last recorded transition, and state key -> the
        # steps taken from that state, over self.data[:_indexed]
        self._outcomes: dict[tuple, dict] = {}
        self._visits: dict[str, int] = {}
        self._indexed = 0
        self.level_index = 0
        self.family: str | None = None
        self.results: list[LevelResult] = []
        self.progress = progress

    def _report(self, event: str, **fields: Any) -> None:
        if self.progress is not None:
            self.progress({"event": event, **fields})

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.sandbox.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    def __enter__(self) -> "WorldCoderAgent":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def reset_knowledge(self) -> None:
        """Forget the model, the data and the missions (a level without transfer)."""
        self.program = None
        self.data = []
        self.known_missions = {}
        self.failed_at = None
        self._outcomes, self._visits, self._indexed = {}, {}, 0

    # ------------------------------------------------------------------ model checks

    def _level(self, env: ObjectEnv, starts: list[dict], missions: str = "") -> ObjectLevel:
        """The level's rules and the data recorded so far, as its object world is built from."""
        return ObjectLevel(env.description, tuple(env.action_names), env.n_actions, self.data,
                           starts, missions)

    def _settings(self) -> ObjectSettings:
        c = self.config
        return ObjectSettings(optimism=c.optimism, max_nodes=c.plan_max_nodes,
                              max_depth=c.plan_max_depth, timeout_s=c.eval_timeout_s,
                              examples=c.prompt_examples)

    def _evaluator(self, env: ObjectEnv, starts: list[dict]) -> AgentEvaluator:
        """The evaluator of the level's object world (with the state's schema under the assists)."""
        return object_evaluator(self._level(env, starts), self.sandbox, self._settings(),
                                self.config.assists)

    def check(self, env: ObjectEnv, starts: list[dict], program: str | None = None) -> ModelCheck:
        """Check a program (default: the current one) on all data and from ``starts``."""
        program = self.program if program is None else program
        if program is None:
            return ModelCheck("invalid", "no model yet", n=len(self.data))
        return self._evaluator(env, starts).check(program)

    def _missions_text(self, mission: str) -> str:
        text = f"The current mission: \"{mission}\"."
        near = nearest_missions(mission, list(self.known_missions))
        if near:
            listed = "; ".join(f"\"{m}\" (level {self.known_missions[m]})" for m in near)
            text += (f"\nMissions the agent met before, nearest first (the reward function should "
                     f"keep working for them too, and a new mission is often like an old one): {listed}.")
        return text

    def _rewrite_due(self, env: ObjectEnv) -> bool:
        """Whether a contradiction calls for a rewrite now.

        After an accepted model, at once (the paper's schedule). After a rewrite that found no
        program for the data it had, the same evidence would be asked about again: the next one
        waits until the data has grown by ``rewrite_growth`` of what this level had recorded
        then, and by at least one transition per action, so each rewrite is shown something new.
        (The level's own data, not all of it: with transfer, a later level starts with the data
        of the earlier ones, and doubling that would leave one rewrite a level.)
        """
        if self.failed_at is None:
            return True
        grown = len(self.data) - self.failed_at
        recorded = self.failed_at - self.level_start
        return grown >= max(env.n_actions, self.config.rewrite_growth * recorded)

    def _goal_text(self, mission: str, state: dict) -> str:
        """What the assists add to the missions: the parts of the start state the mission's words
        name, and, while no recorded step has been rewarded, what that means for `reward`."""
        text = ""
        parts = mission_parts(mission, state)
        if parts:
            text += ("\nThe parts of the start state the mission's words name (the step that "
                     "completes it changes some of them):\n" + "\n".join(f"- {p}" for p in parts))
        if self.data and not any(t["reward"] > 0 for t in self.data):
            text += ("\nNo recorded step has completed a mission yet: `reward` returns (0.0, False) "
                     "on every recorded transition, and (1.0, True) only when `next_state` shows "
                     "the mission done, a test on the parts of the state it names, not on the "
                     "mission's text alone.")
        return text

    def rewrite(self, env: ObjectEnv, result: LevelResult, starts: list[dict], mission: str,
                reason: str) -> bool:
        """Run one REx search for a program that explains all data (and, under optimism, reaches
        reward from ``starts``). Returns whether an accepted program was found.

        The best program found replaces the current one when it scores higher.
        """
        c = self.config
        missions = self._missions_text(mission)
        if c.assists:
            missions += self._goal_text(mission, starts[0]["state"])
        world = make_world("objects", self._level(env, starts, missions), c.assists, None,
                           sandbox=self.sandbox, settings=self._settings())
        evaluator = world.evaluator
        rules = self._rules(evaluator, mission)
        if rules is not None and self.data and rules[1].report.get("accepted"):  # no call
            self.program, self.failed_at = rules[0], None
            self.rewrite_count += 1
            result.rewrites.append({"index": self.rewrite_count - 1, "reason": reason,
                                    "episode": result.episodes, "env_steps": result.env_steps,
                                    "calls": 0, "tokens": 0, "accepted": True, "composed": None,
                                    "rules": rules[1].score, "scores": [], "statuses": []})
            self._report("rewrite", level=env.name, **result.rewrites[-1],
                         llm_calls=result.llm_calls, level_tokens=result.tokens,
                         best=rules[1].score, run_dir=None)
            return True
        budget = min(c.rewrite_calls, c.max_llm_calls - result.llm_calls)
        reward_only = rules is not None and not rules[2]
        if reward_only and written_reward(rules[0]):  # the data cannot yet tell it right from
            budget = min(budget, 1)                   # wrong: one more answer, not a search
        if budget <= 0:
            if rules is not None and not rules[1].buggy:
                self._adopt(rules, evaluator)
            return False
        index = self.rewrite_count
        self.rewrite_count += 1
        search = SeededRex(c.rex, seed=c.seed + index)
        current_score = -1.0
        if self.program is not None:
            if evaluator.schema is not None:  # its comment on the keys, as today's data has them
                self.program = with_current_schema(self.program, evaluator.schema)
            current = evaluator.evaluate(self.program)
            current_score = current.score
            search.seed_program(self.program, current.score, current.buggy, current.feedback)
        if rules is not None:  # in the pool, and the parent when it explains more
            search.seed_program(rules[0], rules[1].score, rules[1].buggy, rules[1].feedback)
            if not rules[1].buggy and (self.program is None or _explains_more(rules[1], current)):
                self.program, current_score = rules[0], rules[1].score
        if reward_only:  # the data shows no reward yet: the calls write it from the mission
            world.prompts = RewardPrompts(world.prompts.context, rules[0])
        run = Run.start(self.agent_dir.rewrite_path(index), "worldcoder",
                        dataclasses.replace(c.rex, sampling=c.sampling), llm=self.llm_name,
                        budget=budget, seed=c.seed + index,
                        extra={"level": env.name, "reason": reason, "mission": mission,
                               "data": len(self.data), "optimism": c.optimism})
        calls = None if self.progress is None else (
            lambda e: self._report("call", level=env.name, rewrite=index, **e))
        out = run.execute(world, self.llm, search=search, progress=calls)
        acc = out.accounting
        result.llm_calls += acc.calls
        result.prompt_tokens += acc.prompt_tokens
        result.completion_tokens += acc.completion_tokens
        found = []  # (score, healthy, program)
        if out.best_call is not None and out.best_call >= 0 and out.best_evaluation is not None:
            best = out.best_evaluation
            found.append((0.0 if best.buggy else best.score, not best.buggy, out.best_program))
        elif reward_only:  # the seeds won the ties: the best answer still carries a reward
            written = [e for e in search.pool if e.call >= 0 and not e.buggy]
            if written:
                best = max(written, key=lambda e: (e.score, -e.call))
                found.append((best.score, True, best.program))
        composed = None
        if (evaluator.schema is not None and not reward_only
                and not (found and found[0][0] >= 1.0 - 1e-9)):
            joined = evaluator.compose()  # the best transition with the best reward: no call
            if joined is not None:
                composed = joined[1].score(c.optimism)
                found.append((composed, not joined[1].failed, joined[0]))
        accepted = False
        if found:
            score, healthy, program = max(found, key=lambda f: f[0])
            # (an answer that only ties the rule model keeps its reward, the mission's reading)
            if score > current_score or (reward_only and healthy and score >= current_score):
                self.program = program
                accepted = healthy and score >= 1.0 - 1e-9
        result.rewrites.append({"index": index, "reason": reason, "episode": result.episodes,
                                "env_steps": result.env_steps, "calls": acc.calls,
                                "tokens": acc.tokens, "accepted": accepted, "composed": composed,
                                "rules": None if rules is None else rules[1].score,
                                "scores": [h["score"] for h in out.history],
                                "statuses": [ch.status for ch in evaluator.checks]})
        self._report("rewrite", level=env.name, **result.rewrites[-1], llm_calls=result.llm_calls,
                     level_tokens=result.tokens, best=max(out.history[-1]["best"], 0.0)
                     if out.history else None, run_dir=str(run.run_dir.path))
        self.failed_at = None if accepted else len(self.data)
        return accepted

    def _rules(self, evaluator: AgentEvaluator, mission: str
               ) -> tuple[str, ProgramEvaluation, bool] | None:
        """The rule model of all data (`codeworld.worlds.objects._rules`), checked (None with it
        or the assists off), and whether it gives ``mission`` a learned reward; where it does
        not (no recorded step completed it, nor one of a mission whose reward holds on its
        steps), with the current program's reward (the mission's) unless the recorded steps
        contradict it where the rule model's own ("no step completes it yet") is right."""
        if not (self.config.rule_model and evaluator.schema is not None):
            return None
        model = learn_rules(self.data, names=evaluator.action_names)
        program, rewarded = model.program(), model.rewards(mission)
        if self.program is not None and not rewarded:
            taken = with_reward(program, self.program)  # the mission's reward
            if taken is not None:
                # kept unless it says that recorded steps completed the mission (none did)
                # where the rule model's "no step completes it" is right: a reward that every
                # step earns leaves the planner nothing to look for, where none lets it explore
                checked = evaluator.check(taken)
                if checked.reward_correct >= checked.n:
                    return taken, evaluator.evaluation(checked), rewarded
                own = evaluator.check(program)
                return ((taken, evaluator.evaluation(checked), rewarded)
                        if checked.reward_correct >= own.reward_correct
                        else (program, evaluator.evaluation(own), rewarded))
        return program, evaluator.evaluate(program), rewarded

    def _adopt(self, rules: tuple[str, ProgramEvaluation, bool], evaluator: AgentEvaluator) -> None:
        """The rule model replaces the current program where it scores higher, or its reward is
        right on more recorded steps (no LLM call; `_explains_more`)."""
        if self.program is None or _explains_more(rules[1], evaluator.evaluate(self.program)):
            self.program = rules[0]

    def refit(self, env: ObjectEnv) -> None:
        """Between rewrites (a contradiction while the next rewrite waits for data), the rule
        model of today's data takes the current program's place where it explains more of it
        (checked on the data alone: no plan)."""
        evaluator = self._evaluator(env, [])
        rules = self._rules(evaluator, self.data[-1]["mission"] if self.data else "")
        if rules is not None and not rules[1].buggy:
            self._adopt(rules, evaluator)

    def plan(self, env: ObjectEnv, state: dict, mission: str, result: LevelResult) -> dict | None:
        """A plan over the current model from ``state`` (None: no model, no plan, or a timeout)."""
        if self.program is None:
            return None
        c = self.config
        explore = (explore_arguments(self.data, mission, state, tuple(env.action_names))
                   if c.explore_unseen else {})
        # no reward in reach: to an action never tried where the agent would be
        op = op_plan_explore if explore else op_plan
        reply = self.sandbox.call(op, timeout_s=c.eval_timeout_s, source=self.program,
                                  state=state, mission=mission, n_actions=env.n_actions,
                                  max_nodes=c.plan_max_nodes, max_depth=c.plan_max_depth, **explore)
        if reply.status == "timeout":
            result.plan_timeouts += 1
        if not reply.ok or not reply.value["found"]:
            return None
        return reply.value

    # ------------------------------------------------------------------ acting

    def _record(self, state, action, next_state, reward, done, mission) -> dict:
        t = {"state": state, "action": int(action), "next_state": next_state,
             "reward": float(reward), "done": bool(done), "mission": mission}
        self.data.append(t)
        return t

    def _predicted_right(self, predicted: dict, t: dict) -> bool:
        return (normalize_state(predicted["next_state"]) == normalize_state(t["next_state"])
                and abs(float(predicted["reward"]) - t["reward"]) <= 1e-6
                and bool(predicted["done"]) == t["done"])

    def _explains(self, env: ObjectEnv, t: dict, result: LevelResult) -> bool:
        if self.program is None:
            return False
        reply = self.sandbox.call(op_evaluate, timeout_s=self.config.eval_timeout_s,
                                  source=self.program, transitions=[t], starts=[],
                                  n_actions=env.n_actions)
        return reply.ok and reply.value["correct"] == 1

    def _outcome(self, state: dict, action: int, mission: str) -> dict | None:
        """The last recorded transition from ``state`` under ``action`` (None: never tried)."""
        if len(self.data) < self._indexed:  # the data was replaced: index it again
            self._outcomes, self._visits, self._indexed = {}, {}, 0
        for t in self.data[self._indexed:]:
            key = state_key(t["state"])
            self._outcomes[(key, int(t["action"]), t["mission"])] = t
            self._visits[key] = self._visits.get(key, 0) + 1
        self._indexed = len(self.data)
        return self._outcomes.get((state_key(state), int(action), mission))

    def _explore(self, state: dict, mission: str, n_actions: int) -> int:
        """An exploratory action: one never tried from this state if there is one; else one whose
        recorded outcome is the state the agent has acted from least (ties at random), so that
        exploring moves on to the less known parts of the world instead of circling where it
        started."""
        outcomes = [self._outcome(state, a, mission) for a in range(n_actions)]
        untried = [a for a, t in enumerate(outcomes) if t is None]
        if untried:
            return self.rng.choice(untried)
        visits = [self._visits.get(state_key(t["next_state"]), 0) for t in outcomes]
        return self.rng.choice([a for a in range(n_actions) if visits[a] == min(visits)])

    def _milestone(self, result: LevelResult) -> Milestone:
        return Milestone(result.episodes, result.env_steps, result.llm_calls, result.tokens)

    def run_episode(self, env: ObjectEnv, result: LevelResult, seed: int) -> bool:
        """One episode; returns whether it got reward."""
        c = self.config
        state, mission = env.reset(seed=seed)
        if mission not in result.missions:
            result.missions.append(mission)
        start = {"state": state, "mission": mission}
        check = self.check(env, [start])
        if not check.accepted(c.optimism):
            reason = "no model" if self.program is None else (
                "contradicted by data" if check.consistency < 1 or check.failed else "goal unreachable")
            if self.program is None or self._rewrite_due(env):
                self.rewrite(env, result, [start], mission, reason)
            else:
                self.refit(env)
        plan = self.plan(env, state, mission, result)
        limit = c.max_episode_steps or env.max_steps
        success = False
        steps = 0
        contradictions = 0
        # a program shown wrong in this episode and not replaced: its plans lead back to what it
        # gets wrong (it may even plan a step whose recorded outcome it mispredicts, and repeat
        # it for ever), so the agent explores until a rewrite gives it another program
        distrusted: str | None = None
        while steps < limit and result.env_steps < c.max_env_steps:
            explore = (plan is None or not plan["actions"] or self.program == distrusted
                       or self.rng.random() < c.epsilon)
            if not explore:
                action = plan["actions"].pop(0)
                predicted = plan["predicted"].pop(0)
                known = self._outcome(state, action, mission)
                if known is not None and not self._predicted_right(predicted, known):
                    explore, distrusted = True, self.program
            if explore:
                action = self._explore(state, mission, env.n_actions)
                predicted = None
            next_state, reward, terminated, truncated = env.step(action)
            steps += 1
            result.env_steps += 1
            t = self._record(state, action, next_state, reward, terminated, mission)
            success = success or reward > 0
            right = self._predicted_right(predicted, t) if predicted is not None else \
                self._explains(env, t, result)
            if not right:
                contradictions += 1
                wrong = self.program
                if self._rewrite_due(env):
                    self.rewrite(env, result, [start], mission, "contradicted by a new transition")
                else:
                    self.refit(env)
                if self.program == wrong:
                    distrusted = wrong
            state = next_state
            if terminated or truncated:
                break
            # a plan used up without ending the episode (an exploration plan reached its untried
            # action) is followed by the next plan, not by a random action
            if explore or not right or not plan["actions"]:
                plan = None if self.program == distrusted else self.plan(env, state, mission, result)
        self.known_missions.setdefault(mission, env.name)
        result.episode_log.append({"episode": result.episodes, "seed": seed, "steps": steps,
                                   "success": success, "contradictions": contradictions,
                                   "env_steps": result.env_steps, "llm_calls": result.llm_calls})
        self._report("episode", level=env.name, **result.episode_log[-1], tokens=result.tokens)
        return success

    def run_level(self, env: ObjectEnv, seeds: list[int] | None = None) -> LevelResult:
        """Play episodes until reliable success or the level's step budget is spent.

        The model and data of the previous level are kept when ``config.transfer`` is on and the
        level is of the same family; otherwise the agent starts from nothing.

        Args:
            env: the level.
            seeds: episode seeds, cycled (default: 0, 1, 2, ...).
        """
        c = self.config
        if self.family is not None and (env.family != self.family or not c.transfer):
            self.reset_knowledge()  # transfer stays within one environment family
        self.family = env.family
        self.failed_at = None  # a new level is new evidence: its first rewrite does not wait
        self.level_start = len(self.data)
        started = time.perf_counter()
        result = LevelResult(level=env.name)
        streak = 0
        while result.env_steps < c.max_env_steps:
            seed = seeds[result.episodes % len(seeds)] if seeds else result.episodes
            success = self.run_episode(env, result, seed)
            result.episodes += 1
            if success:
                result.successes += 1
                streak += 1
                if result.first_success is None:
                    result.first_success = self._milestone(result)
                if streak >= c.reliable_successes and result.reliable_success is None:
                    result.reliable_success = self._milestone(result)
                    if not c.keep_going_after_success:
                        break
            else:
                streak = 0
        result.final_program = self.program
        if self.program is not None:
            state, mission = env.reset(seed=seeds[0] if seeds else 0)
            result.final_check = self.check(env, [{"state": state, "mission": mission}]).to_json()
        result.wall_seconds = time.perf_counter() - started
        self.results.append(result)
        self._save_level(result)
        self.level_index += 1
        return result

    def run_curriculum(self, envs: list[ObjectEnv], seeds: list[int] | None = None) -> list[LevelResult]:
        """Run levels in order; with ``transfer`` the model and the data carry over from one
        level to the next of the same family (a MiniGrid model is no start for Sokoban)."""
        out = [self.run_level(env, seeds) for env in envs]
        self._save_summary()
        return out

    # ------------------------------------------------------------------ run directory

    def _save_level(self, result: LevelResult) -> None:
        self.agent_dir.save_level(self.level_index, result.level, result.to_json(),
                                  result.final_program, self.data)
        self._save_summary()

    def _save_summary(self) -> None:
        self.agent_dir.save_accounting(AgentAccounting(asdict(self.config),
                                                       tuple(summary_row(r) for r in self.results)))


def _explains_more(rules: ProgramEvaluation, current: ProgramEvaluation) -> bool:
    """Whether the rule model should take the current program's place: it scores higher, or its
    reward is right on more recorded steps and it explains at least as many of them. Under
    optimism the score halves a model whose planner reaches no reward, so a program whose reward
    the data contradicts, its wrong goal in reach (an earlier mission's, true in the new level's
    start state), outscored the rule model until half the data contradicted it."""
    if rules.buggy:
        return False
    if current.buggy or rules.score > current.score:
        return True
    mine, theirs = _checked(rules), _checked(current)
    return (mine.get("reward_correct", 0) > theirs.get("reward_correct", 0)
            and mine.get("correct", 0) >= theirs.get("correct", 0))


def _checked(evaluation: ProgramEvaluation) -> dict:
    return (evaluation.report or {}).get("check") or {}


def summary_row(result: LevelResult) -> dict:
    """The accounting of one level: cost to first and to reliable success."""

    def milestone(m: Milestone | None) -> dict | None:
        return None if m is None else asdict(m)

    return {"level": result.level, "episodes": result.episodes, "successes": result.successes,
            "env_steps": result.env_steps, "llm_calls": result.llm_calls, "tokens": result.tokens,
            "rewrites": len(result.rewrites), "first_success": milestone(result.first_success),
            "reliable_success": milestone(result.reliable_success),
            "plan_timeouts": result.plan_timeouts, "wall_seconds": round(result.wall_seconds, 2)}
