"""CartPole-v1 model written by `codeworld demo` (GIF-MCTS, embedded Qwen2.5-Coder-1.5B, budget 12, seed 0):
a linearized guess with its own constants; kept as written (the policy-quality benchmark trains in it)."""

import math

import numpy as np


def step(state, action):
    cart_position = float(state[0])
    cart_velocity = float(state[1])
    pole_angle = float(state[2])
    pole_angular_velocity = float(state[3])
    action = int(action)
    
    # Calculate new values of the state components
    new_cart_position = cart_position + 0.02 * cart_velocity
    new_cart_velocity = cart_velocity - 0.01429 * pole_angle + (-0.195, 0.195)[action]
    new_pole_angle = pole_angle + 0.02 * pole_angular_velocity
    new_pole_angular_velocity = pole_angular_velocity + 0.3186 * pole_angle + (0.2911, -0.2912)[action]
    
    # Calculate the reward
    reward = 1.0  # the most frequent recorded reward: write the description's reward rule
    
    # Determine if the episode ends
    done = abs(new_pole_angle) > 0.21
    
    # Create the next state array
    next_state = np.array([new_cart_position, new_cart_velocity, new_pole_angle, new_pole_angular_velocity], dtype=np.float64)
    
    return next_state, float(reward), bool(done)
