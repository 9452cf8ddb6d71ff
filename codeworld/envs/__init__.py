"""The CWMB environments: registry, observation encoding, descriptions and replay buffers."""

from codeworld.envs.registry import (
    ALIASES,
    REGISTRY,
    EnvSpec,
    UnknownEnvError,
    decode_action,
    encode_action,
    encode_obs,
    get_spec,
    list_envs,
    make_env,
    resolve_env_id,
    set_state_from_obs,
    step_from_obs,
)

__all__ = [
    "ALIASES",
    "REGISTRY",
    "EnvSpec",
    "UnknownEnvError",
    "decode_action",
    "encode_action",
    "encode_obs",
    "get_spec",
    "list_envs",
    "make_env",
    "resolve_env_id",
    "set_state_from_obs",
    "step_from_obs",
]
