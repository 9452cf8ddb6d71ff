// The C ABI of a compiled code world model.
//
// A functional model `step(state, action) -> (next_state, reward, done)` that Numba can compile is
// wrapped (codeworld/model.py) in a C callback with this signature. The planners and the batched
// stepping kernels call it through a plain function pointer, with no Python and no GIL.
#pragma once

#include <cstdint>

namespace codeworld {

// Returns a StepStatus. `action` holds n_action doubles; a discrete action is passed as one double
// holding the integer. The callee writes n_state doubles to next_state, one to reward, one to done.
using StepFn = int32_t (*)(const double* state, int64_t n_state, const double* action,
                           int64_t n_action, double* next_state, double* reward, uint8_t* done);

enum StepStatus : int32_t {
  kStepOk = 0,
  kStepBadShape = 1,        // next_state did not have n_state elements
  kStepNonFiniteState = 2,  // next_state held NaN or inf
  kStepNonFiniteReward = 3, // reward was NaN or inf
  kStepException = 4,       // the model raised (set by the compiled wrapper in codeworld/model.py)
};

// The messages for these codes are codeworld.model.STEP_STATUS_MESSAGES (the kernels return the
// code; Python words it).

inline StepFn step_fn_from_address(uintptr_t address) { return reinterpret_cast<StepFn>(address); }

}  // namespace codeworld
