"""A small OpenAI-compatible chat server on 127.0.0.1 with recorded answers, for the tests of every LLM path.

`answer(body)` gives the reply to one request body: the message text, an HTTP status (an error reply), or
None (no reply within the client's timeout). Every request is kept, with its path and Authorization header.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[dict], "str | int | None"]
HANG_SECONDS = 2  # longer than the clients' timeouts in the tests


class ChatStub(ThreadingHTTPServer):
    def __init__(self, answer: Answer):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.requests: list[dict] = []  # {"path", "auth", "body"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def _completion(model: str, content: str) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        answer = self.server.answer(body)
        if answer is None:
            time.sleep(HANG_SECONDS)
            return
        if isinstance(answer, int):
            return self._send(answer, {"error": {"message": "internal error"}})
        self._send(200, _completion(body["model"], answer))

    def _send(self, status: int, reply: dict) -> None:
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextmanager
def running(answer: Answer) -> Iterator[ChatStub]:
    server = ChatStub(answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
