"""Pendulum-v1's dynamics (Gymnasium's constants) over the observation (cos, sin, angular velocity)."""
import math

import numpy as np


def step(state, action):
    th = math.atan2(state[1], state[0])
    thdot = state[2]
    u = min(max(action[0], -2.0), 2.0)
    norm = ((th + math.pi) % (2 * math.pi)) - math.pi
    cost = norm**2 + 0.1 * thdot**2 + 0.001 * u**2
    thdot = thdot + (3 * 10.0 / 2 * math.sin(th) + 3.0 * u) * 0.05
    thdot = min(max(thdot, -8.0), 8.0)
    th = th + thdot * 0.05
    return np.array([math.cos(th), math.sin(th), thdot]), -cost, False
