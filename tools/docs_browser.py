"""Drive headless Chromium over the DevTools protocol, as a reader would: click, type, read.

The protocol runs over the pipe Chromium opens with ``--remote-debugging-pipe`` (it reads
commands from file descriptor 3 and writes replies and events to 4, each message JSON ended
by a NUL byte), so no WebSocket client and no port are needed. Used by tools/docs_check.py to
open the built site from ``file://`` with the network blocked: wait for its diagrams, type a
query into its search box, take screenshots and record every request the pages make.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self


def _above_4(descriptor: int) -> int:
    """The same pipe end on a descriptor number above 4 (the original closed)."""
    moved = fcntl.fcntl(descriptor, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(descriptor)
    return moved


class BrowserError(RuntimeError):
    """Chromium closed the pipe, answered with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page; every request the page makes is recorded."""

    def __init__(self, chromium: str, flags: Sequence[str], timeout: float = 30.0) -> None:
        self._deadline = time.monotonic() + timeout
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        #: URL of every request the page started (Network.requestWillBeSent), in order.
        self.requests: list[str] = []
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        # Chromium expects the pipe on descriptors 3 and 4. Its ends are moved above 4 first, so
        # that placing one there cannot overwrite the other; every other descriptor of this
        # process is close-on-exec, so Chromium inherits only these and /dev/null.
        commands_read, replies_write = (_above_4(fd) for fd in (commands_read, replies_write))
        self._pid = os.posix_spawnp(
            chromium,
            [chromium, *flags, "--remote-debugging-pipe", "about:blank"],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, commands_read, 3),
                (os.POSIX_SPAWN_DUP2, replies_write, 4),
            ],
        )
        os.close(commands_read)
        os.close(replies_write)
        try:
            target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
            attached = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})
            self._session = attached["sessionId"]
            self.command("Page.enable")
            self.command("Network.enable")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End Chromium (politely, then for sure) and close the pipe."""
        with contextlib.suppress(OSError):
            os.write(self._commands, json.dumps({"id": 0, "method": "Browser.close"}).encode())
            os.write(self._commands, b"\0")
        until = time.monotonic() + 5
        while os.waitpid(self._pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > until:
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
                break
            time.sleep(0.05)
        for descriptor in (self._commands, self._replies):
            with contextlib.suppress(OSError):
                os.close(descriptor)

    def command(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a command to the page and return its result."""
        return self._send(method, params, session=self._session)

    def open(self, url: str) -> None:
        """Load a URL and wait for its load event."""
        self._events.clear()
        self.command("Page.navigate", {"url": url})
        while not any(event["method"] == "Page.loadEventFired" for event in self._events):
            self._read_message()

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = self.command(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """Click the middle of the first element matching a CSS selector, as a mouse would."""
        point = self.evaluate(
            f"(() => {{ const box = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return [box.x + box.width / 2, box.y + box.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.command(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": point[0], "y": point[1], "button": "left", "clickCount": 1},
            )

    def type(self, text: str) -> None:
        """Type text key by key into the focused element."""
        for character in text:
            self.command(
                "Input.dispatchKeyEvent",
                {"type": "keyDown", "key": character, "text": character},
            )
            self.command("Input.dispatchKeyEvent", {"type": "keyUp", "key": character})

    def screenshot(self, path: Path) -> None:
        """Save what the page shows as a PNG."""
        data = self.command("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def wait_for(self, expression: str, seconds: float) -> Any:
        """Evaluate an expression until it is truthy (its value) or the time is up (the last)."""
        until = time.monotonic() + seconds
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > until:
                return value
            time.sleep(0.1)

    def _send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        try:
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        except OSError as error:
            raise BrowserError(f"Chromium closed its pipe before {method}") from error
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._replies], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        if "method" in message:
            self._events.append(message)
            if message["method"] == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
        return message
