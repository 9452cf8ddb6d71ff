"""Training policies inside a code world model (stable-baselines3, the ``train`` extra).

`train_policy` trains a policy on a model as a vectorized environment, with none of the real
environment's steps, and evaluates it on the real environment; `ALGORITHMS` names the algorithms
it offers. The adapters to stable-baselines3 live in `codeworld.training._sb3`.
"""

from codeworld.training._algorithms import ALGORITHMS, INSTALL_HINT, Algorithm, algorithm_kwargs
from codeworld.training._train import ModelFailedError, TrainResult, evaluate_policy_on_real_env, train_policy

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "ModelFailedError",
    "TrainResult",
    "train_policy",
]
