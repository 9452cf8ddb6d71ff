// Binding for rollout.h: batched stepping of a compiled model through its C address.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "rollout.h"

namespace py = pybind11;

namespace codeworld {

using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

static void require(bool ok, const std::string& message) {
  if (!ok) throw py::value_error(message);
}

void bind_rollout(py::module_& m) {
  m.def(
      "step_batch",
      [](uintptr_t address, DArray states, DArray actions, bool stop_on_error) {
        require(address != 0, "step_batch: null model address");
        require(states.ndim() == 2 && actions.ndim() == 2, "step_batch: states and actions must be 2-D");
        const int64_t n = states.shape(0), n_state = states.shape(1), n_action = actions.shape(1);
        require(actions.shape(0) == n, "step_batch: states and actions differ in length (" +
                                           std::to_string(n) + " vs " + std::to_string(actions.shape(0)) + ")");
        py::array_t<double> next_states({n, n_state});
        py::array_t<double> rewards(n);
        py::array_t<uint8_t> dones(n);
        py::array_t<int32_t> status(n);
        auto* ns = next_states.mutable_data();
        auto* rw = rewards.mutable_data();
        auto* dn = dones.mutable_data();
        auto* stt = status.mutable_data();
        for (int64_t i = 0; i < n; ++i) stt[i] = -1;  // -1: not stepped (after an early stop)
        const double* s = states.data();
        const double* a = actions.data();
        int64_t stepped;
        {
          py::gil_scoped_release release;
          stepped = step_batch(step_fn_from_address(address), s, a, n, n_state, n_action, ns, rw, dn,
                               stt, stop_on_error);
        }
        return py::make_tuple(next_states, rewards, dones, status, stepped);
      },
      py::arg("address"), py::arg("states"), py::arg("actions"), py::arg("stop_on_error") = true,
      "Step n transitions of a compiled model. Returns (next_states, rewards, dones, status, n_stepped).");

  m.def(
      "rollout_batch",
      [](uintptr_t address, DArray start_states, DArray actions, double gamma) {
        require(address != 0, "rollout_batch: null model address");
        require(start_states.ndim() == 2, "rollout_batch: start_states must be (n, n_state)");
        require(actions.ndim() == 3, "rollout_batch: actions must be (n, horizon, n_action)");
        const int64_t n = start_states.shape(0), n_state = start_states.shape(1);
        require(actions.shape(0) == n, "rollout_batch: start_states and actions differ in length");
        const int64_t horizon = actions.shape(1), n_action = actions.shape(2);
        py::array_t<double> returns(n);
        py::array_t<int64_t> steps(n);
        py::array_t<int32_t> status(n);
        std::vector<double> scratch(2 * n_state);
        auto* r = returns.mutable_data();
        auto* st = steps.mutable_data();
        auto* stt = status.mutable_data();
        const double* s = start_states.data();
        const double* a = actions.data();
        {
          py::gil_scoped_release release;
          rollout_batch(step_fn_from_address(address), s, a, n, horizon, n_state, n_action, gamma,
                        scratch.data(), r, st, stt);
        }
        return py::make_tuple(returns, steps, status);
      },
      py::arg("address"), py::arg("start_states"), py::arg("actions"), py::arg("gamma") = 1.0,
      "Discounted returns of n open-loop action sequences. Returns (returns, steps, status).");
}

}  // namespace codeworld
