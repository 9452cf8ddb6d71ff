"""The world-model contract: checking a program's form, and loading and compiling it in a worker.

A code world model is a Python module in one of two forms:

* functional (canonical): ``def step(state, action) -> (next_state, reward, done)``;
* class (the CWMB paper's): ``class Environment`` with ``set_state(state)`` and ``step(action)``.

`check_model_source` reads the source with `ast` only and never runs it, so it is safe in the
parent process. `load_model` executes the program and must only be called inside a sandbox worker
(`codeworld._model_worker` calls it there); it tries to compile a functional model with Numba in
nopython mode and wraps it in a C callback with the ABI of ``csrc/model_abi.h``, whose address the
C++ kernels call.
"""

from __future__ import annotations

import ast
import ctypes
import math
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

FUNCTIONAL = "functional"
CLASS = "class"

# Status codes of the compiled step callback: the same codes as StepStatus in csrc/model_abi.h
# (tests/test_model_loader.py checks that they agree).
STEP_OK = 0
STEP_BAD_SHAPE = 1
STEP_NONFINITE_STATE = 2
STEP_NONFINITE_REWARD = 3
STEP_EXCEPTION = 4
STEP_STATUS_MESSAGES = {
    STEP_OK: "ok",
    STEP_BAD_SHAPE: "next_state has the wrong number of elements",
    STEP_NONFINITE_STATE: "next_state contains NaN or inf",
    STEP_NONFINITE_REWARD: "reward is NaN or inf",
    STEP_EXCEPTION: "the model raised an exception",
}

# The ctypes prototype of the compiled step callback; Numba kernels call it as a function pointer.
STEP_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.POINTER(ctypes.c_double),
    ctypes.c_int64,
    ctypes.POINTER(ctypes.c_double),
    ctypes.c_int64,
    ctypes.POINTER(ctypes.c_double),
    ctypes.POINTER(ctypes.c_double),
    ctypes.POINTER(ctypes.c_uint8),
)


class ModelSourceError(ValueError):
    """The program is not a world model: a syntax error, or neither accepted form.

    Attributes:
        line: 1-based line of the problem in the program, or None when it has no single line.
    """

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class ModelSourceInfo:
    """What static inspection found in a model program.

    Attributes:
        form: ``"functional"`` or ``"class"``.
        step_line: line of the ``step`` definition.
    """

    form: str
    step_line: int


def _positional_params(fn: ast.FunctionDef) -> tuple[int, int, bool]:
    """(number of positional parameters, how many have defaults, whether *args is present)."""
    args = fn.args
    positional = list(args.posonlyargs) + list(args.args)
    return len(positional), len(args.defaults), args.vararg is not None


def _accepts(fn: ast.FunctionDef, count: int) -> bool:
    n, n_defaults, varargs = _positional_params(fn)
    return (n - n_defaults) <= count and (n >= count or varargs)


