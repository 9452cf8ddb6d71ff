// Binding for check.h: batched comparison of predicted and recorded transitions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "check.h"

namespace py = pybind11;

namespace codeworld {

namespace {

using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using BArray = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

void require(bool ok, const std::string& message) {
  if (!ok) throw py::value_error("check_transitions: " + message);
}

}  // namespace

void bind_check(py::module_& m) {
  m.def(
      "check_transitions",
      [](DArray obs, DArray true_next, DArray pred_next, DArray true_reward, DArray pred_reward,
         BArray true_done, BArray pred_done, double state_atol, double state_rtol,
         double reward_atol, double reward_rtol) {
        require(obs.ndim() == 2 && true_next.ndim() == 2 && pred_next.ndim() == 2,
                "obs, true_next and pred_next must be 2-D");
        const int64_t n = obs.shape(0), d = obs.shape(1);
        require(true_next.shape(0) == n && pred_next.shape(0) == n && true_next.shape(1) == d &&
                    pred_next.shape(1) == d,
                "obs, true_next and pred_next must have the same shape (" + std::to_string(n) + ", " +
                    std::to_string(d) + ")");
        require(true_reward.size() == n && pred_reward.size() == n && true_done.size() == n &&
                    pred_done.size() == n,
                "rewards and dones must have " + std::to_string(n) + " elements");
        py::array_t<int64_t> dims_ok(n);
        py::array_t<uint8_t> reward_ok(n), done_ok(n);
        py::array_t<double> sq_err_model(n), sq_err_still(n);
        const CheckTolerance tol{state_atol, state_rtol, reward_atol, reward_rtol};
        const double *o = obs.data(), *tn = true_next.data(), *pn = pred_next.data();
        const double *tr = true_reward.data(), *pr = pred_reward.data();
        const uint8_t *td = true_done.data(), *pd = pred_done.data();
        int64_t* dk = dims_ok.mutable_data();
        uint8_t *rk = reward_ok.mutable_data(), *dnk = done_ok.mutable_data();
        double *em = sq_err_model.mutable_data(), *es = sq_err_still.mutable_data();
        {
          py::gil_scoped_release release;
          check_transitions(n, d, o, tn, pn, tr, pr, td, pd, tol, dk, rk, dnk, em, es);
        }
        return py::make_tuple(dims_ok, reward_ok, done_ok, sq_err_model, sq_err_still);
      },
      py::arg("obs"), py::arg("true_next"), py::arg("pred_next"), py::arg("true_reward"),
      py::arg("pred_reward"), py::arg("true_done"), py::arg("pred_done"), py::arg("state_atol"),
      py::arg("state_rtol"), py::arg("reward_atol"), py::arg("reward_rtol"),
      "Compare n predicted transitions with recorded ones. Returns (dims_ok, reward_ok, done_ok, "
      "sq_err_model, sq_err_still).");
}

}  // namespace codeworld
