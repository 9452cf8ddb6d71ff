// The batched Python path for the planners: a Stepper that calls a Python function once per batch.
//
// Used only by the binding files (it needs pybind11): the planner headers stay free of Python.
// The callable takes (states (n, n_state), actions (n, n_action)) and returns (next_states,
// rewards, dones); an exception it raises is kept and raised again once the planner returns.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "model_abi.h"

namespace codeworld {

namespace py = pybind11;

// Status a PythonStepper returns when the callable raised or returned the wrong shapes.
constexpr int32_t kStepPythonError = 100;

struct PythonStepper {
  PythonStepper(py::function fn_, int64_t n_state_, int64_t n_action_)
      : fn(std::move(fn_)), n_state(n_state_), n_action(n_action_) {}

  py::function fn;
  int64_t n_state;
  int64_t n_action;
  int64_t steps = 0;
  int64_t calls = 0;
  std::optional<py::error_already_set> error;
  std::string shape_error;

  int32_t operator()(const double* states, const double* actions, int64_t n, double* next_states,
                     double* rewards, uint8_t* dones) {
    py::gil_scoped_acquire gil;
    ++calls;
    steps += n;
    try {
      py::array_t<double> s({n, n_state});
      py::array_t<double> a({n, n_action});
      std::memcpy(s.mutable_data(), states, sizeof(double) * n * n_state);
      std::memcpy(a.mutable_data(), actions, sizeof(double) * n * n_action);
      py::tuple out = fn(s, a);
      if (out.size() != 3) {
        shape_error = "the batch step must return (next_states, rewards, dones)";
        return kStepPythonError;
      }
      auto ns = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(out[0]);
      auto rw = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(out[1]);
      auto dn = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(out[2]);
      if (!ns || !rw || !dn || ns.size() != n * n_state || rw.size() != n || dn.size() != n) {
        shape_error = "the batch step returned arrays of the wrong size";
        return kStepPythonError;
      }
      std::memcpy(next_states, ns.data(), sizeof(double) * n * n_state);
      std::memcpy(rewards, rw.data(), sizeof(double) * n);
      std::memcpy(dones, dn.data(), n);
    } catch (py::error_already_set& exc) {
      error.emplace(std::move(exc));
      return kStepPythonError;
    }
    return kStepOk;
  }

  // Raises what the callable raised, if anything.
  void rethrow() {
    if (error) {
      py::error_already_set exc = std::move(*error);
      error.reset();
      throw exc;
    }
    if (!shape_error.empty()) throw py::value_error(shape_error);
  }
};

}  // namespace codeworld
