// The cross-entropy method for continuous actions: plan an open-loop action sequence.
//
// Each iteration samples `num_samples` sequences of `horizon` actions from independent normals
// (mean, std per time step and dimension), clips them to the action box, scores each by its
// discounted return under the model (a rollout stops at done), and refits mean and std to the
// `num_elites` best (ties broken by sample index). The best sequence seen in any iteration is the
// plan. The Numba twin (codeworld/kernels/cem.py) and the Python reference follow this code.
//
// Pure C++: the model is reached through a Stepper (see mcts.h). A compiled model is rolled out
// sample by sample (cache friendly); a batched one time step by time step, all live samples in
// one call. Both give the same returns: each sample's sum is taken in the same order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "planner_common.h"

namespace codeworld {

struct CemParams {
  int64_t horizon = 100;       // CWMB paper
  int64_t iterations = 20;     // CWMB paper
  int64_t num_samples = 1000;  // CWMB paper
  int64_t num_elites = 100;    // CWMB paper
  double gamma = 1.0;
  uint64_t seed = 0;
  bool time_major = false;  // roll out all samples one time step per call (the batched path)
};

struct CemResult {
  double best_return = -std::numeric_limits<double>::infinity();
  int32_t status = kStepOk;
};

// Plans a sequence. init_mean and init_std are (horizon, n_action); low and high (n_action).
// Writes the plan (horizon, n_action) and the final mean and std (horizon, n_action).
template <class Stepper>
CemResult cem_plan(Stepper& step, const double* start_state, int64_t n_state, int64_t n_action,
                   const double* low, const double* high, const double* init_mean, const double* init_std,
                   const CemParams& p, double* plan, double* mean, double* std_out) {
  const int64_t H = p.horizon, N = p.num_samples, K = std::min(p.num_elites, p.num_samples);
  const int64_t seq = H * n_action;
  std::vector<double> samples(N * seq), returns(N), std_(seq);
  std::vector<int64_t> order(N);
  std::copy(init_mean, init_mean + seq, mean);
  std::copy(init_std, init_std + seq, std_.begin());
  SplitMix64 rng(p.seed);
  CemResult result;

  std::vector<double> cur, nxt, rew;
  std::vector<uint8_t> done, alive;
  std::vector<int64_t> index;
  std::vector<double> acts;
  if (p.time_major) {
    cur.resize(N * n_state);
    nxt.resize(N * n_state);
    rew.resize(N);
    done.resize(N);
    alive.resize(N);
    index.resize(N);
    acts.resize(N * n_action);
  } else {
    cur.resize(n_state);
    nxt.resize(n_state);
    rew.resize(1);
    done.resize(1);
  }

  for (int64_t it = 0; it < p.iterations; ++it) {
    for (int64_t s = 0; s < N; ++s) {
      double* x = samples.data() + s * seq;
      for (int64_t t = 0; t < H; ++t) {
        for (int64_t d = 0; d < n_action; ++d) {
          const int64_t i = t * n_action + d;
          const double v = mean[i] + std_[i] * rng.normal();
          x[i] = std::min(std::max(v, low[d]), high[d]);
        }
      }
    }

    if (!p.time_major) {
      for (int64_t s = 0; s < N; ++s) {
        std::copy(start_state, start_state + n_state, cur.begin());
        double total = 0.0, discount = 1.0;
        for (int64_t t = 0; t < H; ++t) {
          const int32_t st = step(cur.data(), samples.data() + s * seq + t * n_action, 1, nxt.data(),
                                  rew.data(), done.data());
          if (st != kStepOk) {
            result.status = st;
            return result;
          }
          total += discount * rew[0];
          discount *= p.gamma;
          std::swap(cur, nxt);
          if (done[0]) break;
        }
        returns[s] = total;
      }
    } else {
      std::vector<double> discount(N, 1.0);
      for (int64_t s = 0; s < N; ++s) {
        std::copy(start_state, start_state + n_state, cur.begin() + s * n_state);
        returns[s] = 0.0;
        alive[s] = 1;
      }
      for (int64_t t = 0; t < H; ++t) {
        int64_t n = 0;
        for (int64_t s = 0; s < N; ++s) {
          if (!alive[s]) continue;
          if (n != s) std::copy(cur.begin() + s * n_state, cur.begin() + (s + 1) * n_state, cur.begin() + n * n_state);
          const double* a = samples.data() + s * seq + t * n_action;
          std::copy(a, a + n_action, acts.begin() + n * n_action);
          index[n] = s;
          ++n;
        }
        if (n == 0) break;
        const int32_t st = step(cur.data(), acts.data(), n, nxt.data(), rew.data(), done.data());
        if (st != kStepOk) {
          result.status = st;
          return result;
        }
        for (int64_t b = 0; b < n; ++b) {
          const int64_t s = index[b];
          returns[s] += discount[s] * rew[b];
          discount[s] *= p.gamma;
          if (done[b]) alive[s] = 0;
          std::copy(nxt.begin() + b * n_state, nxt.begin() + (b + 1) * n_state, cur.begin() + s * n_state);
        }
      }
    }

    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return returns[a] > returns[b]; });
    if (returns[order[0]] > result.best_return) {
      result.best_return = returns[order[0]];
      std::copy(samples.begin() + order[0] * seq, samples.begin() + (order[0] + 1) * seq, plan);
    }
    for (int64_t i = 0; i < seq; ++i) {
      double m = 0.0;
      for (int64_t e = 0; e < K; ++e) m += samples[order[e] * seq + i];
      m /= static_cast<double>(K);
      double v = 0.0;
      for (int64_t e = 0; e < K; ++e) {
        const double diff = samples[order[e] * seq + i] - m;
        v += diff * diff;
      }
      mean[i] = m;
      std_[i] = std::sqrt(v / static_cast<double>(K));
    }
  }
  std::copy(std_.begin(), std_.end(), std_out);
  return result;
}

}  // namespace codeworld
