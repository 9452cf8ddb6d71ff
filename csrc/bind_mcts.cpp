// Binding for mcts.h: plan one discrete action through a compiled model or a batched Python call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "mcts.h"
#include "planner_python.h"

namespace py = pybind11;

namespace codeworld {

using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

static MctsParams mcts_params(int64_t n_actions, int64_t num_simulations, int64_t rollout_depth,
                              int64_t wave_size, double c_uct, double gamma, uint64_t seed) {
  if (n_actions < 1) throw py::value_error("mcts: n_actions must be at least 1");
  if (num_simulations < 0 || rollout_depth < 0) throw py::value_error("mcts: negative budget");
  MctsParams p;
  p.n_actions = n_actions;
  p.num_simulations = num_simulations;
  p.rollout_depth = rollout_depth;
  p.wave_size = wave_size;
  p.c_uct = c_uct;
  p.gamma = gamma;
  p.seed = seed;
  return p;
}

template <class Stepper>
static py::tuple run_mcts(Stepper& stepper, DArray root, const MctsParams& p) {
  if (root.ndim() != 1) throw py::value_error("mcts: root_state must be 1-D");
  py::array_t<int64_t> visits(p.n_actions);
  py::array_t<double> values(p.n_actions);
  const double* s = root.data();
  auto* v = visits.mutable_data();
  auto* q = values.mutable_data();
  MctsResult r;
  {
    py::gil_scoped_release release;
    r = mcts_plan(stepper, s, root.shape(0), p, v, q);
  }
  return py::make_tuple(r.action, visits, values, r.status, stepper.steps);
}

void bind_mcts(py::module_& m) {
  m.def(
      "mcts_plan",
      [](uintptr_t address, DArray root_state, int64_t n_actions, int64_t num_simulations,
         int64_t rollout_depth, int64_t wave_size, double c_uct, double gamma, uint64_t seed) {
        if (address == 0) throw py::value_error("mcts_plan: null model address");
        const MctsParams p = mcts_params(n_actions, num_simulations, rollout_depth, wave_size, c_uct, gamma, seed);
        CompiledStepper stepper{step_fn_from_address(address), root_state.ndim() == 1 ? root_state.shape(0) : 0, 1};
        return run_mcts(stepper, root_state, p);
      },
      py::arg("address"), py::arg("root_state"), py::arg("n_actions"), py::arg("num_simulations"),
      py::arg("rollout_depth"), py::arg("wave_size"), py::arg("c_uct"), py::arg("gamma"), py::arg("seed"),
      "UCT through a compiled model. Returns (action, root_visits, root_values, status, model_steps).");

  m.def(
      "mcts_plan_batched",
      [](py::function step_batch, DArray root_state, int64_t n_actions, int64_t num_simulations,
         int64_t rollout_depth, int64_t wave_size, double c_uct, double gamma, uint64_t seed) {
        const MctsParams p = mcts_params(n_actions, num_simulations, rollout_depth, wave_size, c_uct, gamma, seed);
        PythonStepper stepper(step_batch, root_state.ndim() == 1 ? root_state.shape(0) : 0, 1);
        py::tuple out = run_mcts(stepper, root_state, p);
        stepper.rethrow();
        return out;
      },
      py::arg("step_batch"), py::arg("root_state"), py::arg("n_actions"), py::arg("num_simulations"),
      py::arg("rollout_depth"), py::arg("wave_size"), py::arg("c_uct"), py::arg("gamma"), py::arg("seed"),
      "UCT through a Python batch step, called once per wave and rollout depth. "
      "Returns (action, root_visits, root_values, status, model_steps).");
}

}  // namespace codeworld
