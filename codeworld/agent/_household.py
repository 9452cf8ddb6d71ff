"""codeworld's own household world: text tasks on receptacles and objects, in the spirit of ALFWorld.

ALFWorld (Shridhar et al., "ALFWorld: Aligning Text and Embodied Environments for Interactive
Learning", ICLR 2021) poses six kinds of household task in text; WorldCoder (Tang, Key, Ellis,
NeurIPS 2024) reports that its agent solves them only with optimism under uncertainty. This is an
independent, small and deterministic world with the same six kinds of task, so that the agent
can be run and tested on them without ALFWorld's simulator:

* **place**: ``put a mug in a cabinet``
* **examine**: ``examine a book under the desklamp`` (hold it at the desk with the lamp on)
* **clean**: ``put a clean plate on a shelf`` (wash it at the sink first)
* **heat**: ``put a hot potato on a table`` (heat it in the microwave first)
* **cool**: ``put a cool tomato on a countertop`` (cool it in the fridge first)
* **two**: ``put two apples in a drawer`` (both in the same drawer)

The action set is the same on every level: one *go to* per receptacle of a fixed list (going
to a receptacle a level does not have does nothing), one *take* per object kind, and open,
close, put, clean, heat, cool and toggle the desklamp. The state is a JSON-ready dict::

    {"at": "countertop 1", "holding": "apple 1", "lamp_on": false,
     "open": {"countertop 1": true, "fridge 1": false, ...},
     "objects": {"apple 1": {"in": null, "clean": false, "hot": false, "cool": false},
                 "mug 1": {"in": "cabinet 1", "clean": false, "hot": false, "cool": false}}}

``open`` names every receptacle of the level (those that cannot be opened are always open);
``at`` is null before the first move (the agent stands in the middle of the room); a held
object's ``in`` is null. Levels are the named ones of `LEVELS` (one per kind of task) and
``gen:SEED``, a random layout and task from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RECEPTACLES = ("cabinet 1", "cabinet 2", "countertop 1", "countertop 2", "desk 1", "drawer 1",
               "drawer 2", "fridge 1", "microwave 1", "shelf 1", "sink 1", "table 1")
OPENABLE = ("cabinet", "drawer", "fridge", "microwave")
OBJECT_KINDS = ("apple", "book", "bowl", "cellphone", "mug", "plate", "potato", "tomato")
PLURALS = {"potato": "potatoes", "tomato": "tomatoes"}
APPLIANCES = ("desk 1", "fridge 1", "microwave 1", "sink 1")
STORAGE = tuple(r for r in RECEPTACLES if r not in APPLIANCES)
TASK_KINDS = ("place", "examine", "clean", "heat", "cool", "two")
FLAG_OF = {"clean": "clean", "heat": "hot", "cool": "cool"}

GO_ACTIONS = tuple(f"go to {r}" for r in RECEPTACLES)
TAKE_ACTIONS = tuple(f"take {k}" for k in OBJECT_KINDS)
OTHER_ACTIONS = ("open", "close", "put", "clean", "heat", "cool", "toggle desklamp")
ACTIONS = GO_ACTIONS + TAKE_ACTIONS + OTHER_ACTIONS
OPEN, CLOSE, PUT, CLEAN, HEAT, COOL, TOGGLE = range(len(GO_ACTIONS) + len(TAKE_ACTIONS), len(ACTIONS))


def _action_list(names: tuple[str, ...], first: int) -> str:
    return ", ".join(f"{first + i} = {name}" for i, name in enumerate(names))


DESCRIPTION = f"""\
A household in text. The house has receptacles (places that hold objects), named "KIND N" such as
"fridge 1" or "drawer 2"; a level has some of these: {", ".join(RECEPTACLES)}. Fridges,
microwaves, drawers and cabinets are openable and start closed; the others are always open.
The desk carries the desklamp. Objects are named "KIND N" such as "apple 1" or "mug 2", with
kinds {", ".join(OBJECT_KINDS)}. Every object lies in one receptacle, or in the agent's hand.
The agent stands at one receptacle (or, before its first move, in the middle of the room) and
holds at most one object.

