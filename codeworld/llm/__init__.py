"""The LLM layer: one interface to every model, with retries, a completion cache and accounting.

``make_llm(spec)`` builds a client from a spec string: ``local`` (the embedded
Qwen2.5-Coder-1.5B-Instruct, the default: no key, no network), ``openai:MODEL`` (any
OpenAI-compatible endpoint), ``hf:MODEL`` (Hugging Face ``transformers``), ``scripted:FILE``
(replays completions) or ``MODULE:FACTORY`` (a backend of your own); each backend is one module
with its own settings, named in the registry `codeworld.llm.backends`.
``client.complete(messages, **sampling)`` returns a `Completion`. Commands take the same choices
as flags (`add_llm_arguments`, `llm_from_args`). Prompts are template files filled by `render`;
programs are taken from completions by `extract_code`.
"""

from codeworld.llm._arguments import add_llm_arguments, llm_from_args
from codeworld.llm.backends import register_backend
from codeworld.llm._client import LLMClient, LLMConfig, RetryPolicy, make_llm
from codeworld.llm._extract import CodeExtractionError, extract_code, extract_program
from codeworld.llm._prompts import format_value, render
from codeworld.llm.types import (
    BackendNotInstalledError,
    Completion,
    LLMError,
    LLMUnavailableError,
    RawCompletion,
    Sampling,
    TransientLLMError,
)

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "Completion",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "Sampling",
    "extract_code",
    "make_llm",
    "register_backend",
]
