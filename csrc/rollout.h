// Batched stepping of a compiled model: one native loop over many (state, action) pairs.
// Pure C++, no Python; the binding releases the GIL around it.
#pragma once

#include <cstdint>

#include "model_abi.h"

namespace codeworld {

// Steps `n` independent transitions. Row-major inputs: states (n, n_state), actions (n, n_action).
// Outputs: next_states (n, n_state), rewards (n), dones (n), status (n).
// Stops at the first transition whose status is not kStepOk when stop_on_error is true and returns
// its index; returns n when every transition was stepped.
inline int64_t step_batch(StepFn fn, const double* states, const double* actions, int64_t n,
                          int64_t n_state, int64_t n_action, double* next_states, double* rewards,
                          uint8_t* dones, int32_t* status, bool stop_on_error) {
  for (int64_t i = 0; i < n; ++i) {
    status[i] = fn(states + i * n_state, n_state, actions + i * n_action, n_action,
                   next_states + i * n_state, rewards + i, dones + i);
    if (status[i] != kStepOk && stop_on_error) return i;
  }
  return n;
}

// Rolls `n` trajectories forward for `horizon` steps from their start states under given action
// sequences (n, horizon, n_action). A trajectory stops at `done`; its later steps are not taken.
// Outputs: returns (n) discounted sums, steps (n) steps taken, status (n).
inline void rollout_batch(StepFn fn, const double* start_states, const double* actions, int64_t n,
                          int64_t horizon, int64_t n_state, int64_t n_action, double gamma,
                          double* scratch /* 2 * n_state */, double* returns, int64_t* steps,
                          int32_t* status) {
  double* cur = scratch;
  double* nxt = scratch + n_state;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < n_state; ++d) cur[d] = start_states[i * n_state + d];
    double total = 0.0, discount = 1.0;
    int64_t t = 0;
    int32_t st = kStepOk;
    for (; t < horizon; ++t) {
      double reward = 0.0;
      uint8_t done = 0;
      st = fn(cur, n_state, actions + (i * horizon + t) * n_action, n_action, nxt, &reward, &done);
      if (st != kStepOk) break;
      total += discount * reward;
      discount *= gamma;
      double* tmp = cur;
      cur = nxt;
      nxt = tmp;
      if (done) {
        ++t;
        break;
      }
    }
    returns[i] = total;
    steps[i] = t;
    status[i] = st;
  }
}

}  // namespace codeworld
