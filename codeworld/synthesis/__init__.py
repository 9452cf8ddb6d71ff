"""Program synthesis of code world models: GIF-MCTS, WorldCoder's REx, zero-shot.

The searches are pure state machines (`GifMcts`, `Rex`, `ZeroShot`) that propose LLM requests and
take back outcomes; a `Run` owns one run (started or resumed from its `RunSpec`, the ``run.json`` of
its `RunDir`) and drives its search against a `World` (prompts, evaluator, finish step) with
`synthesize`. Methods are looked up by name in
`METHODS`.
"""

from codeworld.synthesis.config import AssistConfig, SamplingConfig
from codeworld.synthesis._gif_mcts import GifMcts, GifMctsConfig
from codeworld.synthesis.registry import METHODS, Method, get_method, register_method
from codeworld.synthesis._rex import Rex, RexConfig, ZeroShot, ZeroShotConfig
from codeworld.synthesis.run import Run
from codeworld.synthesis._run_dir import RunDir
from codeworld.synthesis._run_spec import RunSpec, RunStatus
from codeworld.synthesis._runner import RunDivergedError, SearchAccounting, SynthesisResult, synthesize
from codeworld.synthesis.types import (
    FIX,
    GENERATE,
    IMPROVE,
    Evaluator,
    Outcome,
    ProgramEvaluation,
    PromptBuilder,
    Request,
    World,
)

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "GifMcts",
    "GifMctsConfig",
    "Method",
    "Rex",
    "RexConfig",
    "Run",
    "RunDir",
    "RunSpec",
    "RunStatus",
    "SynthesisResult",
    "ZeroShot",
    "ZeroShotConfig",
    "register_method",
    "synthesize",
]
