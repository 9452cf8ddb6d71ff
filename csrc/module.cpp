// The extension module codeworld._core: registers each component's binding, nothing else.
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace codeworld {
void bind_rollout(py::module_& m);
}  // namespace codeworld

PYBIND11_MODULE(_core, m) {
  m.doc() = "codeworld's C++ kernels (see csrc/): batched model stepping, planners, transition checking.";
  codeworld::bind_rollout(m);
}
