// The extension module codeworld._core: registers each component's binding, nothing else.
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace codeworld {
void bind_rollout(py::module_& m);
void bind_mcts(py::module_& m);
void bind_cem(py::module_& m);
void bind_check(py::module_& m);
}  // namespace codeworld

PYBIND11_MODULE(_core, m) {
  m.doc() = "codeworld's C++ kernels (see csrc/): batched model stepping, planners, transition checking.";
  codeworld::bind_rollout(m);
  codeworld::bind_mcts(m);
  codeworld::bind_cem(m);
  codeworld::bind_check(m);
}
