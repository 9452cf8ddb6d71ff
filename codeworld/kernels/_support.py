"""Is a state inside the training data's support? The Numba test and a compiled model wrapped by it.

`codeworld.planning._support` decides what the support is (a widened box of the recorded states, or
a ball around each of them); this module answers for one state without Python, so that a compiled
model stays compiled when it is wrapped: `wrap_compiled` returns a C callback with the model's own
ABI (csrc/model_abi.h) that calls the model, then replaces the reward of a step landing outside
the support (and, with a cut-off, ends the rollout there). The C++ and Numba planners call it
through its address like any compiled model.

The nearest-state test walks a k-d tree built by scikit-learn (`sklearn.neighbors.KDTree`, whose
flat arrays put the children of node ``i`` at ``2i + 1`` and ``2i + 2``) and stops at the first
recorded state within the radius: existence, not the nearest distance.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import carray, types as nt
from numba.extending import intrinsic

MAX_TREE_DEPTH = 64  # stack of the tree walk; a k-d tree of 2^63 leaves is not coming


@numba.njit(cache=True, inline="always")
def outside_one(x, low, high, nearest, offset, scale, data, index, start, end, leaf, lower, upper, radius2,
                scratch, stack):
    """True when `x` leaves the box [low, high], or (`nearest`) no recorded state (rows of `data`,
    offset and scaled like it) lies within sqrt(`radius2`). `scratch` (n_state) and `stack`
    (MAX_TREE_DEPTH node numbers, as float64) are work space."""
    n = x.shape[0]
    for j in range(n):
        if x[j] < low[j] or x[j] > high[j]:
            return True
    if not nearest:
        return False
    for j in range(n):
        scratch[j] = (x[j] - offset[j]) / scale[j]
    top = 0
    stack[0] = 0
    while top >= 0:
        node = int(stack[top])
        top -= 1
        d2 = 0.0
        for j in range(n):  # the squared distance to the node's bounding box
            if scratch[j] < lower[node, j]:
                d2 += (lower[node, j] - scratch[j]) ** 2
            elif scratch[j] > upper[node, j]:
                d2 += (scratch[j] - upper[node, j]) ** 2
        if d2 > radius2:
            continue
        if leaf[node]:
            for p in range(start[node], end[node]):
                row = index[p]
                s = 0.0
                for j in range(n):
                    s += (data[row, j] - scratch[j]) ** 2
                if s <= radius2:
                    return False
        else:
            stack[top + 1] = 2 * node + 1
            stack[top + 2] = 2 * node + 2
            top += 2
    return True


@numba.njit(cache=True)
def outside_batch(states, low, high, nearest, offset, scale, data, index, start, end, leaf, lower, upper,
                  radius2):
    """`outside_one` for each row of `states` (the batched Python path)."""
    out = np.zeros(states.shape[0], np.bool_)
    scratch = np.empty(states.shape[1])
    stack = np.empty(MAX_TREE_DEPTH)
    for i in range(states.shape[0]):
        out[i] = outside_one(states[i], low, high, nearest, offset, scale, data, index, start, end, leaf,
                             lower, upper, radius2, scratch, stack)
    return out


@intrinsic
def _float_ptr(typingctx, address):
    """An int64 address as a float64 pointer (arrays the callback reads, kept alive by its owner)."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(nt.CPointer(nt.float64)))

    return nt.CPointer(nt.float64)(nt.int64), codegen


@intrinsic
def _int_ptr(typingctx, address):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(nt.CPointer(nt.int64)))

    return nt.CPointer(nt.int64)(nt.int64), codegen


def wrap_compiled(model_cfunc, arrays: dict, nearest: bool, radius2: float, outside_reward: float,
                  cutoff: bool):
    """A C callback with the model ABI: the model's step, then the support test on the new state.

    Args:
        model_cfunc: the model's ctypes callback (`codeworld._model.LoadedModel.cfunc`).
        arrays: the support's arrays (`codeworld.planning._support.Support.kernel_arrays`): float64
            ``low``, ``high``, ``offset``, ``scale``, ``data``, ``lower``, ``upper`` and int64
            ``index``, ``start``, ``end``, ``leaf``, all C-contiguous. The caller keeps them alive
            as long as the callback.
        nearest, radius2: test the distance to the recorded states too, against sqrt(radius2).
        outside_reward: the reward of a step that lands outside.
        cutoff: a step that lands outside ends the rollout.

    Returns:
        the Numba cfunc (``.address`` for C++).
    """
    from codeworld._model import _numba_helpers

    inner = model_cfunc
    stack_doubles = _numba_helpers()[2]  # work space in the callback's frame: no allocation per step
    a = {k: (v.ctypes.data, v.shape) for k, v in arrays.items()}
    n_state = a["low"][1][0]
    n_data, n_nodes = a["data"][1][0], a["start"][1][0]
    low_p, high_p, off_p, scale_p = a["low"][0], a["high"][0], a["offset"][0], a["scale"][0]
    data_p, lower_p, upper_p = a["data"][0], a["lower"][0], a["upper"][0]
    index_p, start_p, end_p, leaf_p = a["index"][0], a["start"][0], a["end"][0], a["leaf"][0]
    sig = nt.int32(nt.CPointer(nt.float64), nt.int64, nt.CPointer(nt.float64), nt.int64,
                   nt.CPointer(nt.float64), nt.CPointer(nt.float64), nt.CPointer(nt.uint8))

    @numba.cfunc(sig)
    def callback(state_ptr, n, action_ptr, n_action, out_state, out_reward, out_done):
        if n != n_state:
            return 1  # STEP_BAD_SHAPE: the support's states have another size
        status = inner(state_ptr, n, action_ptr, n_action, out_state, out_reward, out_done)
        if status != 0:
            return status
        x = carray(out_state, (n_state,))
        low = carray(_float_ptr(low_p), (n_state,))
        high = carray(_float_ptr(high_p), (n_state,))
        offset = carray(_float_ptr(off_p), (n_state,))
        scale = carray(_float_ptr(scale_p), (n_state,))
        data = carray(_float_ptr(data_p), (n_data, n_state))
        lower = carray(_float_ptr(lower_p), (n_nodes, n_state))
        upper = carray(_float_ptr(upper_p), (n_nodes, n_state))
        index = carray(_int_ptr(index_p), (n_data,))
        start = carray(_int_ptr(start_p), (n_nodes,))
        end = carray(_int_ptr(end_p), (n_nodes,))
        leaf = carray(_int_ptr(leaf_p), (n_nodes,))
        scratch = carray(stack_doubles(n_state), (n_state,))
        stack = carray(stack_doubles(MAX_TREE_DEPTH), (MAX_TREE_DEPTH,))
        if outside_one(x, low, high, nearest, offset, scale, data, index, start, end, leaf, lower, upper,
                       radius2, scratch, stack):
            out_reward[0] = outside_reward
            if cutoff:
                out_done[0] = 1
        return 0

    return callback
