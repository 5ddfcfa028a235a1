"""Training progress in Prometheus text format, per the library's job-metrics contract
(``fm_constructs.domain.job_metrics``): ``fm_training_*`` families on port 9464 at
``/metrics``. Standard library only, so any training image can run it.
"""

from __future__ import annotations

import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

METRICS_PORT = 9464
STEP_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)


class Progress:
    """This rank's training progress, rendered in Prometheus text format."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps = 0
        self.tokens = 0
        self.loss = math.nan
        self.last_checkpoint = 0.0
        self.step_counts = [0] * (len(STEP_BUCKETS) + 1)
        self.step_sum = 0.0

    def step(self, tokens: int, loss: float, seconds: float) -> None:
        with self.lock:
            self.steps += 1
            self.tokens += tokens
            self.loss = loss
            self.step_sum += seconds
            index = next((i for i, b in enumerate(STEP_BUCKETS) if seconds <= b), -1)
            self.step_counts[index] += 1

    def text(self) -> str:
        with self.lock:
            lines = [
                "# TYPE fm_training_steps_total counter",
                f"fm_training_steps_total {self.steps}",
                "# TYPE fm_training_tokens_total counter",
                f"fm_training_tokens_total {self.tokens}",
                "# TYPE fm_training_loss gauge",
                f"fm_training_loss {self.loss}",
                "# TYPE fm_training_last_checkpoint_timestamp_seconds gauge",
                f"fm_training_last_checkpoint_timestamp_seconds {self.last_checkpoint}",
                "# TYPE fm_training_step_duration_seconds histogram",
            ]
            cumulative = 0
            for bound, count in zip((*STEP_BUCKETS, math.inf), self.step_counts, strict=True):
                cumulative += count
                le = "+Inf" if bound == math.inf else repr(bound)
                lines.append(f'fm_training_step_duration_seconds_bucket{{le="{le}"}} {cumulative}')
            lines += [
                f"fm_training_step_duration_seconds_sum {self.step_sum}",
                f"fm_training_step_duration_seconds_count {cumulative}",
            ]
        return "\n".join(lines) + "\n"


def serve_metrics(
    progress: Progress, port: int = METRICS_PORT, host: str = "0.0.0.0"
) -> ThreadingHTTPServer:
    """Serve /metrics from a daemon thread (local rank 0 only: one port per pod)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = progress.text().encode() if self.path == "/metrics" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    # Every interface: the scraper reaches the pod by its IP.
    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
