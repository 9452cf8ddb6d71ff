"""The ``hf`` backend: a Hugging Face ``transformers`` causal LM for local GPU models
(``--llm hf:MODEL``), with assistant prefill continued by ``continue_final_message``.
``transformers`` and ``torch`` are imported only when the backend is built."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from codeworld.llm.types import BackendNotInstalledError, RawCompletion, Sampling, prefill_of


@dataclass(frozen=True)
class HFOptions:
    """The ``hf`` backend's settings; each field is a ``--llm-FIELD`` flag (``--llm-device``).

    Attributes:
        device: torch device of the model (``cuda``, ``cpu``); None picks CUDA when available.
        dtype: torch dtype name of the weights (``bfloat16``, ``float32``, ``auto``).
    """

    device: str | None = None
    dtype: str = "auto"


class HFBackend:
    """A Hugging Face ``transformers`` causal LM, for local GPU models.

    ``transformers`` and ``torch`` are imported only when this backend is built. A conversation
    ending with an assistant message is continued with ``continue_final_message``, so the
    model writes on from the prefill instead of starting a new turn.

    Args:
        model: a model id or local directory ``from_pretrained`` accepts.
        options: device and dtype (None: the defaults of `HFOptions`).
        tokenizer, lm: ready objects to use instead of loading ``model`` (for tests and reuse).
    """

    name = "hf"
    Options = HFOptions
    cacheable = True

    def __init__(self, model: str, options: HFOptions | None = None, *, tokenizer: Any = None,
                 lm: Any = None):
        if not model:
            raise ValueError("the hf backend needs a model: --llm hf:MODEL")
        try:
            import torch
            if tokenizer is None or lm is None:
                import transformers
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the hf backend needs transformers and torch ({exc.name} is missing): "
                "pip install 'codeworld[hf]' torch") from exc
        self._torch = torch
        self.model = model
        if tokenizer is None or lm is None:
            options = options or HFOptions()
            device = options.device or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype = options.dtype if options.dtype == "auto" else getattr(torch, options.dtype)
            tokenizer = transformers.AutoTokenizer.from_pretrained(model)
            lm = transformers.AutoModelForCausalLM.from_pretrained(model, torch_dtype=dtype)
            lm = lm.to(device)
            lm.eval()
        self.tokenizer = tokenizer
        self.lm = lm
        self._lock = threading.Lock()

    def prompt_ids(self, messages: list[dict]):
        """Token ids of the conversation: a new assistant turn, or the prefill continued."""
        prefill = bool(prefill_of(messages))
        return self.tokenizer.apply_chat_template(
            messages,
            add_generation_prompt=not prefill,
            continue_final_message=prefill,
            return_tensors="pt",
        )

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        torch = self._torch
        ids = self.prompt_ids(messages)
        if hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        ids = ids.to(self.lm.device)
        kwargs: dict[str, Any] = {"max_new_tokens": sampling.max_tokens}
        if sampling.temperature > 0:
            kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p)
            if sampling.top_k is not None:
                kwargs["top_k"] = sampling.top_k
        else:
            kwargs.update(do_sample=False)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=self.tokenizer)
        pad = getattr(self.tokenizer, "pad_token_id", None)
        if pad is None:
            pad = getattr(self.tokenizer, "eos_token_id", None)
        if pad is not None:
            kwargs["pad_token_id"] = pad
        with self._lock, torch.no_grad():
            if sampling.effective_seed is not None:
                torch.manual_seed(sampling.effective_seed)
            output = self.lm.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        new_ids = output[0, ids.shape[-1]:]
        text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        finish = "length" if len(new_ids) >= sampling.max_tokens else "stop"
        for stop in sampling.stop:
            cut = text.find(stop)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        return RawCompletion(text=text, prompt_tokens=int(ids.shape[-1]),
                             completion_tokens=int(len(new_ids)), finish_reason=finish,
                             model=self.model)

    def close(self) -> None:
        self.lm = None
