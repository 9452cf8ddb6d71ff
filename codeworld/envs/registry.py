"""Environment specs: the registry of the 18 CWMB environments (Dainese et al., NeurIPS 2024) on
Gymnasium 1.4 and RTFM, and the lookup of every other environment.

Each environment has one frozen `EnvSpec`: its ids (codeworld's and the paper's), how its actions
and observations look, how observations are flattened into the float64 state a world model sees,
the tolerances the sound scorer compares with, the planner that acts in it, how to save and restore
its simulator (the oracle; `codeworld.envs._simstate`) and how to put the true simulator into the
state an observation describes (the ceiling), or why either cannot be done. Nothing outside this
package asks which environment it has: it asks the spec. A name becomes a spec once, where a
user gives it (`resolve_env`, called by the public functions and the commands); the spec travels
from there, and its methods (`EnvSpec.make`, `EnvSpec.encode_obs`, ...) are what this module's
functions (`make_env`, `encode_obs`, ...) do once they hold it.

`get_spec` knows, besides the registry, any Gymnasium id (``[module:]Id[,key=value...]``; its spec
is derived from its spaces, `codeworld.envs.derive`), logged data (``data:FILE.npz``,
``minari:DATASET``; `codeworld.envs._datasets`) and specs registered at run time (`register_env`,
`register_spec`). A CWMB id always means the CWMB environment. The modules that derive specs build
them with this module's types, so this module does not import them: they are its resolvers
(`add_resolver`), added when `codeworld.envs` is imported.

Observation encoding (`encode_obs`): a ``Discrete`` observation becomes one number, Blackjack's
``(player_sum, dealer_card, usable_ace)`` tuple becomes three, a ``Box`` observation is flattened
as float64.

Setting the simulator from an observation (`set_state_from_obs`):

* classic control: the internal state is rebuilt from the observation (angles from their
  cosine and sine);
* toy text: the discrete observation *is* the state index (Taxi, CliffWalking); Blackjack's
  observation does not determine the cards, so it cannot be set;
* MuJoCo: ``qpos``/``qvel`` are read back from the observation; coordinates the observation
  excludes (the x position of the locomotion robots, the x/y of Ant and the Humanoids) are set to
  zero, velocities the observation does not carry (Reacher's target, Pusher's object and goal) to
  zero. The simulator data is reset first, so the result depends on the observation only.

Tolerances follow how values are stored: classic-control observations are float32 in Gymnasium, so
a state rebuilt from them reproduces the next observation only to a few float32 ulps (amplified a
little by the dynamics, most by Acrobot's RK4 integration); MuJoCo observations are float64;
toy-text values are integers and compare exactly.

RTFM (``RTFM-v0``) is codeworld's own game (`codeworld.envs._rtfm`), registered with Gymnasium
when its module is imported, which `get_spec` does on first use. It is not one of the paper's 18:
`list_envs` leaves it out unless asked.

Version notes: Gymnasium 1.4 renamed ``Taxi-v3`` to ``Taxi-v4`` and ``CliffWalking-v0`` to
``CliffWalking-v1`` (the paper's ids are accepted as aliases). ``Pusher-v4`` refuses to load on
MuJoCo >= 3 (Gymnasium issue 950), so codeworld's ``Pusher-v4`` is made from Gymnasium's
``Pusher-v5`` with its defaults, which has the same observation, action space and reward terms.
"""

from __future__ import annotations

import importlib
import math
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from codeworld.envs import _simstate as simstate
from codeworld.envs._simstate import SimState
from codeworld.registry import Registry, close_matches

DISCRETE = "discrete"
CONTINUOUS = "continuous"
MCTS = "mcts"
CEM = "cem"

TOY_TEXT = "toy_text"
CLASSIC_CONTROL = "classic_control"
MUJOCO = "mujoco"

StateSetter = Callable[[Any, np.ndarray], None]


