"""A small OpenAI-compatible chat-completions server on loopback, for the tests and the benchmark.

It answers `POST <base>/chat/completions` deterministically: the answer is a function of the request
(by default "ANSWER:" and the last user message's hash, or what `answer` returns), after `latency_s`.
Faults are injected per request by `faults`, a list consumed in order (one per request; an empty list
answers normally), or by `fault_for(body)`, which picks one from the request: each is a name from
FAULTS. It binds 127.0.0.1 only and never contacts anything.

    with FakeServer(latency_s=0.2) as server:
        server.base_url  # "http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = (
    "ok",
    "429",  # Too Many Requests with Retry-After: retry_after_s
    "500",
    "503",
    "400",
    "timeout",  # answers after timeout_s (past the client's timeout)
    "malformed",  # 200 with a body that is not JSON
    "truncated",  # 200 promising more bytes than it sends, then closes
    "empty",  # an answer with empty content
    "refusal",  # an answer with message.refusal set and no content
    "close",  # closes the connection without answering
    "huge",  # a very long answer (huge_chars characters)
)


def default_answer(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    last = str(messages[-1].get("content", ""))
    return "ANSWER:" + hashlib.sha256(last.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (the timeout fault) is no news


class FakeServer:
    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        answer: Callable[[dict[str, Any]], str] = default_answer,
        faults: list[str] | None = None,
        fault_for: Callable[[dict[str, Any]], str] | None = None,
        retry_after_s: float = 0.05,
        timeout_s: float = 2.0,
        huge_chars: int = 3_000_000,
        model_name: str = "fake-model-1",
        port: int = 0,
    ) -> None:
        self.bind_port = port
        self.latency_s, self.answer, self.retry_after_s = latency_s, answer, retry_after_s
        self.faults = list(faults or [])
        self.fault_for = fault_for
        self.timeout_s, self.huge_chars, self.model_name = timeout_s, huge_chars, model_name
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []  # the Authorization header of every request, in order
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    # ------------------------------------------------------------------ life

    def start(self) -> FakeServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # headers and body in one send (no Nagle / delayed-ACK stall between them)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                server._handle(self)

        self._httpd = _Server(("127.0.0.1", self.bind_port), Handler)
        self.bind_port = int(self._httpd.server_address[1])  # the same port after a restart
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering (a server that died): new connections are refused."""
        self._stopped.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self.bind_port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ answering

    def _next_fault(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.requests.append(body)
            if self.faults:
                return self.faults.pop(0)
        return self.fault_for(body) if self.fault_for is not None else "ok"

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict[str, str]) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        with self.lock:
            self.authorizations.append(handler.headers.get("Authorization") or "")
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(handler, 400, b'{"error": {"message": "not JSON"}}', {})
            return
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            self._send(handler, 404, b'{"error": {"message": "no such route"}}', {})
            return
        fault = self._next_fault(body)
        if self.latency_s:
            time.sleep(self.latency_s)
        if fault == "429":
            error = b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
            self._send(handler, 429, error, {"Retry-After": f"{self.retry_after_s:g}"})
        elif fault in ("500", "503", "400"):
            self._send(handler, int(fault), b'{"error": {"message": "server fault"}}', {})
        elif fault == "timeout":
            self._stopped.wait(self.timeout_s)
            self._send(handler, 200, json.dumps(self._completion(body, "late")).encode(), {})
        elif fault == "malformed":
            self._send(handler, 200, b'{"id": "x", "choices": [ not json', {})
        elif fault == "truncated":
            payload = json.dumps(self._completion(body, default_answer(body))).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload) + 100))
            handler.end_headers()
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            handler.close_connection = True
        elif fault == "close":
            handler.close_connection = True
            handler.connection.close()
        elif fault == "empty":
            self._send(handler, 200, json.dumps(self._completion(body, "")).encode(), {})
        elif fault == "refusal":
            completion = self._completion(body, None)
            completion["choices"][0]["message"]["refusal"] = "I can't help with that."
            self._send(handler, 200, json.dumps(completion).encode(), {})
        elif fault == "huge":
            self._send(handler, 200, json.dumps(self._completion(body, "x" * self.huge_chars)).encode(), {})
        else:
            self._send(handler, 200, json.dumps(self._completion(body, self.answer(body))).encode(), {})

    def _completion(self, body: dict[str, Any], content: str | None) -> dict[str, Any]:
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
        completion = len((content or "").split())
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
        return {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model_name,
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


def main() -> None:
    """python -m generation.fakeserver --port P [--latency S]: serve until interrupted (the benchmark)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds before each answer.")
    args = parser.parse_args()
    server = FakeServer(latency_s=args.latency, port=args.port).start()
    print(server.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
