// What the planners (mcts.h, cem.h) share: one seeded random generator and the ways to step a model.
//
// The generator is SplitMix64 with fixed derivations of uniforms, integers and normals; the Numba
// kernels (codeworld/kernels/_plan_rng.py) and the plain-Python references implement it
// identically, so every backend draws the same numbers for the same seed.
#pragma once

#include <cmath>
#include <cstdint>

#include "model_abi.h"

namespace codeworld {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

  // Uniform integer in [0, n) (modulo reduction: the bias is below 2^-50 for small n).
  int64_t integer(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

  // Two independent standard normals by Marsaglia's polar method: points drawn uniformly in the
  // square [-1, 1)^2 until one falls strictly inside the unit disc (and off its centre), then
  // scaled. No trigonometry, and both values of a pair are used.
  void normal_pair(double& z0, double& z1) {
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    z0 = u * f;
    z1 = v * f;
  }

 private:
  uint64_t state_;
};

// Steps a batch of transitions through a compiled model's C callback, one native call each.
// Returns the first non-ok status (0 when all were stepped).
struct CompiledStepper {
  StepFn fn;
  int64_t n_state;
  int64_t n_action;
  int64_t steps = 0;  // model steps taken

  int32_t operator()(const double* states, const double* actions, int64_t n, double* next_states,
                     double* rewards, uint8_t* dones) {
    for (int64_t i = 0; i < n; ++i) {
      const int32_t status = fn(states + i * n_state, n_state, actions + i * n_action, n_action,
                                next_states + i * n_state, rewards + i, dones + i);
      ++steps;
      if (status != kStepOk) return status;
    }
    return kStepOk;
  }
};

}  // namespace codeworld
