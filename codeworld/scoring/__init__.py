"""Scoring world models on replay buffers: the batched sound scorer, the paper's rule, references."""

from codeworld.scoring._report import Reference, ScoreReport
from codeworld.scoring._scorer import (
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

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "ScoreReport",
    "Scorer",
    "Tolerances",
    "score_model",
    "tolerances",
]
