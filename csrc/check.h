// Batched transition checking: compares predicted transitions with recorded ones.
// Pure C++17, no Python; the binding releases the GIL around it.
//
// One pass gives, per transition, everything both scoring modes need (codeworld/scoring/):
// how many next-state dimensions are within tolerance, whether the reward and the done flag
// match, and the squared state errors of the model and of the "state unchanged" baseline (for
// the prediction skill). The modes differ only in the tolerances they pass and in how Python
// weights these per-transition results.
#pragma once

#include <cmath>
#include <cstdint>

namespace codeworld {

struct CheckTolerance {
  double state_atol;   // |pred - true| <= state_atol + state_rtol * |true| for each dimension
  double state_rtol;
  double reward_atol;  // the same rule for the reward
  double reward_rtol;
};

// The comparison of numpy.isclose(pred, truth): NaN never matches; equal infinities match.
inline bool values_close(double pred, double truth, double atol, double rtol) {
  if (pred == truth) return true;  // covers exact matches, equal infinities and zero tolerances
  if (!std::isfinite(pred) || !std::isfinite(truth)) return false;
  return std::fabs(pred - truth) <= atol + rtol * std::fabs(truth);
}

// Inputs, row-major: obs, true_next, pred_next (n, d); true_reward, pred_reward (n);
// true_done, pred_done (n) as 0/1.
// Outputs (n each): dims_ok (number of next-state dimensions within tolerance), reward_ok,
// done_ok (0/1), sq_err_model (sum over dimensions of (pred - true)^2), sq_err_still
// (sum of (obs - true)^2, the error of predicting no change).
inline void check_transitions(int64_t n, int64_t d, const double* obs, const double* true_next,
                              const double* pred_next, const double* true_reward,
                              const double* pred_reward, const uint8_t* true_done,
                              const uint8_t* pred_done, CheckTolerance tol, int64_t* dims_ok,
                              uint8_t* reward_ok, uint8_t* done_ok, double* sq_err_model,
                              double* sq_err_still) {
  for (int64_t i = 0; i < n; ++i) {
    const double* o = obs + i * d;
    const double* t = true_next + i * d;
    const double* p = pred_next + i * d;
    int64_t ok = 0;
    double err_model = 0.0, err_still = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      ok += values_close(p[j], t[j], tol.state_atol, tol.state_rtol) ? 1 : 0;
      const double em = p[j] - t[j];
      const double es = o[j] - t[j];
      err_model += em * em;
      err_still += es * es;
    }
    dims_ok[i] = ok;
    sq_err_model[i] = err_model;
    sq_err_still[i] = err_still;
    reward_ok[i] = values_close(pred_reward[i], true_reward[i], tol.reward_atol, tol.reward_rtol) ? 1 : 0;
    done_ok[i] = ((pred_done[i] != 0) == (true_done[i] != 0)) ? 1 : 0;
  }
}

}  // namespace codeworld
