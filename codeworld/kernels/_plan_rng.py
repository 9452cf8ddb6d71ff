"""SplitMix64, the planners' one seeded generator, for Numba kernels and plain-Python references.

Mirrors ``SplitMix64`` in csrc/planner_common.h bit for bit, so that the C++ planner, its Numba
twin and the slow reference draw the same numbers for the same seed. The Numba version keeps its
state in a one-element uint64 array.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1
_INV_2_53 = 1.0 / 9007199254740992.0


def seed_state(seed: int) -> np.ndarray:
    """The Numba generator's state for `seed` (a one-element uint64 array)."""
    return np.array([int(seed) & _MASK], dtype=np.uint64)


@numba.njit(cache=True, inline="always")
def rng_next(state):
    z = state[0] + np.uint64(_GOLDEN)
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def rng_uniform(state):
    return float(rng_next(state) >> np.uint64(11)) * _INV_2_53


@numba.njit(cache=True, inline="always")
def rng_integer(state, n):
    return np.int64(rng_next(state) % np.uint64(n))


@numba.njit(cache=True, inline="always")
def rng_normal_pair(state):
    """Two standard normals by Marsaglia's polar method (as ``normal_pair`` in C++)."""
    while True:
        u = 2.0 * rng_uniform(state) - 1.0
        v = 2.0 * rng_uniform(state) - 1.0
        s = u * u + v * v
        if s < 1.0 and s != 0.0:
            break
    f = math.sqrt(-2.0 * math.log(s) / s)
    return u * f, v * f


class SplitMix64:
    """The same generator in plain Python (for the slow references)."""

    def __init__(self, seed: int):
        self.state = int(seed) & _MASK

    def next(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * _MIX1) & _MASK
        z = ((z ^ (z >> 27)) * _MIX2) & _MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return float(self.next() >> 11) * _INV_2_53

    def integer(self, n: int) -> int:
        return self.next() % n

    def normal_pair(self) -> tuple[float, float]:
        while True:
            u = 2.0 * self.uniform() - 1.0
            v = 2.0 * self.uniform() - 1.0
            s = u * u + v * v
            if s < 1.0 and s != 0.0:
                break
        f = math.sqrt(-2.0 * math.log(s) / s)
        return u * f, v * f
