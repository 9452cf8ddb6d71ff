"""Environments: one spec each (the CWMB registry, any Gymnasium id, logged data), observation
encoding, descriptions and replay buffers."""

from codeworld.envs import datasets, derive
from codeworld.envs.derive import UnsupportedSpaceError, env_spec, register_env
from codeworld.envs.registry import (
    ALIASES,
    REGISTRY,
    EnvSpec,
    UnknownEnvError,
    add_resolver,
    decode_action,
    encode_action,
    encode_obs,
    get_spec,
    list_envs,
    make_env,
    register_spec,
    resolve_env,
    resolve_env_id,
    set_state_from_obs,
    step_from_obs,
)

# The ids beyond the registry: logged data (its prefixes), then any Gymnasium id. Added here, not
# imported by the registry, because these modules build specs with the registry's types.
add_resolver(datasets.resolve_spec)
add_resolver(derive.resolve_spec)

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
    "resolve_env",
    "resolve_env_id",
    "set_state_from_obs",
    "step_from_obs",
]
