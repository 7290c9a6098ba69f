"""One chat-completions call to an OpenAI-compatible endpoint, with its provenance.

Any server that speaks the OpenAI chat-completions protocol works (vLLM, llama.cpp's server, Ollama,
TGI, hosted APIs); the call goes through the official `openai` client with its own retries off:
`chat_complete` retries 429, 5xx, timeouts, dropped connections and unreadable answers itself, a
bounded number of times, waiting the server's Retry-After (capped) or an exponential backoff, and
records every attempt. What comes back is an `Answer`: a status (`ok`, `empty`, `refusal`, `failed`),
the text, and the provenance that says how the text was made: the endpoint without credentials, the
model as the server named it, every request parameter, the response id, its created time, the finish
reason, the token counts and the latency.

The API key is an argument (the job reads it from the settings); it is never part of the provenance.
Nothing here touches Django or the database.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import openai

from editlab.refusals import Refusal

OK = "ok"
EMPTY = "empty"
REFUSAL = "refusal"
FAILED = "failed"

_SCHEMES = ("http", "https")
_URL_MAX = 2000


class EndpointRefused(Refusal):
    code = "endpoint_refused"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to try again: `attempts` calls at most; between two, the server's
    Retry-After (at most `retry_after_max_s`) or `backoff_s` doubled each time (at most `backoff_max_s`)."""

    attempts: int = 5
    backoff_s: float = 0.5
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 60.0

    def wait_s(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.retry_after_max_s))
        return min(self.backoff_s * 2 ** (attempt - 1), self.backoff_max_s)


@dataclass(frozen=True)
class ChatRequest:
    """Every parameter of one call (all of them go into the provenance)."""

    model: str
    messages: Sequence[dict[str, str]]
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    timeout_s: float = 60.0

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "timeout_s": self.timeout_s,
        }


@dataclass
class Answer:
    status: str
    text: str = ""
    error: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)


