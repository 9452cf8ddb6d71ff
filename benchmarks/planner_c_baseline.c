/* The practical limit for planner throughput: hand-written C loops doing the planners' rollouts.
 *
 * Compiled with the system compiler by planner_throughput.py at run time and called through ctypes
 * with the same compiled model (its C callback, csrc/model_abi.h). No tree, no bookkeeping beyond
 * what the rollouts themselves need: what is left is the cost of the model calls.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*StepFn)(const double*, int64_t, const double*, int64_t, double*, double*, uint8_t*);

static uint64_t rng_state;

static inline uint64_t rng_next(void) {
  rng_state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = rng_state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static inline double rng_uniform(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }

/* Two standard normals by the polar method, as the planners draw them. */
static inline void rng_normal_pair(double* z0, double* z1) {
  double u, v, s;
  do {
    u = 2.0 * rng_uniform() - 1.0;
    v = 2.0 * rng_uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  double f = sqrt(-2.0 * log(s) / s);
  *z0 = u * f;
  *z1 = v * f;
}

/* n_rollouts random-action rollouts of up to `depth` steps from `root`. Returns model steps. */
int64_t random_rollouts(StepFn fn, const double* root, int64_t n_state, int64_t n_actions, int64_t n_rollouts,
                        int64_t depth, double gamma, uint64_t seed, double* mean_return) {
  double* cur = malloc(sizeof(double) * n_state);
  double* nxt = malloc(sizeof(double) * n_state);
  int64_t steps = 0;
  double total = 0.0;
  rng_state = seed;
  for (int64_t r = 0; r < n_rollouts; ++r) {
    memcpy(cur, root, sizeof(double) * n_state);
    double ret = 0.0, discount = 1.0;
    for (int64_t t = 0; t < depth; ++t) {
      double action = (double)(rng_next() % (uint64_t)n_actions), reward;
      uint8_t done;
      if (fn(cur, n_state, &action, 1, nxt, &reward, &done) != 0) break;
      ++steps;
      ret += discount * reward;
      discount *= gamma;
      double* tmp = cur; cur = nxt; nxt = tmp;
      if (done) break;
    }
    total += ret;
  }
  *mean_return = total / (double)n_rollouts;
  free(cur);
  free(nxt);
  return steps;
}

static const double* sort_keys;

static int by_return_desc(const void* a, const void* b) {
  double x = sort_keys[*(const int64_t*)a], y = sort_keys[*(const int64_t*)b];
  return (x < y) - (x > y);
}

/* CEM: sample, clip, roll out, refit to the elites. Writes the best sequence. Returns model steps. */
int64_t cem(StepFn fn, const double* start, int64_t n_state, int64_t n_action, const double* low,
            const double* high, int64_t horizon, int64_t iterations, int64_t n_samples, int64_t n_elites,
            uint64_t seed, double* plan) {
  const int64_t seq = horizon * n_action;
  double* samples = malloc(sizeof(double) * n_samples * seq);
  double* returns = malloc(sizeof(double) * n_samples);
  double* mean = calloc(seq, sizeof(double));
  double* std = malloc(sizeof(double) * seq);
  int64_t* order = malloc(sizeof(int64_t) * n_samples);
  double* cur = malloc(sizeof(double) * n_state);
  double* nxt = malloc(sizeof(double) * n_state);
  double best = -INFINITY;
  int64_t steps = 0;
  rng_state = seed;
  for (int64_t i = 0; i < seq; ++i) {
    int64_t d = i % n_action;
    mean[i] = 0.5 * (low[d] + high[d]);
    std[i] = 0.5 * (high[d] - low[d]);
  }
  for (int64_t it = 0; it < iterations; ++it) {
    for (int64_t s = 0; s < n_samples; ++s) {
      double z[2] = {0.0, 0.0};
      for (int64_t i = 0; i < seq; ++i) {
        int64_t d = i % n_action;
        if (i % 2 == 0) rng_normal_pair(&z[0], &z[1]);
        double v = mean[i] + std[i] * z[i % 2];
        samples[s * seq + i] = v < low[d] ? low[d] : (v > high[d] ? high[d] : v);
      }
      memcpy(cur, start, sizeof(double) * n_state);
      double ret = 0.0;
      for (int64_t t = 0; t < horizon; ++t) {
        double reward;
        uint8_t done;
        if (fn(cur, n_state, samples + s * seq + t * n_action, n_action, nxt, &reward, &done) != 0) break;
        ++steps;
        ret += reward;
        double* tmp = cur; cur = nxt; nxt = tmp;
        if (done) break;
      }
      returns[s] = ret;
      order[s] = s;
    }
    sort_keys = returns;
    qsort(order, n_samples, sizeof(int64_t), by_return_desc);
    if (returns[order[0]] > best) {
      best = returns[order[0]];
      memcpy(plan, samples + order[0] * seq, sizeof(double) * seq);
    }
    for (int64_t i = 0; i < seq; ++i) {
      double m = 0.0, v = 0.0;
      for (int64_t e = 0; e < n_elites; ++e) m += samples[order[e] * seq + i];
      m /= (double)n_elites;
      for (int64_t e = 0; e < n_elites; ++e) {
        double diff = samples[order[e] * seq + i] - m;
        v += diff * diff;
      }
      mean[i] = m;
      std[i] = sqrt(v / (double)n_elites);
    }
  }
  free(samples); free(returns); free(mean); free(std); free(order); free(cur); free(nxt);
  return steps;
}
