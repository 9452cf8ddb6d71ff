"""The frozen configuration of constant fitting."""

from __future__ import annotations

from dataclasses import dataclass

METHODS = ("least_squares", "nelder-mead", "powell")


@dataclass(frozen=True)
class FitConfig:
    """How a program's constants are fitted to a buffer.

    Attributes:
        method: the optimizer (all from `scipy.optimize`, none needs derivatives of the program):
            ``least_squares`` (trust-region least squares on the per-transition residuals, its
            Jacobian by finite differences; fast and precise on smooth dynamics), ``nelder-mead``
            or ``powell`` (direct search on the summed squared error).
        max_evaluations: the most evaluations of the program over the training split.
        max_seconds: wall-clock cap of the optimizer loop in the worker; the best point so far is
            kept when it is reached.
        heldout_fraction: the share of episodes held out (every k-th episode, interleaved); with
            a single episode, the share of its transitions at the end.
        max_constants: fit at most this many literals (the first in source order).
        min_improvement: the held-out score must rise by more than this for the fit to be kept.
    """

    method: str = "least_squares"
    max_evaluations: int = 2000
    max_seconds: float = 60.0
    heldout_fraction: float = 0.3
    max_constants: int = 64
    min_improvement: float = 1e-9

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown fit method {self.method!r} (use one of {', '.join(METHODS)})")
        if not 0.0 < self.heldout_fraction < 1.0:
            raise ValueError("heldout_fraction must be between 0 and 1")
        if self.max_evaluations < 1 or self.max_seconds <= 0 or self.max_constants < 1:
            raise ValueError("max_evaluations, max_seconds and max_constants must be positive")