class UnknownEnvError(KeyError):
    """An environment id that is not in the registry; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown environment"


@dataclass(frozen=True)
class EnvSpec:
    """Everything codeworld needs to know about one environment (CWMB, derived, or logged data).

    Attributes:
        env_id: codeworld's id (Gymnasium 1.4 naming), e.g. ``"Taxi-v4"``.
        paper_id: the id the CWMB paper used (Gymnasium 0.29.1), e.g. ``"Taxi-v3"``.
        gym_id: the Gymnasium id actually made (differs only for Pusher-v4, see module docstring).
        family: ``"toy_text"``, ``"classic_control"`` or ``"mujoco"``.
        action_kind: ``"discrete"`` or ``"continuous"``.
        n_actions: number of discrete actions (0 for continuous spaces).
        action_low: lower bounds of a continuous action box (empty for discrete spaces).
        action_high: upper bounds of a continuous action box (empty for discrete spaces).
        obs_dim: length of the encoded (flat float64) observation.
        action_dim: length of an action vector (1 for discrete spaces: the action as one number).
        planner: the name of its default planner in `codeworld.planning.registry`: ``"mcts"``
            (discrete actions) or ``"cem"`` (continuous actions), as in the paper.
        state_atol: absolute tolerance on each next-state dimension (sound scoring).
        state_rtol: relative tolerance on each next-state dimension (sound scoring).
        reward_atol: absolute tolerance on the reward (sound scoring).
        reward_rtol: relative tolerance on the reward (sound scoring).
        paper_exact: whether the paper compared states by exact equality (its discrete envs)
            instead of ``allclose(rtol=1e-5, atol=1e-5)``.
        max_episode_steps: Gymnasium's time limit (None when the env has none).
        stochastic: whether the true transition is random given (state, action).
        state_setter: how to set the unwrapped simulator from an encoded observation, or None when
            the observation does not determine the simulator state (Blackjack).
        gym_kwargs: keyword arguments always passed to ``gymnasium.make``.
        module: the module that registers the environment with Gymnasium, imported on first use
            (None for Gymnasium's own environments).
        sim_state: how to save and restore the simulator (`codeworld.envs._simstate`), which the
            oracle plans with; None when it cannot be (see `no_oracle_reason`).
        collect_state: how the collector's planner saves and restores the real simulator (default:
            `sim_state`; the CWMB entries keep the attribute copy their committed buffers used).
        no_oracle_reason: why there is no oracle, when there is none.
        no_ceiling_reason: why there is no ceiling (no `state_setter`), when there is none.
        obs_encoder: ``obs -> list of floats`` for a space the default flattening does not cover
            (a Dict, a Tuple of Boxes); None: tuples as numbers, anything else flattened.
        action_decoder: ``stored action row -> the env's action``; None: an int for discrete
            actions, a float32 vector for continuous ones.
        state_names: a name for each number of the state (for the prompts), or empty.
        state_doc: how the state's numbers read, for the world-model contract ("" : the default).
        action_doc: how a discrete action reads, for the contract ("" : the default).
        group: the benchmark group (``"discrete"``, ``"continuous"``, or its own, as RTFM's);
            "" means the action kind.
        description: the description given to the LLM, when it is not built from the Gymnasium
            docstring (a user's file, or a logged dataset's).
        simulator: whether there is an environment to act in (False for logged data).
        dataset: the file of a logged dataset's transitions (its default buffer).
        shipped: whether codeworld ships this environment's buffer (the CWMB entries); others are
            collected on demand into the user cache.
    """

    env_id: str
    paper_id: str
    gym_id: str
    family: str
    action_kind: str
    n_actions: int
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    obs_dim: int
    action_dim: int
    planner: str
    state_atol: float
    state_rtol: float
    reward_atol: float
    reward_rtol: float
    paper_exact: bool
    max_episode_steps: int | None
    stochastic: bool = False
    state_setter: StateSetter | None = field(default=None, repr=False, compare=False)
    gym_kwargs: tuple[tuple[str, Any], ...] = ()
    module: str | None = None
    sim_state: SimState | None = field(default=None, repr=False, compare=False)
    collect_state: SimState | None = field(default=None, repr=False, compare=False)
    no_oracle_reason: str = ""
    no_ceiling_reason: str = ""
    obs_encoder: Callable[[Any], Any] | None = field(default=None, repr=False, compare=False)
    action_decoder: Callable[[np.ndarray], Any] | None = field(default=None, repr=False, compare=False)
    state_names: tuple[str, ...] = ()
    state_doc: str = ""
    action_doc: str = ""
    group: str = ""
    description: str | None = field(default=None, repr=False)
    simulator: bool = True
    dataset: str | None = None
    shipped: bool = False

    @property
    def discrete(self) -> bool:
        """True when actions are integers."""
        return self.action_kind == DISCRETE

    @property
    def settable(self) -> bool:
        """True when the true simulator can be set from an observation (a ceiling exists)."""
        return self.simulator and self.state_setter is not None

    @property
    def has_oracle(self) -> bool:
        """True when the simulator can be saved and restored (the oracle planner exists)."""
        return self.simulator and self.sim_state is not None

    @property
    def ceiling_note(self) -> str:
        """Why there is no ceiling ("" when there is one)."""
        if self.settable:
            return ""
        if not self.simulator:
            return "no simulator: the environment is a logged dataset"
        return self.no_ceiling_reason or "the simulator cannot be set from an observation"

    @property
    def oracle_note(self) -> str:
        """Why there is no oracle ("" when there is one)."""
        if self.has_oracle:
            return ""
        if not self.simulator:
            return "no simulator: the environment is a logged dataset"
        return self.no_oracle_reason or "the simulator cannot be saved and restored"

    @property
    def benchmark_group(self) -> str:
        """The group results are averaged over: `group`, or the action kind."""
        return self.group or self.action_kind

    @property
    def discrete_state(self) -> bool:
        """True when states compare exactly (integer-valued observations)."""
        return self.state_atol == 0 and self.state_rtol == 0

    def make(self, **kwargs: Any):
        """Make the Gymnasium environment (with Gymnasium's usual wrappers).

        Gymnasium's deprecation notice for the ``-v4`` MuJoCo versions is silenced: the paper used
        them on purpose.

        Args:
            **kwargs: passed to ``gymnasium.make`` (over the spec's fixed keyword arguments).

        Raises:
            ValueError: the environment is logged data, with no simulator.
        """
        import gymnasium as gym

        if not self.simulator:
            raise ValueError(f"{self.env_id}: {self.oracle_note}; this needs an environment to act in")
        options = dict(self.gym_kwargs)
        options.update(kwargs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is out of date.*")
            warnings.filterwarnings("ignore", message=".*settotalmass.*")
            return gym.make(self.gym_id, **options)

    def encode_obs(self, obs: Any) -> np.ndarray:
        """A Gymnasium observation as the flat float64 state a world model sees."""
        if self.obs_encoder is not None:
            flat = np.asarray(self.obs_encoder(obs), dtype=np.float64).reshape(-1)
        elif isinstance(obs, tuple):
            flat = np.array([float(x) for x in obs], dtype=np.float64)
        else:
            flat = np.asarray(obs, dtype=np.float64).reshape(-1)
        if flat.size != self.obs_dim:
            raise ValueError(f"{self.env_id}: observation has {flat.size} values, expected {self.obs_dim}")
        return flat

    def encode_action(self, action: Any) -> np.ndarray:
        """An action as the float64 vector stored in buffers (a discrete action as one number)."""
        flat = np.asarray(action, dtype=np.float64).reshape(-1)
        if flat.size != self.action_dim:
            raise ValueError(f"{self.env_id}: action has {flat.size} values, expected {self.action_dim}")
        return flat

    def decode_action(self, action: np.ndarray) -> Any:
        """A stored action row back to what the Gymnasium env takes: an int, or a float32 array.

        Continuous actions go to the simulator as float32, the dtype of every CWMB action box: the
        collected actions are float32 values (stored exactly as float64), and Gymnasium computes
        some rewards in the action's dtype, so float32 reproduces the recorded rewards bit for bit.
        An environment with its own action encoding (a joint discrete action, a Box of another
        dtype or shape) decodes with its `action_decoder`.
        """
        if self.action_decoder is not None:
            return self.action_decoder(np.asarray(action, dtype=np.float64).reshape(-1))
        if self.discrete:
            return int(round(float(np.asarray(action).reshape(-1)[0])))
        return np.asarray(action, dtype=np.float32).reshape(-1).copy()

    def set_state_from_obs(self, env, obs: np.ndarray) -> None:
        """Put the simulator of `env` (wrapped or not) into the state the encoded `obs` describes.

        Raises:
            ValueError: for an environment whose observation does not determine its state.
        """
        if self.state_setter is None:
            raise ValueError(f"{self.env_id}: the simulator cannot be set from an observation "
                             f"({self.ceiling_note})")
        self.state_setter(env.unwrapped, np.asarray(obs, dtype=np.float64).reshape(-1))

    def step_from_obs(self, env, obs: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, float, bool]:
        """The true transition from an encoded observation: (encoded next obs, reward, terminated).

        Steps the unwrapped simulator (no time limit), so ``terminated`` is the env's own rule.
        """
        self.set_state_from_obs(env, obs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # classic control warns when stepped after termination
            next_obs, reward, terminated, _truncated, _info = env.unwrapped.step(self.decode_action(action))
        return self.encode_obs(next_obs), float(reward), bool(terminated)

    @property
    def atol(self) -> float:
        """The state's absolute tolerance (alias of `state_atol`)."""
        return self.state_atol

    @property
    def rtol(self) -> float:
        """The state's relative tolerance (alias of `state_rtol`)."""
        return self.state_rtol


# ---------------------------------------------------------------------------------------------
# State setters: rebuild the simulator's internal state from an encoded observation.
# ---------------------------------------------------------------------------------------------


def _set_cartpole(env, obs: np.ndarray) -> None:
    env.state = np.array(obs[:4], dtype=np.float64)
    env.steps_beyond_terminated = None


def _set_mountain_car(env, obs: np.ndarray) -> None:
    env.state = np.array(obs[:2], dtype=np.float64)


def _set_pendulum(env, obs: np.ndarray) -> None:
    env.state = np.array([math.atan2(obs[1], obs[0]), obs[2]], dtype=np.float64)


def _set_acrobot(env, obs: np.ndarray) -> None:
    env.state = np.array(
        [math.atan2(obs[1], obs[0]), math.atan2(obs[3], obs[2]), obs[4], obs[5]], dtype=np.float64
    )


def _set_discrete_index(env, obs: np.ndarray) -> None:
    env.s = int(round(float(obs[0])))
    if hasattr(env, "lastaction"):
        env.lastaction = None


def _reset_mujoco(env) -> tuple[np.ndarray, np.ndarray]:
    import mujoco

    mujoco.mj_resetData(env.model, env.data)
    return np.zeros(env.model.nq), np.zeros(env.model.nv)


def mujoco_setter(n_excluded: int) -> StateSetter:
    """Setter for observations that start with ``qpos[n_excluded:]`` then ``qvel``."""

    def setter(env, obs: np.ndarray) -> None:
        qpos, qvel = _reset_mujoco(env)
        n_pos = env.model.nq - n_excluded
        qpos[n_excluded:] = obs[:n_pos]
        qvel[:] = obs[n_pos:n_pos + env.model.nv]
        env.set_state(qpos, qvel)

    setter.__doc__ = f"qpos[{n_excluded}:] and qvel from the observation; excluded coordinates zero."
    return setter


def _set_reacher(env, obs: np.ndarray) -> None:
    # obs: cos(q[:2]), sin(q[:2]), q[2:] (target), qvel[:2], fingertip - target.
    qpos, qvel = _reset_mujoco(env)
    qpos[0] = math.atan2(obs[2], obs[0])
    qpos[1] = math.atan2(obs[3], obs[1])
    qpos[2:4] = obs[4:6]
    qvel[:2] = obs[6:8]
    env.set_state(qpos, qvel)


def _set_inverted_double_pendulum(env, obs: np.ndarray) -> None:
    # obs: q[:1], sin(q[1:]), cos(q[1:]), clip(qvel), clip(qfrc_constraint).
    qpos, qvel = _reset_mujoco(env)
    qpos[0] = obs[0]
    qpos[1] = math.atan2(obs[1], obs[3])
    qpos[2] = math.atan2(obs[2], obs[4])
    qvel[:] = obs[5:8]
    env.set_state(qpos, qvel)


def _set_pusher(env, obs: np.ndarray) -> None:
    # obs: q[:7], qvel[:7], com(tips_arm), com(object), com(goal). The object and the goal each
    # sit on two slide joints, y first then x; their values are the centre minus the rest position.
    qpos, qvel = _reset_mujoco(env)
    env.set_state(qpos, qvel)
    object_rest = np.array(env.get_body_com("object"))
    goal_rest = np.array(env.get_body_com("goal"))
    qpos[:7] = obs[:7]
    qvel[:7] = obs[7:14]
    qpos[7], qpos[8] = obs[18] - object_rest[1], obs[17] - object_rest[0]
    qpos[9], qpos[10] = obs[21] - goal_rest[1], obs[20] - goal_rest[0]
    env.set_state(qpos, qvel)


def _set_rtfm(env, obs: np.ndarray) -> None:
    env.load_observation(obs)


# ---------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------

# Tolerances (see the module docstring for why).
EXACT = dict(state_atol=0.0, state_rtol=0.0, reward_atol=0.0, reward_rtol=0.0)
FLOAT32 = dict(state_atol=1e-4, state_rtol=1e-4, reward_atol=1e-4, reward_rtol=1e-4)
FLOAT64_SIM = dict(state_atol=1e-6, state_rtol=1e-6, reward_atol=1e-6, reward_rtol=1e-6)
_EXACT, _FLOAT32, _FLOAT64_SIM = EXACT, FLOAT32, FLOAT64_SIM

# How the oracle saves and restores each family's simulator.
_FAMILY_SIM_STATES = {TOY_TEXT: simstate.TOY_TEXT, CLASSIC_CONTROL: simstate.CLASSIC_CONTROL,
                      MUJOCO: simstate.MUJOCO}


def _discrete(env_id, paper_id, family, n_actions, obs_dim, tol, setter, max_steps,
              paper_exact=False, stochastic=False, gym_kwargs=(), module=None, **extra) -> EnvSpec:
    extra.setdefault("sim_state", _FAMILY_SIM_STATES[family])
    return EnvSpec(
        env_id=env_id, paper_id=paper_id, gym_id=env_id, family=family, action_kind=DISCRETE,
        n_actions=n_actions, action_low=(), action_high=(), obs_dim=obs_dim, action_dim=1,
        planner=MCTS, paper_exact=paper_exact, max_episode_steps=max_steps, stochastic=stochastic,
        state_setter=setter, gym_kwargs=tuple(gym_kwargs), module=module,
        collect_state=simstate.ATTRIBUTE_COPY, shipped=True, **extra, **tol,
    )


def _continuous(env_id, family, low, high, obs_dim, tol, setter, max_steps, gym_id=None) -> EnvSpec:
    low = tuple(float(x) for x in low)
    high = tuple(float(x) for x in high)
    return EnvSpec(
        env_id=env_id, paper_id=env_id, gym_id=gym_id or env_id, family=family,
        action_kind=CONTINUOUS, n_actions=0, action_low=low, action_high=high, obs_dim=obs_dim,
        action_dim=len(low), planner=CEM, paper_exact=False, max_episode_steps=max_steps,
        state_setter=setter, sim_state=_FAMILY_SIM_STATES[family],
        collect_state=simstate.ATTRIBUTE_COPY, shipped=True, **tol,
    )


_SPECS: tuple[EnvSpec, ...] = (
    # Toy text: MCTS, exact comparison.
    _discrete("Blackjack-v1", "Blackjack-v1", TOY_TEXT, 2, 3, _EXACT, None, None,
              paper_exact=True, stochastic=True, gym_kwargs=(("sab", True),), sim_state=None,
              no_oracle_reason="Blackjack has no oracle: its next state depends on random card draws",
              no_ceiling_reason="the observation does not determine the cards",
              state_doc="3 numbers (player_sum, dealer_card, usable_ace)"),
    _discrete("CliffWalking-v1", "CliffWalking-v0", TOY_TEXT, 4, 1, _EXACT, _set_discrete_index,
              None, paper_exact=True),
    _discrete("Taxi-v4", "Taxi-v3", TOY_TEXT, 6, 1, _EXACT, _set_discrete_index, 200,
              paper_exact=True),
    # Classic control with discrete actions: MCTS, float32 observations.
    _discrete("CartPole-v1", "CartPole-v1", CLASSIC_CONTROL, 2, 4, _FLOAT32, _set_cartpole, 500),
    _discrete("MountainCar-v0", "MountainCar-v0", CLASSIC_CONTROL, 3, 2, _FLOAT32,
              _set_mountain_car, 200),
    _discrete("Acrobot-v1", "Acrobot-v1", CLASSIC_CONTROL, 3, 6, _FLOAT32, _set_acrobot, 500),
    # Continuous actions: CEM.
    _continuous("Pendulum-v1", CLASSIC_CONTROL, [-2.0], [2.0], 3, _FLOAT32, _set_pendulum, 200),
    _continuous("Reacher-v4", MUJOCO, [-1.0] * 2, [1.0] * 2, 11, _FLOAT64_SIM, _set_reacher, 50),
    _continuous("Pusher-v4", MUJOCO, [-2.0] * 7, [2.0] * 7, 23, _FLOAT64_SIM, _set_pusher, 100,
                gym_id="Pusher-v5"),
    _continuous("InvertedPendulum-v4", MUJOCO, [-3.0], [3.0], 4, _FLOAT64_SIM, mujoco_setter(0),
                1000),
    _continuous("InvertedDoublePendulum-v4", MUJOCO, [-1.0], [1.0], 11, _FLOAT64_SIM,
                _set_inverted_double_pendulum, 1000),
    _continuous("HalfCheetah-v4", MUJOCO, [-1.0] * 6, [1.0] * 6, 17, _FLOAT64_SIM,
                mujoco_setter(1), 1000),
    _continuous("Hopper-v4", MUJOCO, [-1.0] * 3, [1.0] * 3, 11, _FLOAT64_SIM, mujoco_setter(1),
                1000),
    _continuous("Swimmer-v4", MUJOCO, [-1.0] * 2, [1.0] * 2, 8, _FLOAT64_SIM, mujoco_setter(2),
                1000),
    _continuous("Walker2d-v4", MUJOCO, [-1.0] * 6, [1.0] * 6, 17, _FLOAT64_SIM, mujoco_setter(1),
                1000),
    _continuous("Ant-v4", MUJOCO, [-1.0] * 8, [1.0] * 8, 27, _FLOAT64_SIM, mujoco_setter(2), 1000),
    _continuous("Humanoid-v4", MUJOCO, [-0.4] * 17, [0.4] * 17, 376, _FLOAT64_SIM,
                mujoco_setter(2), 1000),
    _continuous("HumanoidStandup-v4", MUJOCO, [-0.4] * 17, [0.4] * 17, 376, _FLOAT64_SIM,
                mujoco_setter(2), 1000),
    # codeworld's RTFM: a grid game whose whole state is one integer, like Taxi's.
    _discrete("RTFM-v0", "RTFM", TOY_TEXT, 5, 16, _EXACT, _set_rtfm, 100, paper_exact=True,
              module="codeworld.envs._rtfm", group="rtfm"),
)
EXTRA_ENVS = ("RTFM-v0",)

REGISTRY: Registry[EnvSpec] = Registry("CWMB environment", {spec.env_id: spec for spec in _SPECS})
ALIASES: dict[str, str] = {spec.paper_id: spec.env_id for spec in _SPECS if spec.paper_id != spec.env_id}
# Specs made at run time: registered (`register_env`) or derived from a Gymnasium id or a dataset
# on first use; looked up by their id like the registry's.
_RUNTIME: Registry[EnvSpec] = Registry("environment")
# What `get_spec` asks, in order, about an id it holds no spec for (`add_resolver`).
_RESOLVERS: list[Callable[[str], EnvSpec | None]] = []


def list_envs(include_rtfm: bool = False) -> list[str]:
    """The 18 CWMB environment ids, in the paper's order (discrete actions first); RTFM last if asked."""
    return [e for e in REGISTRY if include_rtfm or e not in EXTRA_ENVS]


def add_resolver(resolve: Callable[[str], EnvSpec | None]) -> None:
    """Have `get_spec` ask `resolve` about the ids it holds no spec for, after those added before.

    Args:
        resolve: ``env_id -> EnvSpec``, or None for an id of another kind; it raises
            `UnknownEnvError` for an id of its kind that nobody knows.
    """
    _RESOLVERS.append(resolve)


def runtime_spec(env_id: str) -> EnvSpec | None:
    """The spec made for `env_id` in this process (registered, or resolved before), or None."""
    return _RUNTIME.get(env_id) if env_id in _RUNTIME else None


def unknown_env_error(env_id: str, detail: str | None = None) -> UnknownEnvError:
    """The error for an id nobody knows: `detail` in brackets, close CWMB ids, and what is accepted."""
    known = list(REGISTRY) + list(ALIASES)
    close = close_matches(env_id, known, cutoff=0.5)
    if not close:
        lowered = env_id.lower().split("-")[0]
        close = [k for k in REGISTRY if lowered and lowered in k.lower()][:3]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    extra = f" ({detail})" if detail else ""
    return UnknownEnvError(
        f"unknown CWMB environment or Gymnasium id {env_id!r}{extra}{hint} (CWMB: {', '.join(REGISTRY)}; "
        "any id gymnasium.make knows works too, as module:EnvId for one registered by a module)"
    )


def resolve_env_id(env_id: str) -> str:
    """codeworld's id for `env_id` (a CWMB id, the paper's, or any other environment's canonical id).

    Raises:
        UnknownEnvError: neither the registry nor Gymnasium knows it.
    """
    return get_spec(env_id).env_id


def get_spec(env_id: str) -> EnvSpec:
    """Look up the spec of an environment id: a CWMB id (codeworld's or the paper's), a registered
    or Gymnasium id (``[module:]Id[,key=value...]``, see `codeworld.envs.derive`), or logged data
    (``data:FILE.npz``, ``minari:DATASET``, see `codeworld.envs._datasets`).

    Code that takes an environment from a user calls `resolve_env` once and passes the spec on.

    Raises:
        UnknownEnvError: (a KeyError) naming close matches, for an id nobody knows.
        UnsupportedSpaceError: (a ValueError) an environment whose spaces cannot be encoded.
        TypeError: `env_id` is not a string.
    """
    if not isinstance(env_id, str):
        raise TypeError(f"get_spec looks up an environment id (a str), got {type(env_id).__name__}; "
                        "resolve_env takes an EnvSpec too")
    cwmb_id = env_id if env_id in REGISTRY else ALIASES.get(env_id)
    if cwmb_id is not None:
        spec = REGISTRY.get(cwmb_id)
        if spec.module is not None and spec.module not in sys.modules:
            importlib.import_module(spec.module)
        return spec
    if env_id in _RUNTIME:
        return _RUNTIME.get(env_id)
    for resolve in _RESOLVERS:
        spec = resolve(env_id)
        if spec is not None:
            break
    else:
        raise unknown_env_error(env_id)
    _RUNTIME.register(spec.env_id, spec, replace=True)
    _RUNTIME.register(env_id, spec, replace=True)
    return spec


def resolve_env(env: EnvSpec | str) -> EnvSpec:
    """The spec of an environment a user named: an `EnvSpec` as it is, an id looked up (`get_spec`).

    The one place where a public entry point (a function or class a user calls with an id, such as
    `make_env`, `codeworld.scoring.Scorer` or `codeworld.planning.evaluate`) turns its argument
    into a spec; it passes the spec on, so nothing below it looks the id up again.

    Raises:
        UnknownEnvError: an id nobody knows (see `get_spec`).
        TypeError: `env` is neither a spec nor a string.
    """
    if isinstance(env, EnvSpec):
        return env
    if not isinstance(env, str):
        raise TypeError(f"an environment is an EnvSpec or an id string, got {type(env).__name__}")
    return get_spec(env)


def register_spec(spec: EnvSpec) -> EnvSpec:
    """Make `spec` what `get_spec(spec.env_id)` returns in this process (over a derived one).

    Raises:
        ValueError: `spec.env_id` is a CWMB id (those keep meaning the CWMB environments).
    """
    if spec.env_id in REGISTRY or spec.env_id in ALIASES:
        raise ValueError(f"{spec.env_id} is a CWMB environment; register yours under another id")
    for key, known in _RUNTIME.items():
        if known.env_id == spec.env_id:
            _RUNTIME.unregister(key)
    _RUNTIME.register(spec.env_id, spec, replace=True)
    return spec


# The functions below take an environment as users name it (a spec or an id); code that holds a
# spec calls its methods (`EnvSpec.make`, `EnvSpec.encode_obs`, ...).


def make_env(env: EnvSpec | str, **kwargs: Any):
    """Make the Gymnasium environment of `env` (see `EnvSpec.make`).

    Args:
        env: its spec, or any id `get_spec` accepts that has a simulator.
        **kwargs: passed to ``gymnasium.make`` (over the spec's fixed keyword arguments).

    Raises:
        ValueError: the environment is logged data, with no simulator.
    """
    return resolve_env(env).make(**kwargs)


def encode_obs(env: EnvSpec | str, obs: Any) -> np.ndarray:
    """A Gymnasium observation of `env` as the flat float64 state a world model sees."""
    return resolve_env(env).encode_obs(obs)


def encode_action(env: EnvSpec | str, action: Any) -> np.ndarray:
    """An action of `env` as the float64 vector stored in buffers (see `EnvSpec.encode_action`)."""
    return resolve_env(env).encode_action(action)


def decode_action(env: EnvSpec | str, action: np.ndarray) -> Any:
    """A stored action row of `env` back to what its Gymnasium env takes (see `EnvSpec.decode_action`)."""
    return resolve_env(env).decode_action(action)


def set_state_from_obs(env, spec: EnvSpec | str, obs: np.ndarray) -> None:
    """Put the simulator of `env` into the state the encoded `obs` describes (see
    `EnvSpec.set_state_from_obs`).

    Raises:
        ValueError: for an environment whose observation does not determine its state.
    """
    resolve_env(spec).set_state_from_obs(env, obs)


def step_from_obs(env, spec: EnvSpec | str, obs: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """The true transition from an encoded observation: (encoded next obs, reward, terminated)
    (see `EnvSpec.step_from_obs`)."""
    return resolve_env(spec).step_from_obs(env, obs, action)