Actions: {_action_list(GO_ACTIONS, 0)} (the agent moves there; nothing happens if the level has
no such receptacle). {_action_list(TAKE_ACTIONS, len(GO_ACTIONS))} (with an empty hand, at an
open receptacle holding an object of that kind, the agent picks up the one with the lowest
number). {OPEN} = open and {CLOSE} = close (the openable receptacle where the agent stands).
{PUT} = put (the held object into the open receptacle where the agent stands). {CLEAN} = clean
(the held object becomes clean; only at the sink). {HEAT} = heat (the held object becomes hot and
stops being cool; only at the microwave). {COOL} = cool (the held object becomes cool and stops
being hot; only at the fridge). {TOGGLE} = toggle desklamp (switches the lamp on or off; only at
the desk). An action whose conditions do not hold changes nothing.

The state is a dict: "at" (the receptacle where the agent stands, or null), "holding" (the held
object's name, or null), "lamp_on", "open" (the name of every receptacle of the level -> whether
it is open; one that is not openable is always open) and "objects" (name -> {{"in", "clean", "hot", "cool"}},
where "in" is the receptacle holding the object, or null while the agent holds it).
The mission is one sentence: "put a KIND in/on a RECEPTACLE-KIND" (an object of that kind in any
receptacle of that kind), "put a clean/hot/cool KIND in/on a RECEPTACLE-KIND" (the same, and the
object must be clean, hot or cool), "put two KINDs in/on a RECEPTACLE-KIND" (two objects of that
kind in the same receptacle of that kind), or "examine a KIND under the desklamp" (the agent holds
an object of that kind at the desk while the lamp is on). Reward is 1.0 and the episode ends
(done) on the step after which the mission holds; every other step gives reward 0.0 and does not
end the episode."""


@dataclass(frozen=True)
class Task:
    """What a level asks: the kind of task, the object kind, and the receptacle kind.

    Attributes:
        kind: one of `TASK_KINDS`.
        obj: the object kind (``apple``).
        target: the receptacle kind (``drawer``); ``desk`` for *examine*.
    """

    kind: str
    obj: str
    target: str

    @property
    def mission(self) -> str:
        """The task as the sentence the agent sees."""
        if self.kind == "examine":
            return f"examine {_article(self.obj)} {self.obj} under the desklamp"
        where = f"{'in' if self.target in OPENABLE else 'on'} a {self.target}"
        if self.kind == "two":
            return f"put two {PLURALS.get(self.obj, self.obj + 's')} {where}"
        named = f"{FLAG_OF[self.kind]} {self.obj}" if self.kind in FLAG_OF else self.obj
        return f"put {_article(named)} {named} {where}"


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def kind_of(name: str) -> str:
    """The kind of a receptacle or object: ``"drawer 2"`` -> ``"drawer"``."""
    return name.rsplit(" ", 1)[0]


def _number(name: str) -> int:
    return int(name.rsplit(" ", 1)[1])


def task_done(state: dict, task: Task) -> bool:
    """Whether the task holds in a state."""
    objects = state["objects"]
    if task.kind == "examine":
        holding = state["holding"]
        return (state["lamp_on"] and state["at"] is not None and kind_of(state["at"]) == "desk"
                and holding is not None and kind_of(holding) == task.obj)
    placed: dict[str, int] = {}
    for name, obj in objects.items():
        if kind_of(name) != task.obj or obj["in"] is None or kind_of(obj["in"]) != task.target:
            continue
        if task.kind in FLAG_OF and not obj[FLAG_OF[task.kind]]:
            continue
        placed[obj["in"]] = placed.get(obj["in"], 0) + 1
    return max(placed.values(), default=0) >= (2 if task.kind == "two" else 1)


def step_state(state: dict, action: int) -> dict:
    """The true dynamics: the next state for a state and an action in ``0 .. len(ACTIONS) - 1``."""
    if not 0 <= action < len(ACTIONS):
        raise ValueError(f"household actions are 0..{len(ACTIONS) - 1}, got {action!r}")
    out = _copy(state)
    at, holding = out["at"], out["holding"]
    reachable = at is not None and out["open"][at]
    if action < len(GO_ACTIONS):
        if RECEPTACLES[action] in out["open"]:
            out["at"] = RECEPTACLES[action]
    elif action < len(GO_ACTIONS) + len(TAKE_ACTIONS):
        kind = OBJECT_KINDS[action - len(GO_ACTIONS)]
        if holding is None and reachable:
            found = [n for n, o in out["objects"].items() if o["in"] == at and kind_of(n) == kind]
            if found:
                name = min(found, key=_number)
                out["objects"][name]["in"] = None
                out["holding"] = name
    elif action in (OPEN, CLOSE):
        if at is not None and kind_of(at) in OPENABLE:
            out["open"][at] = action == OPEN
    elif action == PUT:
        if holding is not None and reachable:
            out["objects"][holding]["in"] = at
            out["holding"] = None
    elif action == TOGGLE:
        if at is not None and kind_of(at) == "desk":
            out["lamp_on"] = not out["lamp_on"]
    elif holding is not None and at is not None:
        held = out["objects"][holding]
        if action == CLEAN and kind_of(at) == "sink":
            held["clean"] = True
        elif action == HEAT and kind_of(at) == "microwave":
            held["hot"], held["cool"] = True, False
        elif action == COOL and kind_of(at) == "fridge":
            held["cool"], held["hot"] = True, False
    return out


def _object(where: str) -> dict:
    return {"in": where, "clean": False, "hot": False, "cool": False}


def make_state(receptacles: list[str], objects: dict[str, str]) -> dict:
    """A start state: the agent in the middle of the room, hand empty, lamp off, all closed.

    Args:
        receptacles: the level's receptacles (names from `RECEPTACLES`).
        objects: object name -> the receptacle it lies in.

    Raises:
        ValueError: an unknown receptacle or object kind, or an object in a missing receptacle.
    """
    for name in receptacles:
        if name not in RECEPTACLES:
            raise ValueError(f"unknown receptacle {name!r}; known: {', '.join(RECEPTACLES)}")
    for name, where in objects.items():
        if kind_of(name) not in OBJECT_KINDS:
            raise ValueError(f"unknown object kind in {name!r}; known: {', '.join(OBJECT_KINDS)}")
        if where not in receptacles:
            raise ValueError(f"{name!r} lies in {where!r}, which the level does not have")
    return {"at": None, "holding": None, "lamp_on": False,
            "open": {r: kind_of(r) not in OPENABLE for r in sorted(receptacles)},
            "objects": {name: _object(where) for name, where in sorted(objects.items())}}


_KITCHEN = ["cabinet 1", "countertop 1", "desk 1", "drawer 1", "fridge 1", "microwave 1",
            "shelf 1", "sink 1", "table 1"]

LEVELS: dict[str, tuple[list[str], dict[str, str], Task]] = {
    "place": (_KITCHEN, {"mug 1": "countertop 1", "apple 1": "table 1", "book 1": "shelf 1"},
              Task("place", "mug", "cabinet")),
    "examine": (_KITCHEN, {"book 1": "drawer 1", "cellphone 1": "desk 1", "bowl 1": "shelf 1"},
                Task("examine", "book", "desk")),
    "clean": (_KITCHEN, {"plate 1": "table 1", "mug 1": "cabinet 1", "apple 1": "countertop 1"},
              Task("clean", "plate", "shelf")),
    "heat": (_KITCHEN, {"potato 1": "fridge 1", "tomato 1": "countertop 1", "plate 1": "table 1"},
             Task("heat", "potato", "table")),
    "cool": (_KITCHEN, {"tomato 1": "table 1", "apple 1": "fridge 1", "bowl 1": "cabinet 1"},
             Task("cool", "tomato", "countertop")),
    "two": (_KITCHEN, {"apple 1": "countertop 1", "apple 2": "table 1", "mug 1": "drawer 1"},
            Task("two", "apple", "drawer")),
}


@dataclass(frozen=True)
class LayoutConfig:
    """Settings of the layout generator.

    Attributes:
        storage: how many receptacles besides the four appliances (fridge, microwave, sink,
            desk), from 2 to 8.
        distractors: objects besides those the task needs.
    """

    storage: int = 4
    distractors: int = 2


def generate_layout(seed: int, config: LayoutConfig | None = None) -> tuple[list[str], dict[str, str], Task]:
    """A random layout and task whose mission does not hold at the start.

    Args:
        seed: the random seed (the same seed gives the same layout and task).
        config: the layout's size.

    Returns:
        ``(receptacles, objects, task)`` as `make_state` and `HouseholdEnv` take them.
    """
    config = config or LayoutConfig()
    if not 2 <= config.storage <= len(STORAGE):
        raise ValueError(f"storage must be between 2 and {len(STORAGE)}, got {config.storage}")
    rng = np.random.default_rng(seed)
    storage = sorted(str(s) for s in rng.choice(STORAGE, size=config.storage, replace=False))
    receptacles = sorted(list(APPLIANCES) + storage)
    kind = TASK_KINDS[int(rng.integers(len(TASK_KINDS)))]
    obj = OBJECT_KINDS[int(rng.integers(len(OBJECT_KINDS)))]
    target = "desk" if kind == "examine" else kind_of(str(rng.choice(storage)))
    # The task's objects never start in a receptacle of the target kind (the mission would hold,
    # or half hold), nor in the fridge of a cooling task; never at the sink or in the microwave.
    sources = [r for r in storage + ["desk 1", "fridge 1"]
               if kind_of(r) != target and not (kind == "cool" and r == "fridge 1")]
    if kind == "two":  # two fetches are long enough: the pair starts where nothing needs opening
        sources = [r for r in sources if kind_of(r) not in OPENABLE]
    objects: dict[str, str] = {}
    counts: dict[str, int] = {}

    def add(kind_name: str, places: list[str]) -> None:
        counts[kind_name] = counts.get(kind_name, 0) + 1
        objects[f"{kind_name} {counts[kind_name]}"] = str(rng.choice(places))

    for _ in range(2 if kind == "two" else 1):
        add(obj, sources)
    others = [k for k in OBJECT_KINDS if k != obj]
    for _ in range(config.distractors):
        add(others[int(rng.integers(len(others)))], storage + ["fridge 1", "desk 1"])
    return receptacles, objects, Task(kind, obj, target)


class HouseholdEnv:
    """One household level as an object-level environment.

    Args:
        receptacles: the level's receptacles.
        objects: object name -> where it starts.
        task: what the level asks.
        name: a name for reports.
        max_steps: the episode is truncated after this many steps.

    Raises:
        ValueError: a bad layout, or a task that already holds at the start.
    """

    n_actions = len(ACTIONS)
    action_names = ACTIONS
    description = DESCRIPTION
    family = "household"

    def __init__(self, receptacles: list[str], objects: dict[str, str], task: Task,
                 name: str = "household", max_steps: int = 50):
        self.start = make_state(receptacles, objects)
        if task.kind not in TASK_KINDS:
            raise ValueError(f"unknown task kind {task.kind!r}; known: {', '.join(TASK_KINDS)}")
        if task_done(self.start, task):
            raise ValueError(f"the mission {task.mission!r} already holds at the start")
        self.task = task
        self.name = name
        self.max_steps = max_steps
        self.state: dict | None = None
        self.steps = 0

    @property
    def mission(self) -> str:
        return self.task.mission

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        """Start an episode (a level has one start state: ``seed`` is unused)."""
        self.state = _copy(self.start)
        self.steps = 0
        return _copy(self.state), self.mission

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        """``(next_state, reward, terminated, truncated)`` with reward 1.0 on success."""
        assert self.state is not None, "call reset() first"
        self.state = step_state(self.state, int(action))
        self.steps += 1
        done = task_done(self.state, self.task)
        return _copy(self.state), (1.0 if done else 0.0), done, (not done and self.steps >= self.max_steps)

    def close(self) -> None:
        pass


def _copy(state: dict) -> dict:
    return {**state, "open": dict(state["open"]),
            "objects": {k: dict(v) for k, v in state["objects"].items()}}


def make_household(level: str = "place", max_steps: int = 50) -> HouseholdEnv:
    """A household env from a level name of `LEVELS` or ``gen:SEED``.

    Raises:
        KeyError: an unknown level name.
        ValueError: ``gen:`` with a seed that is not a whole number.
    """
    if level in LEVELS:
        receptacles, objects, task = LEVELS[level]
        return HouseholdEnv(receptacles, objects, task, name=f"household-{level}", max_steps=max_steps)
    if level.startswith("gen:"):
        try:
            seed = int(level.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"a generated household level is gen:SEED with a whole-number seed, "
                             f"not {level!r}") from None
        receptacles, objects, task = generate_layout(seed)
        return HouseholdEnv(receptacles, objects, task, name=f"household-gen{seed}", max_steps=max_steps)
    raise KeyError(f"unknown household level {level!r}; bundled: {', '.join(LEVELS)}, or gen:SEED")
