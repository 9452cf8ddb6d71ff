"""Constant fitting: a program's numeric literals fitted to a replay buffer (structure from the
LLM, numbers from the data); and symbolic regression of one quantity from a table of inputs, for
the rules a sparse linear fit misses (`regress_component`). Used by synthesis, the worlds and by
``codeworld fit``; never imports synthesis."""

from codeworld.fitting._config import FitConfig
from codeworld.fitting._fit import FitResult, fit_constants, heldout_rows, split_buffer
from codeworld.fitting._literals import Literal, find_literals, parametrize, rewrite_literals
from codeworld.fitting._regression import Expression, RegressionConfig, regress_component

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "FitConfig",
    "FitResult",
    "fit_constants",
]
