"""Acrobot-v1's dynamics (Gymnasium's "book" equations, one RK4 step of 0.2 s) over the observation
(cos t1, sin t1, cos t2, sin t2, dt1, dt2). One function (helpers would keep Numba from compiling it)."""
import math

import numpy as np

DT = 0.2
G = 9.8
MAX_VEL_1 = 4 * math.pi
MAX_VEL_2 = 9 * math.pi


def step(state, action):
    y = np.array([math.atan2(state[1], state[0]), math.atan2(state[3], state[2]), state[4], state[5]])
    torque = float(action) - 1.0
    ks = np.zeros((4, 4))
    for stage in range(4):
        frac = 0.0 if stage == 0 else (DT if stage == 3 else DT / 2.0)
        t1 = y[0] + frac * ks[stage - 1, 0] if stage else y[0]
        t2 = y[1] + frac * ks[stage - 1, 1] if stage else y[1]
        d1 = y[2] + frac * ks[stage - 1, 2] if stage else y[2]
        d2 = y[3] + frac * ks[stage - 1, 3] if stage else y[3]
        c2 = math.cos(t2)
        s2 = math.sin(t2)
        m11 = 0.25 + (1.0 + 0.25 + c2) + 1.0 + 1.0
        m12 = 0.25 + 0.5 * c2 + 1.0
        phi2 = 0.5 * G * math.cos(t1 + t2 - math.pi / 2.0)
        phi1 = -0.5 * d2 * d2 * s2 - d2 * d1 * s2 + 1.5 * G * math.cos(t1 - math.pi / 2.0) + phi2
        dd2 = (torque + m12 / m11 * phi1 - 0.5 * d1 * d1 * s2 - phi2) / (0.25 + 1.0 - m12 * m12 / m11)
        dd1 = -(m12 * dd2 + phi1) / m11
        ks[stage, 0], ks[stage, 1], ks[stage, 2], ks[stage, 3] = d1, d2, dd1, dd2
    y = y + DT / 6.0 * (ks[0] + 2 * ks[1] + 2 * ks[2] + ks[3])
    t1 = (y[0] + math.pi) % (2 * math.pi) - math.pi
    t2 = (y[1] + math.pi) % (2 * math.pi) - math.pi
    v1 = min(max(y[2], -MAX_VEL_1), MAX_VEL_1)
    v2 = min(max(y[3], -MAX_VEL_2), MAX_VEL_2)
    done = -math.cos(t1) - math.cos(t2 + t1) > 1.0
    obs = np.array([math.cos(t1), math.sin(t1), math.cos(t2), math.sin(t2), v1, v2])
    return obs, 0.0 if done else -1.0, done
