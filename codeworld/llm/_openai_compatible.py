"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, the
llama.cpp server, Ollama) through the ``openai`` client; ``--llm openai:MODEL``, key and base URL
from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` or the options. The embedded ``local`` backend talks
to its own server through it too."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from codeworld.llm.types import (
    LLMError,
    RawCompletion,
    Sampling,
    TransientLLMError,
    prefill_of,
    prompt_too_long,
    strip_echoed_prefill,
)


@dataclass(frozen=True)
class OpenAIOptions:
    """The ``openai`` backend's settings; each field is a ``--llm-FIELD`` flag (``--llm-base-url``).

    Attributes:
        api_key: the endpoint's key; None reads ``OPENAI_API_KEY``.
        base_url: the endpoint's URL (``.../v1``); None reads ``OPENAI_BASE_URL``, else OpenAI's own.
        timeout_s: seconds one request may take before it counts as timed out (and is retried).
    """

    api_key: str | None = None
    base_url: str | None = None
    timeout_s: float = 600.0


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions endpoint, through the ``openai`` client.

    Args:
        model: the model name sent with each request (``--llm openai:MODEL``).
        options: key, base URL and timeout (None: the defaults of `OpenAIOptions`).
        name: the name recorded in caches and accounting.
        extra_body: fields added to every request body (e.g. for a server's own parameters).
        send_top_k: send ``top_k`` when set (not a field of OpenAI's own API; servers such as
            vLLM and llama.cpp accept it).
    """

    Options = OpenAIOptions
    cacheable = True

    def __init__(self, model: str, options: OpenAIOptions | None = None, *, name: str = "openai",
                 extra_body: dict | None = None, send_top_k: bool = True):
        import openai

        if not model:
            raise ValueError("the openai backend needs a model: --llm openai:MODEL")
        options = options or OpenAIOptions()
        self._openai = openai
        self.name = name
        self.model = model
        self.extra_body = dict(extra_body or {})
        self.send_top_k = send_top_k
        base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = options.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise LLMError("no API key for openai:%s: set OPENAI_API_KEY or pass --llm-api-key "
                               "(or point OPENAI_BASE_URL / --llm-base-url at a server that needs "
                               "none)" % model)
            api_key = "none"  # self-hosted servers usually ignore the key
        # Retries are the client's job (one policy for every backend), so the SDK's are off.
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url,
                                    timeout=options.timeout_s, max_retries=0)

    def request_body(self, messages: list[dict], sampling: Sampling) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this request."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        if sampling.effective_seed is not None:
            kwargs["seed"] = sampling.effective_seed
        extra = dict(self.extra_body)
        if sampling.top_k is not None and self.send_top_k:
            extra["top_k"] = sampling.top_k
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        openai = self._openai
        try:
            response = self.client.chat.completions.create(**self.request_body(messages, sampling))
        except openai.RateLimitError as exc:
            raise TransientLLMError(f"rate limited: {exc}", "rate_limit",
                                    _retry_after(exc)) from exc
        except openai.APITimeoutError as exc:
            raise TransientLLMError(f"request timed out: {exc}", "timeout") from exc
        except openai.APIConnectionError as exc:
            raise TransientLLMError(f"connection failed: {exc}", "connection") from exc
        except openai.InternalServerError as exc:
            raise TransientLLMError(f"server error: {exc}", "server", _retry_after(exc)) from exc
        except openai.APIStatusError as exc:
            too_long = prompt_too_long(exc.status_code, str(exc))
            if too_long is not None:
                raise too_long from exc
            raise LLMError(f"{self.name}:{self.model} rejected the request "
                           f"(HTTP {exc.status_code}): {exc}") from exc
        if not response.choices:
            raise TransientLLMError("the server returned no choices", "server")
        choice = response.choices[0]
        text = strip_echoed_prefill(choice.message.content or "", prefill_of(messages))
        usage = response.usage
        return RawCompletion(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=choice.finish_reason or "stop",
            model=response.model or self.model,
        )

    def close(self) -> None:
        self.client.close()


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
