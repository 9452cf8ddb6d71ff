"""Environments: one spec each (the CWMB registry, any Gymnasium id, logged data), observation
encoding, descriptions and replay buffers."""

from codeworld.envs import _datasets as datasets, derive
from codeworld.envs._buffers import ReplayBuffer, load_buffer
from codeworld.envs.derive import UnsupportedSpaceError, env_spec, register_env
from codeworld.envs.registry import (
    EnvSpec,
    UnknownEnvError,
    add_resolver,
    encode_obs,
    get_spec,
    list_envs,
    make_env,
    register_spec,
    resolve_env,
    step_from_obs,
)

# The ids beyond the registry: logged data (its prefixes), then any Gymnasium id. Added here, not
# imported by the registry, because these modules build specs with the registry's types.
add_resolver(datasets.resolve_spec)
add_resolver(derive.resolve_spec)

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "EnvSpec",
    "UnknownEnvError",
    "ReplayBuffer",
    "encode_obs",
    "env_spec",
    "get_spec",
    "list_envs",
    "load_buffer",
    "make_env",
    "register_env",
]
