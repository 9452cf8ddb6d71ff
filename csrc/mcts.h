// UCT Monte Carlo tree search for discrete actions over a flat, preallocated node pool.
//
// One call plans one decision from a root state. Simulations run in waves of `wave_size`: each
// wave selects that many leaves (visit counts are added on the way down, so later selections in
// the wave see the earlier ones as a virtual loss), expands them with one batched model call,
// rolls them out in lockstep (one batched call per rollout depth), and backs them up. With
// wave_size 1 this is exactly sequential UCT, the CWMB paper's planner. The Numba twin
// (codeworld/kernels/mcts.py) and the Python reference follow this code line for line.
//
// Pure C++: the model is reached through a Stepper, a callable
//   int32_t (const double* states, const double* actions, int64_t n,
//            double* next_states, double* rewards, uint8_t* dones)
// returning 0 when every transition was stepped.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "planner_common.h"

namespace codeworld {

struct MctsParams {
  int64_t n_actions = 2;
  int64_t num_simulations = 25;  // CWMB paper
  int64_t rollout_depth = 100;   // CWMB paper: random rollouts of up to 100 steps
  int64_t wave_size = 1;         // leaves per batched model call; 1 = sequential UCT
  double c_uct = 1.0;            // CWMB paper
  double gamma = 0.99;           // CWMB paper
  uint64_t seed = 0;
};

struct MctsResult {
  int64_t action = 0;
  int32_t status = kStepOk;  // first non-ok model status, or ok
  int64_t n_nodes = 0;
};

// Sentinel for "no node" in the child and parent arrays.
constexpr int64_t kNoNode = -1;

// A selection ends at a new node (expand it), a known terminal node, or a node created earlier in
// the same wave (pending: it gets one more rollout once expanded).
enum LeafKind : int8_t { kLeafExpand = 0, kLeafTerminal = 1, kLeafPending = 2 };

// Plans one action. Writes the root's per-action visit counts and mean values (0 where unvisited)
// to root_visits and root_values (n_actions each).
template <class Stepper>
MctsResult mcts_plan(Stepper& step, const double* root_state, int64_t n_state, const MctsParams& p,
                     int64_t* root_visits, double* root_values) {
  const int64_t A = p.n_actions;
  const int64_t capacity = 1 + p.num_simulations;
  std::vector<int64_t> parent(capacity, kNoNode), action(capacity, 0), children(capacity * A, kNoNode);
  std::vector<int64_t> visits(capacity, 0);
  std::vector<double> value_sum(capacity, 0.0), reward(capacity, 0.0), states(capacity * n_state, 0.0);
  std::vector<uint8_t> terminal(capacity, 0), evaluated(capacity, 0);
  for (int64_t d = 0; d < n_state; ++d) states[d] = root_state[d];
  evaluated[0] = 1;
  int64_t n_nodes = 1;

  const int64_t wave = p.wave_size < 1 ? 1 : p.wave_size;
  std::vector<int64_t> leaf(wave), leaf_kind(wave), batch_index(wave);
  std::vector<double> batch_states(wave * n_state), batch_actions(wave), batch_next(wave * n_state);
  std::vector<double> batch_rewards(wave), rollout_return(wave), discount(wave);
  std::vector<uint8_t> batch_dones(wave), alive(wave);
  SplitMix64 rng(p.seed);
  MctsResult result;

  int64_t sims = 0;
  while (sims < p.num_simulations) {
    const int64_t k = std::min(wave, p.num_simulations - sims);
    // Selection.
    for (int64_t j = 0; j < k; ++j) {
      int64_t node = 0;
      visits[0] += 1;
      while (true) {
        if (terminal[node]) {
          leaf[j] = node;
          leaf_kind[j] = kLeafTerminal;
          break;
        }
        int64_t untried = -1;
        for (int64_t a = 0; a < A; ++a) {
          if (children[node * A + a] == kNoNode) {
            untried = a;
            break;
          }
        }
        if (untried >= 0) {
          const int64_t c = n_nodes++;
          parent[c] = node;
          action[c] = untried;
          children[node * A + untried] = c;
          visits[c] = 1;
          leaf[j] = c;
          leaf_kind[j] = kLeafExpand;
          break;
        }
        int64_t best = kNoNode;
        double best_score = -std::numeric_limits<double>::infinity();
        const double log_n = std::log(static_cast<double>(visits[node]));
        for (int64_t a = 0; a < A; ++a) {
          const int64_t c = children[node * A + a];
          if (!evaluated[c]) continue;
          const double n = static_cast<double>(visits[c]);
          const double score = value_sum[c] / n + p.c_uct * std::sqrt(log_n / n);
          if (score > best_score) {
            best_score = score;
            best = c;
          }
        }
        if (best == kNoNode) {
          // Every child waits for this wave's expansion: roll out once more from the least
          // visited of them (leaf parallelism) instead of wasting the simulation.
          int64_t fewest = std::numeric_limits<int64_t>::max();
          for (int64_t a = 0; a < A; ++a) {
            const int64_t c = children[node * A + a];
            if (visits[c] < fewest) {
              fewest = visits[c];
              best = c;
            }
          }
          visits[best] += 1;
          leaf[j] = best;
          leaf_kind[j] = kLeafPending;
          break;
        }
        node = best;
        visits[node] += 1;
      }
    }
    sims += k;

    // Expansion: one batched step for every new leaf.
    int64_t n_batch = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (leaf_kind[j] != kLeafExpand) continue;
      const int64_t c = leaf[j], par = parent[c];
      for (int64_t d = 0; d < n_state; ++d) batch_states[n_batch * n_state + d] = states[par * n_state + d];
      batch_actions[n_batch] = static_cast<double>(action[c]);
      ++n_batch;
    }
    if (n_batch > 0) {
      const int32_t st = step(batch_states.data(), batch_actions.data(), n_batch, batch_next.data(),
                              batch_rewards.data(), batch_dones.data());
      if (st != kStepOk) {
        result.status = st;
        return result;
      }
      int64_t b = 0;
      for (int64_t j = 0; j < k; ++j) {
        if (leaf_kind[j] != kLeafExpand) continue;
        const int64_t c = leaf[j];
        for (int64_t d = 0; d < n_state; ++d) states[c * n_state + d] = batch_next[b * n_state + d];
        reward[c] = batch_rewards[b];
        terminal[c] = batch_dones[b] ? 1 : 0;
        evaluated[c] = 1;
        ++b;
      }
    }

    // One leaf (sequential UCT, the paper's planner): roll it out in place, two buffers swapped,
    // no compaction or copy-back. The same draws and arithmetic as the lockstep path below.
    if (k == 1) {
      rollout_return[0] = 0.0;
      if (leaf_kind[0] != kLeafTerminal && !terminal[leaf[0]]) {
        double* cur = batch_states.data();
        double* nxt = batch_next.data();
        for (int64_t d = 0; d < n_state; ++d) cur[d] = states[leaf[0] * n_state + d];
        double ret = 0.0, disc = 1.0;
        for (int64_t depth = 0; depth < p.rollout_depth; ++depth) {
          batch_actions[0] = static_cast<double>(rng.integer(A));
          const int32_t st = step(cur, batch_actions.data(), 1, nxt, batch_rewards.data(), batch_dones.data());
          if (st != kStepOk) {
            result.status = st;
            return result;
          }
          ret += disc * batch_rewards[0];
          disc *= p.gamma;
          std::swap(cur, nxt);
          if (batch_dones[0]) break;
        }
        rollout_return[0] = ret;
      }
    }

    // Rollouts in lockstep: uniform random actions, one batched step per depth.
    for (int64_t j = 0; j < k && k > 1; ++j) {
      rollout_return[j] = 0.0;
      discount[j] = 1.0;
      alive[j] = (leaf_kind[j] != kLeafTerminal && !terminal[leaf[j]]) ? 1 : 0;
      if (alive[j]) {
        for (int64_t d = 0; d < n_state; ++d) batch_states[j * n_state + d] = states[leaf[j] * n_state + d];
      }
    }
    for (int64_t depth = 0; depth < p.rollout_depth && k > 1; ++depth) {
      n_batch = 0;
      for (int64_t j = 0; j < k; ++j) {
        if (!alive[j]) continue;
        if (n_batch != j) {
          for (int64_t d = 0; d < n_state; ++d) batch_states[n_batch * n_state + d] = batch_states[j * n_state + d];
        }
        batch_actions[n_batch] = static_cast<double>(rng.integer(A));
        batch_index[n_batch] = j;
        ++n_batch;
      }
      if (n_batch == 0) break;
      const int32_t st = step(batch_states.data(), batch_actions.data(), n_batch, batch_next.data(),
                              batch_rewards.data(), batch_dones.data());
      if (st != kStepOk) {
        result.status = st;
        return result;
      }
      for (int64_t b = 0; b < n_batch; ++b) {
        const int64_t j = batch_index[b];
        rollout_return[j] += discount[j] * batch_rewards[b];
        discount[j] *= p.gamma;
        if (batch_dones[b]) alive[j] = 0;
      }
      // Each next state goes back to its leaf's slot (j >= b, and the source is batch_next).
      for (int64_t b = 0; b < n_batch; ++b) {
        const int64_t j = batch_index[b];
        for (int64_t d = 0; d < n_state; ++d) batch_states[j * n_state + d] = batch_next[b * n_state + d];
      }
    }

    // Backup.
    for (int64_t j = 0; j < k; ++j) {
      double g = leaf_kind[j] == kLeafTerminal ? 0.0 : rollout_return[j];
      for (int64_t node = leaf[j]; node != 0; node = parent[node]) {
        g = reward[node] + p.gamma * g;
        value_sum[node] += g;
      }
      value_sum[0] += g;
    }
  }

  int64_t best_action = 0;
  double best_value = -std::numeric_limits<double>::infinity();
  for (int64_t a = 0; a < A; ++a) {
    const int64_t c = children[a];
    root_visits[a] = 0;
    root_values[a] = 0.0;
    if (c == kNoNode || !evaluated[c] || visits[c] == 0) continue;
    root_visits[a] = visits[c];
    root_values[a] = value_sum[c] / static_cast<double>(visits[c]);
    if (root_values[a] > best_value) {
      best_value = root_values[a];
      best_action = a;
    }
  }
  result.action = best_action;
  result.n_nodes = n_nodes;
  return result;
}

}  // namespace codeworld
