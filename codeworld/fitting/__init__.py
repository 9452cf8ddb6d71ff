"""Constant fitting: a program's numeric literals fitted to a replay buffer (structure from the
LLM, numbers from the data). Used by synthesis and by ``codeworld fit``; never imports synthesis."""

from codeworld.fitting.config import FitConfig
from codeworld.fitting.fit import FitResult, fit_constants, split_buffer
from codeworld.fitting.literals import Literal, find_literals, parametrize, rewrite_literals

__all__ = [
    "FitConfig",
    "FitResult",
    "Literal",
    "find_literals",
    "fit_constants",
    "parametrize",
    "rewrite_literals",
    "split_buffer",
]
