"""A small chat client for any OpenAI-compatible endpoint, with every answer cached on disk.

Configuration comes from the environment (read once, by `plbench.config.BuildConfig.from_env`), so
the same code talks to a hosted API or a local server (vLLM, llama.cpp, Ollama ...):

- `PLBENCH_LLM_BASE_URL`: the endpoint, e.g. `http://127.0.0.1:8000/v1`;
- `PLBENCH_LLM_MODEL`: the model name the endpoint serves;
- `PLBENCH_LLM_API_KEY`, else `OPENAI_API_KEY`, else a dummy key (local servers ignore it).

Without a base URL or a model, `not_configured(env)` gives the reason, which callers record as
`not_run` instead of failing.

Each request is cached under `<cache_dir>/<h[:2]>/<h>.json`, `h` being the sha256 of the
canonical JSON of the request (model, messages, sampling settings; not the URL or the key, so
moving the same model to another host does not invalidate the answers). A rebuild therefore
makes no new calls, and the cache files are written to a temporary file and renamed, so an
interrupted run never leaves a half-written answer that a later run would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DUMMY_KEY = "not-needed"  # accepted by local OpenAI-compatible servers that check nothing


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str = DUMMY_KEY
    temperature: float = 0.0  # deterministic-as-possible answers: the cache key includes it anyway
    max_tokens: int | None = 2048
    timeout_s: float = 120.0

    @property
    def provenance(self) -> str:
        """What a release says of the model it asked: never the key, nor where it is served."""
        return f"{self.model} (temperature {self.temperature}, max_tokens {self.max_tokens})"

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides) -> LLMSettings:
        """Settings from the environment; raises ValueError with the reason when not configured."""
        reason = not_configured(env)
        if reason:
            raise ValueError(reason)
        key = env.get("PLBENCH_LLM_API_KEY") or env.get("OPENAI_API_KEY") or DUMMY_KEY
        return cls(env["PLBENCH_LLM_BASE_URL"], env["PLBENCH_LLM_MODEL"], key, **overrides)


def not_configured(env: Mapping[str, str]) -> str | None:
    """Why no endpoint is configured (recorded as `not_run`), or None when one is."""
    missing = [name for name in ("PLBENCH_LLM_BASE_URL", "PLBENCH_LLM_MODEL") if not env.get(name)]
    if missing:
        return f"{' and '.join(missing)} not set: no OpenAI-compatible endpoint configured"
    return None


def request_key(request: dict) -> str:
    """sha256 of the request's canonical JSON: equal requests share one cached answer."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def unicode_text(text: str) -> str:
    """`text` with each lone surrogate, which a JSON `\\u` escape in a reply can spell but no UTF-8 can, as
    U+FFFD, what a UTF-8 decoder makes of ill-formed bytes: the answer can then be cached and sent to an engine."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LLMClient:
    """Chat completions through the `openai` package, answered from the disk cache when possible."""

    def __init__(self, settings: LLMSettings, cache_dir: Path):
        self.settings = settings
        self.cache_dir = Path(cache_dir)
        self.calls = 0  # requests actually sent to the endpoint
        self.cache_hits = 0
        self._client = None  # created on the first uncached request only
        self._lock = threading.Lock()  # stages that build databases side by side share one client

    def request(self, messages: list[dict]) -> dict:
        """The request body whose hash keys the cache."""
        body = {"model": self.settings.model, "messages": messages, "temperature": self.settings.temperature}
        if self.settings.max_tokens is not None:
            body["max_tokens"] = self.settings.max_tokens
        return body

    def cache_path(self, request: dict) -> Path:
        key = request_key(request)
        return self.cache_dir / key[:2] / f"{key}.json"

    def complete(self, messages: list[dict]) -> str:
        """The assistant's answer to `messages`: from the cache, else from the endpoint (then cached)."""
        request = self.request(messages)
        path = self.cache_path(request)
        if path.exists():
            with self._lock:
                self.cache_hits += 1
            return json.loads(path.read_text(encoding="utf-8"))["content"]
        response = self._openai().chat.completions.create(**request)
        with self._lock:
            self.calls += 1
        content = unicode_text(response.choices[0].message.content or "")
        record = {"request": request, "content": content, "response": response.model_dump(mode="json")}
        _write_atomically(path, unicode_text(json.dumps(record, sort_keys=True, ensure_ascii=False, indent=1)))
        return content

    def _openai(self):
        with self._lock:
            return self._client or self._connect()

    def _connect(self):
        import openai

        self._client = openai.OpenAI(
            base_url=self.settings.base_url,
            api_key=self.settings.api_key,
            timeout=self.settings.timeout_s,
            max_retries=2,
        )
        return self._client
