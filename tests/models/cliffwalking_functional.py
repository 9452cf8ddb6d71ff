"""CliffWalking's rules (4 x 12 grid, start at 36, goal at 47, the cliff 37..46 sends the walker
back to the start for -100) over the observation (the cell index)."""
import numpy as np

ROWS = 4
COLS = 12


def step(state, action):
    row = int(state[0]) // COLS
    col = int(state[0]) % COLS
    if action == 0:
        row = max(row - 1, 0)
    elif action == 1:
        col = min(col + 1, COLS - 1)
    elif action == 2:
        row = min(row + 1, ROWS - 1)
    else:
        col = max(col - 1, 0)
    cell = row * COLS + col
    if row == ROWS - 1 and 0 < col < COLS - 1:
        return np.array([36.0]), -100.0, False
    return np.array([float(cell)]), -1.0, cell == 47