def check_model_source(source: str) -> ModelSourceInfo:
    """Check that `source` is a world model in one of the accepted forms, without running it.

    Raises:
        ModelSourceError: with the line and a message saying what is wrong.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        detail = exc.msg
        if exc.text:
            detail += f": {exc.text.strip()}"
        raise ModelSourceError(f"syntax error: {detail}", exc.lineno) from None

    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    if "step" in functions:
        step = functions["step"]
        if isinstance(step, ast.AsyncFunctionDef):
            raise ModelSourceError("step must be a plain function, not async", step.lineno)
        if not _accepts(step, 2):
            n = _positional_params(step)[0]
            raise ModelSourceError(
                f"step must take (state, action); it takes {n} positional parameter(s)", step.lineno
            )
        return ModelSourceInfo(FUNCTIONAL, step.lineno)

    if "Environment" in classes:
        cls = classes["Environment"]
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        missing = [m for m in ("set_state", "step") if m not in methods]
        if missing:
            raise ModelSourceError(
                "class Environment must define set_state(self, state) and step(self, action); "
                f"missing: {', '.join(missing)}",
                cls.lineno,
            )
        for name in ("set_state", "step"):
            if not _accepts(methods[name], 2):
                raise ModelSourceError(
                    f"Environment.{name} must take (self, one argument)", methods[name].lineno
                )
        init = methods.get("__init__")
        if init is not None and not _accepts(init, 1):
            raise ModelSourceError(
                "Environment.__init__ must be callable without arguments (give defaults)", init.lineno
            )
        return ModelSourceInfo(CLASS, methods["step"].lineno)

    raise ModelSourceError(
        "no world model found: define a top-level `def step(state, action)` returning "
        "(next_state, reward, done), or a `class Environment` with set_state(state) and step(action)"
    )


# ---------------------------------------------------------------------------------------------
# In-worker loading. Everything below executes the candidate's code.
# ---------------------------------------------------------------------------------------------

MODEL_MODULE_NAME = "cwm_candidate"


@dataclass
class LoadedModel:
    """A model program executed and ready to step (inside a sandbox worker only).

    Attributes:
        form: ``"functional"`` or ``"class"``.
        step: Python callable ``(state, action) -> (next_state, reward, done)``.
        discrete: whether actions are integers.
        compiled: whether Numba compiled the model into a C callback.
        compile_error: why Numba could not compile it (None when compiled or not attempted).
        address: the C address of the callback (0 when not compiled).
        cfunc: the ctypes function pointer to the callback (None when not compiled).
        filename: the file name the program was compiled under (for tracebacks).
    """

    form: str
    step: Callable[[np.ndarray, Any], Any]
    discrete: bool
    compiled: bool = False
    compile_error: str | None = None
    address: int = 0
    cfunc: Any = None
    filename: str = "model.py"
    _keepalive: list = field(default_factory=list, repr=False)

    def info(self) -> dict:
        return {
            "form": self.form,
            "compiled": self.compiled,
            "compile_error": self.compile_error,
            "discrete": self.discrete,
        }


def compile_candidate(source: str, filename: str):
    """Compile untrusted source under `filename`, registering its lines so that tracebacks (and
    `codeworld.sandbox._ops.candidate_error`) show them. Raises SyntaxError."""
    import linecache

    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")


def exec_candidate(source: str, filename: str, namespace: dict | None = None) -> dict:
    """Load a candidate program: compile it (`compile_candidate`) and run its module body in
    `namespace` (a fresh one by default), which is returned. Inside a sandbox worker only.

    Raises:
        Exception: whatever compiling or running the module body raises.
    """
    namespace = {} if namespace is None else namespace
    exec(compile_candidate(source, filename), namespace)  # noqa: S102 - in the sandbox only
    return namespace


def _exec_module(source: str, filename: str, extra_globals: dict | None = None) -> types.ModuleType:
    import sys

    module = types.ModuleType(MODEL_MODULE_NAME)
    module.__file__ = filename
    module.__dict__.update(extra_globals or {})
    sys.modules[MODEL_MODULE_NAME] = module
    exec_candidate(source, filename, module.__dict__)
    return module


def _class_step(cls: type) -> Callable:
    instance = cls()

    def step(state, action):
        instance.set_state(state)
        return instance.step(action)

    return step


def load_model(source: str, *, discrete: bool, compile: bool = True, filename: str = "model.py",
               extra_globals: dict | None = None) -> LoadedModel:
    """Execute a model program and prepare it for stepping. Call only inside a sandbox worker.

    Args:
        source: the program text.
        discrete: True when actions are integers (passed to ``step`` as an int).
        compile: try Numba nopython compilation of a functional model.
        filename: name under which the program is compiled (shown in tracebacks).
        extra_globals: names defined in the module before it runs (codeworld's own helpers, such
            as the parameter reader of constant fitting).

    Raises:
        ModelSourceError: the program is not in an accepted form.
        Exception: whatever executing the module body raises.
    """
    info = check_model_source(source)
    module = _exec_module(source, filename, extra_globals)
    if info.form == FUNCTIONAL:
        step = module.step
        if not callable(step):
            raise ModelSourceError("`step` is not callable after running the module")
    else:
        step = _class_step(module.Environment)
    model = LoadedModel(form=info.form, step=step, discrete=discrete, filename=filename)
    if info.form == FUNCTIONAL and compile:
        try:
            cfunc = compile_step(step, discrete)
        except Exception as exc:  # Numba's errors are many types; any of them means "not compilable"
            model.compile_error = _short_numba_error(exc)
        else:
            model.compiled = True
            model.address = cfunc.address
            model.cfunc = STEP_PROTOTYPE(cfunc.address)
            model._keepalive.append(cfunc)
    elif info.form == CLASS:
        model.compile_error = "class-form models run on the Python path"
    return model


def _short_numba_error(exc: BaseException, limit: int = 600) -> str:
    text = f"{type(exc).__name__}: {exc}"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    text = "\n".join(lines[:8])
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _numba_helpers():
    """Small jitted helpers of the callback, built once per process."""
    global _HELPERS
    if _HELPERS is None:
        import numba

        from numba import types as nt
        from numba.extending import intrinsic, overload

        def flat_float64(value):
            """The model's next state as a 1-D float64 array (a view when it already is one)."""

        @overload(flat_float64)
        def _flat_float64_impl(value):
            if isinstance(value, nt.Array) and value.ndim == 1 and value.dtype == nt.float64:
                return lambda value: value
            return lambda value: np.asarray(value, dtype=np.float64).flatten()

        @numba.njit
        def overlaps_differently(nxt, state):
            """True when nxt views state's memory other than as the very same array."""
            base = state.ctypes.data
            size = state.size * 8
            start = nxt.ctypes.data
            stride = nxt.strides[0]
            span = (nxt.size - 1) * stride
            low = start + min(0, span)
            high = start + max(0, span) + 8
            if high <= base or low >= base + size:
                return False
            return not (start == base and stride == 8)

        @intrinsic
        def stack_doubles(typingctx, n):
            """Room for n float64 in the calling function's stack frame, freed when it returns.

            Only for the callback's own body (an alloca in a helper would die with the helper).
            """
            def codegen(context, builder, signature, args):
                return builder.alloca(context.get_value_type(nt.float64), size=args[0])

            return nt.CPointer(nt.float64)(nt.int64), codegen

        _HELPERS = (flat_float64, overlaps_differently, stack_doubles)
    return _HELPERS


