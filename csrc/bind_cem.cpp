// Binding for cem.h: plan a continuous action sequence through a compiled model or a batched Python call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "cem.h"
#include "planner_python.h"

namespace py = pybind11;

namespace codeworld {

using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

template <class Stepper>
static py::tuple run_cem(Stepper& stepper, DArray start, DArray low, DArray high, DArray init_mean,
                         DArray init_std, CemParams p) {
  const int64_t n_action = low.size();
  if (start.ndim() != 1) throw py::value_error("cem: start_state must be 1-D");
  if (high.size() != n_action) throw py::value_error("cem: low and high differ in size");
  if (init_mean.ndim() != 2 || init_mean.shape(0) != p.horizon || init_mean.shape(1) != n_action ||
      init_std.ndim() != 2 || init_std.shape(0) != p.horizon || init_std.shape(1) != n_action)
    throw py::value_error("cem: init_mean and init_std must be (horizon, n_action) = (" +
                          std::to_string(p.horizon) + ", " + std::to_string(n_action) + ")");
  if (p.horizon < 1 || p.iterations < 1 || p.num_samples < 1 || p.num_elites < 1)
    throw py::value_error("cem: horizon, iterations, num_samples and num_elites must be positive");
  py::array_t<double> plan({p.horizon, n_action}), mean({p.horizon, n_action}), std_({p.horizon, n_action});
  const double *s = start.data(), *lo = low.data(), *hi = high.data(), *m0 = init_mean.data(), *s0 = init_std.data();
  double *pl = plan.mutable_data(), *mn = mean.mutable_data(), *sd = std_.mutable_data();
  const int64_t n_state = start.shape(0);
  CemResult r;
  {
    py::gil_scoped_release release;
    r = cem_plan(stepper, s, n_state, n_action, lo, hi, m0, s0, p, pl, mn, sd);
  }
  return py::make_tuple(plan, r.best_return, mean, std_, r.status, stepper.steps);
}

static CemParams cem_params(int64_t horizon, int64_t iterations, int64_t num_samples, int64_t num_elites,
                            double gamma, uint64_t seed, bool time_major, int64_t threads = 1) {
  CemParams p;
  p.horizon = horizon;
  p.iterations = iterations;
  p.num_samples = num_samples;
  p.num_elites = num_elites;
  p.gamma = gamma;
  p.seed = seed;
  p.time_major = time_major;
  p.threads = threads;
  return p;
}

void bind_cem(py::module_& m) {
  m.def(
      "cem_plan",
      [](uintptr_t address, DArray start_state, DArray low, DArray high, DArray init_mean, DArray init_std,
         int64_t horizon, int64_t iterations, int64_t num_samples, int64_t num_elites, double gamma,
         uint64_t seed, int64_t threads) {
        if (address == 0) throw py::value_error("cem_plan: null model address");
        if (threads < 1) throw py::value_error("cem_plan: threads must be >= 1");
        CompiledStepper stepper{step_fn_from_address(address), start_state.ndim() == 1 ? start_state.shape(0) : 0,
                                static_cast<int64_t>(low.size())};
        return run_cem(stepper, start_state, low, high, init_mean, init_std,
                       cem_params(horizon, iterations, num_samples, num_elites, gamma, seed, false, threads));
      },
      py::arg("address"), py::arg("start_state"), py::arg("low"), py::arg("high"), py::arg("init_mean"),
      py::arg("init_std"), py::arg("horizon"), py::arg("iterations"), py::arg("num_samples"),
      py::arg("num_elites"), py::arg("gamma"), py::arg("seed"), py::arg("threads") = 1,
      "CEM through a compiled model, its rollouts on `threads` threads (the plan does not depend on "
      "the count). Returns (plan, best_return, mean, std, status, model_steps).");

  m.def(
      "cem_plan_batched",
      [](py::function step_batch, DArray start_state, DArray low, DArray high, DArray init_mean, DArray init_std,
         int64_t horizon, int64_t iterations, int64_t num_samples, int64_t num_elites, double gamma,
         uint64_t seed) {
        PythonStepper stepper(step_batch, start_state.ndim() == 1 ? start_state.shape(0) : 0,
                              static_cast<int64_t>(low.size()));
        py::tuple out = run_cem(stepper, start_state, low, high, init_mean, init_std,
                                cem_params(horizon, iterations, num_samples, num_elites, gamma, seed, true));
        stepper.rethrow();
        return out;
      },
      py::arg("step_batch"), py::arg("start_state"), py::arg("low"), py::arg("high"), py::arg("init_mean"),
      py::arg("init_std"), py::arg("horizon"), py::arg("iterations"), py::arg("num_samples"),
      py::arg("num_elites"), py::arg("gamma"), py::arg("seed"),
      "CEM through a Python batch step, called once per iteration and time step with every live sample. "
      "Returns (plan, best_return, mean, std, status, model_steps).");
}

}  // namespace codeworld
