"""Program synthesis of code world models: GIF-MCTS, WorldCoder's REx, zero-shot.

The searches are pure state machines (`GifMcts`, `Rex`, `ZeroShot`) that propose LLM requests and
take back outcomes; `synthesize` drives one against an LLM, a prompt builder and an evaluator, and
saves a resumable `RunDir`, whose ``run.json`` is a `RunSpec`. Methods are looked up by name in
`METHODS`.
"""

from codeworld.synthesis.config import AssistConfig, SamplingConfig
from codeworld.synthesis.gif_mcts import GifMcts, GifMctsConfig
from codeworld.synthesis.registry import METHODS, Method, get_method, register_method
from codeworld.synthesis.rex import Rex, RexConfig, ZeroShot, ZeroShotConfig
from codeworld.synthesis.run_dir import RunDir
from codeworld.synthesis.run_spec import RunSpec, RunStatus
from codeworld.synthesis.runner import RunDivergedError, SearchAccounting, SynthesisResult, synthesize
from codeworld.synthesis.types import (
    FIX,
    GENERATE,
    IMPROVE,
    Evaluator,
    Outcome,
    ProgramEvaluation,
    PromptBuilder,
    Request,
)

__all__ = [
    "FIX",
    "GENERATE",
    "IMPROVE",
    "METHODS",
    "AssistConfig",
    "Evaluator",
    "GifMcts",
    "GifMctsConfig",
    "Method",
    "Outcome",
    "ProgramEvaluation",
    "PromptBuilder",
    "Request",
    "Rex",
    "RexConfig",
    "RunDir",
    "RunDivergedError",
    "RunSpec",
    "RunStatus",
    "SamplingConfig",
    "SearchAccounting",
    "SynthesisResult",
    "ZeroShot",
    "ZeroShotConfig",
    "get_method",
    "register_method",
    "synthesize",
]
