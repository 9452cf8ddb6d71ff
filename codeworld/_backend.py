"""The one place that chooses between the C++ kernels (`codeworld._core`) and the Numba fallback.

`CODEWORLD_BACKEND=numba` forces the fallback; `CODEWORLD_BACKEND=cpp` requires the extension and
fails loudly if it is missing. Unset, the extension is used when it imports.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Callable, TypeVar

Kernel = TypeVar("Kernel", bound=Callable)

_ENV_VAR = "CODEWORLD_BACKEND"
_CHOICES = ("cpp", "numba")


def _import_core() -> tuple[ModuleType | None, str | None]:
    try:
        from codeworld import _core  # type: ignore[attr-defined]
    except ImportError as exc:  # the extension was not built (no compiler, or disabled)
        return None, str(exc)
    return _core, None


_core_module, _core_import_error = _import_core()


def core_available() -> bool:
    """True when the C++ extension `codeworld._core` was built and imports."""
    return _core_module is not None


def backend() -> str:
    """The kernel backend in use: ``"cpp"`` or ``"numba"``.

    Raises:
        RuntimeError: if ``CODEWORLD_BACKEND`` names an unknown backend, or asks for ``cpp`` when
            the extension is not available.
    """
    wanted = os.environ.get(_ENV_VAR, "").strip().lower()
    if wanted and wanted not in _CHOICES:
        raise RuntimeError(f"{_ENV_VAR}={wanted!r} is not one of {', '.join(_CHOICES)}")
    if wanted == "numba":
        return "numba"
    if _core_module is None:
        if wanted == "cpp":
            raise RuntimeError(
                f"{_ENV_VAR}=cpp but the C++ extension codeworld._core is missing "
                f"({_core_import_error}); reinstall with a C++17 compiler available"
            )
        return "numba"
    return "cpp"


def core() -> ModuleType:
    """The C++ extension module. Raises RuntimeError when it is not available."""
    if _core_module is None:
        raise RuntimeError(f"codeworld._core is not available: {_core_import_error}")
    return _core_module


def select(*, cpp: Kernel, numba: Kernel) -> Kernel:
    """The implementation of a kernel for the backend in use: the one switch every kernel goes
    through (both implementations take the same arguments and return the same results)."""
    return cpp if backend() == "cpp" else numba
