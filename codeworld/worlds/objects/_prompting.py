"""The object world's prompts (the WorldCoder agent's rewrites): templates in ``prompts/`` beside
this module, filled by `codeworld.llm._prompts.fill`.

Templates use the LLM layer's format (``=== user ===`` sections, ``{{name}}`` placeholders,
``{{> file}}`` includes of files in the same folder). `AgentPrompts` turns a REx request into chat
messages: *generate* shows recorded transitions, *improve* the evaluator's account of what is
wrong (mispredicted transitions, or a goal the planner cannot reach), *fix* the error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeworld.worlds.objects._states import compact, state_diff
from codeworld.llm import extract_code
from codeworld.llm._extract import CodeExtractionError
from codeworld.llm._prompts import render
from codeworld.synthesis.types import FIX, GENERATE, Request

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"


def render_agent(name: str, **values: object) -> list[dict]:
    """Chat messages of the agent's template ``name`` filled with ``values`` (all must be used)."""
    return render(name, PROMPT_DIR, **values)


def describe_transition(t: dict, action_names: tuple[str, ...]) -> str:
    """One recorded transition as the prompts show it: the state, the action, what changed."""
    changes = state_diff(t["state"], t["next_state"]) or ["nothing"]
    action = int(t["action"])
    name = action_names[action] if 0 <= action < len(action_names) else "?"
    return (f"mission: {t['mission']}\nstate: {compact(t['state'])}\naction: {action} ({name})\n"
            f"changes: {'; '.join(changes)}\nreward: {t['reward']:g}, done: {bool(t['done'])}")


def pick_examples(data: list[dict], limit: int) -> list[dict]:
    """A few diverse transitions: every rewarded one first, then one per (action, kind of change)."""
    chosen, seen = [], set()
    for t in data:
        if t["reward"] > 0 or t["done"]:
            chosen.append(t)
    for t in data:
        kind = (int(t["action"]), tuple(line.split(":")[0] for line in state_diff(t["state"], t["next_state"])))
        if kind not in seen:
            seen.add(kind)
            if t not in chosen:
                chosen.append(t)
    return chosen[:limit]


@dataclass
class PromptContext:
    """What every prompt shows besides the program: the environment, actions, missions, data.

    Attributes:
        description: the environment's rules in prose.
        action_names: the name of each action.
        missions: the current mission and the nearest known ones.
        data: the recorded transitions.
        examples: recorded transitions a *generate* prompt shows in full.
        schema: what a state holds (`codeworld.worlds.objects._states.schema_text`); "" for none.
        effects: what the data show, per action (`codeworld.worlds.objects._states.effects_text`);
            "" for none.
        skeleton: the program a *generate* prompt starts from; "" for none.
    """

    description: str
    action_names: tuple[str, ...]
    missions: str
    data: list[dict]
    examples: int = 4
    schema: str = ""
    effects: str = ""
    skeleton: str = ""


class AgentPrompts:
    """REx's prompt builder for agent models (see `codeworld.synthesis.types.PromptBuilder`).

    Args:
        context: the environment and data the prompts describe.
    """

    def __init__(self, context: PromptContext):
        self.context = context

    def _common(self) -> dict:
        c = self.context
        actions = ", ".join(f"{i} = {n}" for i, n in enumerate(c.action_names))
        return {"description": c.description, "actions": actions, "missions": c.missions,
                "schema": c.schema or "(see the transitions below)"}

    def messages(self, request: Request) -> list[dict]:
        c = self.context
        if request.action == GENERATE:
            shown = pick_examples(c.data, c.examples)
            examples = "\n\n".join(describe_transition(t, c.action_names) for t in shown)
            start = (f"Start from this program, which is well formed but predicts that nothing "
                     f"changes:\n\n```python\n{c.skeleton.rstrip()}\n```" if c.skeleton else "")
            return render_agent("generate", examples=examples or "(none yet)",
                                effects=c.effects or "(nothing recorded yet)", start=start,
                                **self._common())
        if request.action == FIX:
            return render_agent("fix", program=request.program.rstrip("\n"),
                                error=request.feedback or "(no message)", **self._common())
        return render_agent("improve", program=request.program.rstrip("\n"),
                            problems=request.feedback or "(no details)",
                            effects=c.effects or "(nothing recorded yet)", **self._common())

    def program(self, request: Request, completion_text: str) -> str | None:
        """The program of a completion, which continues the prompt's prefill (the opening of the
        code block, as the world-model prompts do)."""
        from codeworld.llm.types import prefill_of

        try:
            return extract_code(completion_text, prefill_of(self.messages(request)))
        except CodeExtractionError:
            return None
