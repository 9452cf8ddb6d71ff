"""Environments: one spec each (the CWMB registry, any Gymnasium id, logged data), observation
encoding, descriptions and replay buffers."""

from codeworld.envs.derive import UnsupportedSpaceError
from codeworld.envs.registry import (
    ALIASES,
    REGISTRY,
    EnvSpec,
    UnknownEnvError,
    decode_action,
    encode_action,
    encode_obs,
    env_spec,
    get_spec,
    list_envs,
    make_env,
    register_env,
    register_spec,
    resolve_env_id,
    set_state_from_obs,
    step_from_obs,
)

__all__ = [
    "ALIASES",
    "REGISTRY",
    "EnvSpec",
    "UnknownEnvError",
    "UnsupportedSpaceError",
    "decode_action",
    "encode_action",
    "encode_obs",
    "env_spec",
    "get_spec",
    "list_envs",
    "make_env",
    "register_env",
    "register_spec",
    "resolve_env_id",
    "set_state_from_obs",
    "step_from_obs",
]
