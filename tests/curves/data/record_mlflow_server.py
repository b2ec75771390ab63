"""Record ``mlflow_server_exchanges.json.gz``: what a real MLflow tracking server answered to the
requests scalerl's reader makes (``scalerl.curves.mlflow_server``), replayed by
``tests/curves/test_framework_logs.py`` so the test needs no MLflow install.

Made with MLflow 3.17.2 serving the SQLite store of ``make_mlflow_stores.py``:

    gunzip -c tests/curves/data/mlflow_sqlite.db.gz > /tmp/mlruns.db
    mlflow server --backend-store-uri sqlite:////tmp/mlruns.db --host 127.0.0.1 --port 5055 &
    python tests/curves/data/record_mlflow_server.py http://127.0.0.1:5055 tests/curves/data

A recording proxy sits between the reader and the server; the reader reads what the tests read
(every run, the UI address of the experiment, the UI address of one run, an unknown metric), and
each exchange is kept: method, path with query, JSON body, status, answer.
"""

import gzip
import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scalerl.curves import read_curves
from scalerl.errors import InputError

VAL = "val-core/openai/gsm8k/reward/mean@1"


def record(upstream: str, out: Path) -> None:
    exchanges = []

    class Proxy(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            request = urllib.request.Request(upstream.rstrip("/") + self.path, data=body, method=self.command,
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request) as r:
                    status, answer = r.status, r.read()
            except urllib.error.HTTPError as exc:
                status, answer = exc.code, exc.read()
            exchanges.append({"method": self.command, "path": self.path,
                              "body": json.loads(body) if body else None, "status": status,
                              "answer": json.loads(answer)})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(answer)

        do_GET = do_POST = _forward

        def log_message(self, *args) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{proxy.server_address[1]}"
    try:
        curves = {c.name: c for c in read_curves(base, "cum:timing_s/step", VAL)}
        read_curves(base + "/#/experiments/1", "step", VAL)
        runs = json.loads(urllib.request.urlopen(urllib.request.Request(
            upstream.rstrip("/") + "/api/2.0/mlflow/runs/search", data=json.dumps({"experiment_ids": ["1"]}).encode(),
            headers={"Content-Type": "application/json"})).read())["runs"]
        b = next(r["info"]["run_id"] for r in runs if r["info"]["run_name"] == "grpo-b")
        read_curves(f"{base}/#/experiments/1/runs/{b}", "step", VAL)
        try:
            read_curves(base, "step", "val/nope")
        except InputError:
            pass
        print(f"{len(exchanges)} exchanges; runs {sorted(curves)}; grpo-b = {b}")
    finally:
        proxy.shutdown()
    with gzip.open(out / "mlflow_server_exchanges.json.gz", "wt") as f:
        json.dump({"mlflow": "3.17.2", "grpo_b_run_id": b, "exchanges": exchanges}, f)


if __name__ == "__main__":
    record(sys.argv[1], Path(sys.argv[2] if len(sys.argv) > 2 else "."))