_HELPERS = None


def compile_step(step: Callable, discrete: bool):
    """Compile `step` with Numba and wrap it in a C callback with the ABI of csrc/model_abi.h.

    Compilation is eager: a function Numba cannot type raises here. The callback gives the model
    copies of its inputs (so a model that mutates them cannot corrupt the caller), converts the
    action (an int for discrete spaces), validates the outputs and turns any exception into
    STEP_EXCEPTION. `state` and `next_state` must not be the same buffer.
    """
    import numba
    from numba import carray, types as nt

    jitted = numba.njit(cache=False)(step)
    sig = nt.int32(
        nt.CPointer(nt.float64), nt.int64, nt.CPointer(nt.float64), nt.int64,
        nt.CPointer(nt.float64), nt.CPointer(nt.float64), nt.CPointer(nt.uint8),
    )

    _flat_float64, _overlaps_differently, _stack_doubles = _numba_helpers()

    @numba.cfunc(sig, error_model="python")
    def callback(state_ptr, n_state, action_ptr, n_action, out_state, out_reward, out_done):
        # The model gets private copies of its inputs, so the caller's buffers are never written:
        # the state is copied into the output buffer and a continuous action into this call's
        # stack frame, which saves a heap allocation per step for each.
        state = carray(out_state, (n_state,))
        for i in range(n_state):
            state[i] = state_ptr[i]
        if discrete:
            action = np.int64(action_ptr[0])
        else:
            action = carray(_stack_doubles(n_action), (n_action,))
            for i in range(n_action):
                action[i] = action_ptr[i]
        try:
            result = jitted(state, action)
            nxt = _flat_float64(result[0])
            reward = float(result[1])
            done = bool(result[2])
        except Exception:
            return 4
        if nxt.size != n_state:
            return 1
        if _overlaps_differently(nxt, state):
            nxt = nxt.copy()  # e.g. a reversed view of the state: copy before writing over it
        for i in range(n_state):
            value = nxt[i]
            if not math.isfinite(value):
                return 2
            out_state[i] = value
        if not math.isfinite(reward):
            return 3
        out_reward[0] = reward
        out_done[0] = 1 if done else 0
        return 0

    return callback


