// The cross-entropy method for continuous actions: plan an open-loop action sequence.
//
// Each iteration samples `num_samples` sequences of `horizon` actions from independent normals
// (mean, std per time step and dimension; drawn in pairs, see SplitMix64::normal_pair), clips them to the action box, scores each by its
// discounted return under the model (a rollout stops at done), and refits mean and std to the
// `num_elites` best (ties broken by sample index). The best sequence seen in any iteration is the
// plan. The Numba twin (codeworld/kernels/cem.py) and the Python reference follow this code.
//
// Pure C++: the model is reached through a Stepper (see mcts.h). A compiled model is rolled out
// sample by sample (cache friendly), optionally on several threads, each taking a contiguous block
// of samples: the samples are drawn before the rollouts and each return lands in its own slot, so
// the plan is the same for any thread count. A batched model is rolled out time step by time step,
// all live samples in one call. Both give the same returns: each sample's sum is taken in the same
// order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <system_error>
#include <thread>
#include <type_traits>
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
  int64_t threads = 1;      // rollout threads of the compiled path; the plan does not depend on it
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
  }

  for (int64_t it = 0; it < p.iterations; ++it) {
    for (int64_t s = 0; s < N; ++s) {
      double* x = samples.data() + s * seq;
      // Normals come in pairs over the flat (time, dimension) index; an odd tail drops the second.
      for (int64_t i = 0; i < seq; i += 2) {
        double z0, z1;
        rng.normal_pair(z0, z1);
        const int64_t d0 = i % n_action;
        x[i] = std::min(std::max(mean[i] + std_[i] * z0, low[d0]), high[d0]);
        if (i + 1 < seq) {
          const int64_t d1 = (i + 1) % n_action;
          x[i + 1] = std::min(std::max(mean[i + 1] + std_[i + 1] * z1, low[d1]), high[d1]);
        }
      }
    }

    if (!p.time_major) {
      // Rolls out samples [begin, end); on a failure, reports the sample and its status.
      auto roll = [&](Stepper& stp, int64_t begin, int64_t end, int64_t& failed, int32_t& failed_status) {
        std::vector<double> c(n_state), nx(n_state);
        double r = 0.0;
        uint8_t dn = 0;
        for (int64_t s = begin; s < end; ++s) {
          std::copy(start_state, start_state + n_state, c.begin());
          double total = 0.0, discount = 1.0;
          for (int64_t t = 0; t < H; ++t) {
            const int32_t st = stp(c.data(), samples.data() + s * seq + t * n_action, 1, nx.data(), &r, &dn);
            if (st != kStepOk) {
              failed = s;
              failed_status = st;
              return;
            }
            total += discount * r;
            discount *= p.gamma;
            std::swap(c, nx);
            if (dn) break;
          }
          returns[s] = total;
        }
      };
      const int64_t T = std::max<int64_t>(1, std::min<int64_t>(p.threads, N));
      int64_t failed = N;
      int32_t failed_status = kStepOk;
      if constexpr (std::is_same_v<Stepper, CompiledStepper>) {
        if (T > 1) {
          std::vector<Stepper> steppers(T, step);
          std::vector<int64_t> fails(T, N);
          std::vector<int32_t> statuses(T, kStepOk);
          std::vector<std::thread> pool;
          pool.reserve(T - 1);
          for (int64_t k = 1; k < T; ++k) {
            steppers[k].steps = 0;
            try {
              pool.emplace_back(roll, std::ref(steppers[k]), N * k / T, N * (k + 1) / T, std::ref(fails[k]),
                                std::ref(statuses[k]));
            } catch (const std::system_error&) {  // no thread to be had (limits): roll the block here
              roll(steppers[k], N * k / T, N * (k + 1) / T, fails[k], statuses[k]);
            }
          }
          roll(step, 0, N / T, fails[0], statuses[0]);
          for (auto& th : pool) th.join();
          for (int64_t k = 1; k < T; ++k) step.steps += steppers[k].steps;
          for (int64_t k = 0; k < T; ++k) {  // the first failing sample, as one thread would find it
            if (fails[k] < failed) {
              failed = fails[k];
              failed_status = statuses[k];
            }
          }
        } else {
          roll(step, 0, N, failed, failed_status);
        }
      } else {
        roll(step, 0, N, failed, failed_status);
      }
      if (failed_status != kStepOk) {
        result.status = failed_status;
        return result;
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
