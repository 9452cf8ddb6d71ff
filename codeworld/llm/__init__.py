"""The LLM layer: one interface to every model, with retries, a completion cache and accounting.

``make_llm(spec)`` builds a client from a spec string: ``local`` (the embedded
Qwen2.5-Coder-1.5B-Instruct, the default: no key, no network), ``openai:MODEL`` (any
OpenAI-compatible endpoint), ``hf:MODEL`` (Hugging Face ``transformers``) or ``scripted:FILE``
(replays completions); each backend is one module, named in the registry `codeworld.llm.backends`. ``client.complete(messages, **sampling)`` returns a `Completion`.
Prompts are template files filled by `render`; programs are taken from completions by
`extract_code`.
"""

from codeworld.llm.accounting import LLMAccounting
from codeworld.llm.backends import backend_names, make_backend, register_backend
from codeworld.llm.client import LLMClient, LLMConfig, RetryPolicy, add_llm_arguments, llm_from_args, make_llm
from codeworld.llm.extract import CodeExtractionError, ExtractedCode, defines_world_model, extract_code, extract_program
from codeworld.llm.hf import HFBackend
from codeworld.llm.openai_compatible import OpenAIBackend
from codeworld.llm.prompts import PROMPT_NAMES, PromptError, fill, format_transitions, format_value, parse_prediction, render
from codeworld.llm.scripted import ScriptedBackend, ScriptExhaustedError
from codeworld.llm.types import (
    Backend,
    BackendNotInstalledError,
    BackendOptions,
    Completion,
    LLMError,
    LLMUnavailableError,
    RawCompletion,
    Sampling,
    TransientLLMError,
)

__all__ = [
    "PROMPT_NAMES",
    "Backend",
    "BackendNotInstalledError",
    "BackendOptions",
    "CodeExtractionError",
    "Completion",
    "ExtractedCode",
    "HFBackend",
    "LLMAccounting",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "LLMUnavailableError",
    "OpenAIBackend",
    "PromptError",
    "RawCompletion",
    "RetryPolicy",
    "Sampling",
    "ScriptExhaustedError",
    "ScriptedBackend",
    "TransientLLMError",
    "add_llm_arguments",
    "backend_names",
    "defines_world_model",
    "extract_code",
    "extract_program",
    "fill",
    "format_transitions",
    "format_value",
    "llm_from_args",
    "make_backend",
    "make_llm",
    "parse_prediction",
    "register_backend",
    "render",
]