def endpoint_check(url: object) -> str:
    """The endpoint's base URL, stripped of a trailing slash; refused (EndpointRefused, naming it) unless
    it is an http or https URL with a host and without credentials, query or fragment."""
    if not isinstance(url, str) or not url.strip():
        raise EndpointRefused("the endpoint URL is empty; give the server's base URL, e.g. http://127.0.0.1:8000/v1")
    url = url.strip()
    shown = url if len(url) <= 200 else url[:200] + "…"
    if len(url) > _URL_MAX:
        raise EndpointRefused(f"the endpoint URL {shown!r} is longer than {_URL_MAX} characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise EndpointRefused(f"the endpoint URL {shown!r} is not a URL: {exc}") from None
    if parts.scheme.lower() not in _SCHEMES:
        raise EndpointRefused(
            f"the endpoint URL {endpoint_shown(url)!r} has the scheme {parts.scheme or 'none'!r}; "
            "only http and https are allowed"
        )
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise EndpointRefused(
            f"the endpoint URL {endpoint_shown(url)!r} holds credentials; put the key in EDITLAB_LLM_API_KEY, "
            "never in the URL"
        )
    if not parts.hostname:
        raise EndpointRefused(f"the endpoint URL {shown!r} has no host")
    if parts.query or parts.fragment:
        raise EndpointRefused(f"the endpoint URL {endpoint_shown(url)!r} has a query or fragment; give the base URL")
    if any(ord(c) < 33 for c in url):
        raise EndpointRefused(f"the endpoint URL {shown!r} holds spaces or control characters")
    return url.rstrip("/")


def endpoint_shown(url: str) -> str:
    """The URL with any user or password replaced by `***` (for messages and provenance)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not a URL)"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def make_client(base_url: str, *, api_key: str = "", timeout_s: float = 60.0) -> openai.OpenAI:
    """The official client for one endpoint, with its retries off (chat_complete retries)."""
    return openai.OpenAI(
        base_url=endpoint_check(base_url),
        api_key=api_key or "none",  # local servers need no key, and the client insists on one
        max_retries=0,
        timeout=timeout_s,
    )


def _retry_after(response: Any) -> float | None:
    if response is None:
        return None
    value = response.headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, IndexError):
        return None


def _retryable(exc: Exception) -> tuple[bool, float | None, str]:
    """Whether a failed call is worth another try, the server's Retry-After, and what went wrong."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = f"HTTP {status}: {str(exc)[:300]}"
        return (status == 429 or status == 408 or status >= 500), _retry_after(exc.response), text
    if isinstance(exc, openai.APITimeoutError):
        return True, None, "timeout: the server did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return True, None, f"connection failed: {exc.__cause__ or exc}"
    if isinstance(exc, (json.JSONDecodeError, openai.APIResponseValidationError, ValueError, KeyError, TypeError)):
        return True, None, f"unreadable answer: {type(exc).__name__}: {str(exc)[:300]}"
    return False, None, f"{type(exc).__name__}: {str(exc)[:300]}"


def _usage(response: Any) -> dict[str, int | None]:
    usage = getattr(response, "usage", None)
    return {
        "prompt_tokens": getattr(usage, "prompt_tokens", None),
        "completion_tokens": getattr(usage, "completion_tokens", None),
        "total_tokens": getattr(usage, "total_tokens", None),
    }


def chat_complete(
    client: openai.OpenAI,
    request: ChatRequest,
    *,
    retry: RetryPolicy = RetryPolicy(),
    sleep: Callable[[float], None] = time.sleep,
) -> Answer:
    """One chat completion, tried up to `retry.attempts` times; never raises for what the server does."""
    provenance: dict[str, Any] = {
        "endpoint": endpoint_shown(str(client.base_url)).rstrip("/"),
        "requested_model": request.model,
        "params": request.params(),
    }
    attempts: list[dict[str, Any]] = []
    started = time.monotonic()
    for attempt in range(1, max(1, retry.attempts) + 1):
        t0 = time.monotonic()
        try:
            response = client.chat.completions.create(
                model=request.model,
                messages=list(request.messages),  # type: ignore[arg-type]
                temperature=request.temperature if request.temperature is not None else openai.omit,
                max_tokens=request.max_tokens if request.max_tokens is not None else openai.omit,
                seed=request.seed if request.seed is not None else openai.omit,
                timeout=request.timeout_s,
            )
            if not response.choices:
                raise ValueError("the answer has no choices")
            choice = response.choices[0]
            message = choice.message
        except Exception as exc:  # noqa: BLE001 - every failure of the server is recorded, none escapes
            again, retry_after, error = _retryable(exc)
            entry: dict[str, Any] = {"error": error, "latency_ms": round((time.monotonic() - t0) * 1000, 1)}
            if retry_after is not None:
                entry["retry_after_s"] = retry_after
            attempts.append(entry)
            if not again or attempt >= retry.attempts:
                provenance |= {
                    "attempts": attempts,
                    "latency_ms": round((time.monotonic() - started) * 1000, 1),
                }
                return Answer(status=FAILED, error=error, provenance=provenance)
            sleep(retry.wait_s(attempt, retry_after))
            continue
        latency_ms = round((time.monotonic() - t0) * 1000, 1)
        attempts.append({"latency_ms": latency_ms})
        text = message.content or ""
        refusal = getattr(message, "refusal", None) or ""
        provenance |= {
            "model": response.model,
            "response_id": response.id,
            "created": response.created,
            "finish_reason": choice.finish_reason,
            "system_fingerprint": getattr(response, "system_fingerprint", None),
            "usage": _usage(response),
            "latency_ms": latency_ms,
            "attempts": attempts,
        }
        if refusal or choice.finish_reason == "content_filter":
            provenance["refusal"] = refusal or "finish_reason content_filter"
            return Answer(status=REFUSAL, text="", error=f"the model refused: {refusal[:300]}", provenance=provenance)
        if not text.strip():
            return Answer(status=EMPTY, text="", error="the model's answer is empty", provenance=provenance)
        return Answer(status=OK, text=text, provenance=provenance)
    raise AssertionError("unreachable")  # pragma: no cover