# ---------------------------------------------------------------------------------------------
# Output validation for the Python path.
# ---------------------------------------------------------------------------------------------


class InvalidOutput(ValueError):
    """A model's return value broke the contract (wrong type, shape, NaN, None, too few values)."""


def validate_output(result: Any, n_state: int) -> tuple[np.ndarray, float, bool]:
    """Check one ``step`` return value and convert it to (float64 array, float, bool).

    Raises:
        InvalidOutput: saying what is wrong.
    """
    if result is None:
        raise InvalidOutput("step returned None instead of (next_state, reward, done)")
    if not isinstance(result, (tuple, list)):
        raise InvalidOutput(
            f"step returned {type(result).__name__}, expected a tuple (next_state, reward, done)"
        )
    if len(result) != 3:
        raise InvalidOutput(f"step returned {len(result)} values, expected 3 (next_state, reward, done)")
    raw_state, raw_reward, raw_done = result
    if raw_state is None:
        raise InvalidOutput("next_state is None")
    try:
        state = np.asarray(raw_state, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidOutput(f"next_state is not numeric ({type(raw_state).__name__}): {exc}") from None
    if state.size != n_state:
        raise InvalidOutput(f"next_state has {state.size} elements, expected {n_state}")
    if not np.all(np.isfinite(state)):
        raise InvalidOutput("next_state contains NaN or inf")
    if raw_reward is None or isinstance(raw_reward, (str, bytes)):
        raise InvalidOutput(f"reward is {type(raw_reward).__name__}, expected a number")
    try:
        reward_arr = np.asarray(raw_reward, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidOutput(f"reward is {type(raw_reward).__name__}, expected a number") from None
    if reward_arr.size != 1:
        raise InvalidOutput(f"reward has {reward_arr.size} elements, expected a scalar")
    reward = float(reward_arr.reshape(()))
    if not math.isfinite(reward):
        raise InvalidOutput("reward is NaN or inf")
    if isinstance(raw_done, (bool, np.bool_)):
        done = bool(raw_done)
    elif isinstance(raw_done, (int, np.integer)) and int(raw_done) in (0, 1):
        done = bool(raw_done)
    elif isinstance(raw_done, (float, np.floating)) and float(raw_done) in (0.0, 1.0):
        done = bool(raw_done)
    elif isinstance(raw_done, np.ndarray) and raw_done.size == 1 and raw_done.dtype.kind in "biuf":
        value = raw_done.reshape(()).item()
        if value not in (0, 1):
            raise InvalidOutput(f"done is {value!r}, expected a boolean")
        done = bool(value)
    else:
        raise InvalidOutput(f"done is {raw_done!r} ({type(raw_done).__name__}), expected a boolean")
    return state, reward, done


def step_each(step: Callable[[np.ndarray, Any], Any], states: np.ndarray, actions: np.ndarray, *,
              discrete: bool) -> Iterator[tuple[int, tuple[np.ndarray, float, bool] | None, Exception | None]]:
    """Step a Python ``step`` on each transition in order and validate what it returns.

    The one step-then-validate loop of the Python path (scoring, planning, the constant fit).
    ``step`` gets a copy of the state and the action as an int (discrete) or a float64 array.

    Args:
        states: (n, n_state) float64 array.
        actions: (n, n_action) float64 array.

    Yields:
        ``(i, (next_state, reward, done), None)``, or ``(i, None, error)`` for a transition whose
        step raised (a `SystemExit` included) or returned something outside the contract
        (`InvalidOutput`). The caller decides whether to go on. The sandbox's own timeout and
        other interruptions are not caught.
    """
    n_state = states.shape[1]
    for i in range(len(states)):
        action = int(actions[i, 0]) if discrete else actions[i].copy()
        try:
            output = validate_output(step(states[i].copy(), action), n_state)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the candidate's failure, yielded
            yield i, None, exc
        else:
            yield i, output, None
