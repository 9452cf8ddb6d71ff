"""Scoring world models on replay buffers: the batched sound scorer, the paper's rule, references."""

from codeworld.scoring.report import Reference, ScoreReport
from codeworld.scoring.scorer import (
    MODES,
    PAPER,
    SOUND,
    Predictions,
    Scorer,
    Tolerances,
    ceiling_predictions,
    compare_predictions,
    floor_predictions,
    score_model,
    tolerances,
)

__all__ = [
    "MODES",
    "PAPER",
    "SOUND",
    "Predictions",
    "Reference",
    "ScoreReport",
    "Scorer",
    "Tolerances",
    "ceiling_predictions",
    "compare_predictions",
    "floor_predictions",
    "score_model",
    "tolerances",
]
