"""Read runs from an MLflow tracking *server* (``http(s)://host:port``) through its REST API.

    scalerl fit http://mlflow.internal:5000 --run grpo-a --x step --y val-core/openai/gsm8k/reward/mean@1
    scalerl fit 'http://mlflow.internal:5000/#/experiments/3' ...       # the UI's address: that experiment only
    scalerl fit 'http://mlflow.internal:5000/#/experiments/3/runs/9f1c...' ...   # one run

Three documented endpoints (``experiments/search``, ``runs/search``, ``metrics/get-history``, MLflow
REST API 2.0), paged; only the metrics ``--x``/``--y`` need are fetched. Authentication as MLflow's
own client takes it from the environment: ``MLFLOW_TRACKING_TOKEN`` (a bearer token, e.g.
Databricks) or ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` (basic auth). No MLflow
install is needed. The values come back as the store's own records, which :mod:`mlflow_log`
turns into rows exactly as it does for a database or a file store.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Collection

from scalerl.errors import InputError

API = "api/2.0/mlflow/"
RUN_NAME_TAG = "mlflow.runName"
PAGE = 1000  # runs per page (the API's documented maximum for runs/search is 50,000)
HISTORY_PAGE = 25000  # metric values per page of get-history
TIMEOUT = 30.0
#: The UI's address of an experiment or a run: ``#/experiments/<id>`` or ``#/experiments/<id>/runs/<id>``.
UI_FRAGMENT = re.compile(r"/?experiments/([^/]+)(?:/runs/([0-9a-f]+))?")

# One metric value: (run id, run name, lifecycle stage, key, value, step, timestamp in ms).
Record = tuple[str, str, str, str, float, int, int]


def is_server(source: object) -> bool:
    return isinstance(source, str) and source.startswith(("http://", "https://"))


class Server:
    """A tracking server at ``url`` (its UI address restricts it to one experiment or run)."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.url = url
        self.base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))
        match = UI_FRAGMENT.fullmatch(parts.fragment) if parts.fragment else None
        if parts.fragment and not match:
            raise InputError(f"{url}: the part after '#' is not an MLflow UI address (#/experiments/ID or "
                             "#/experiments/ID/runs/RUN_ID)")
        self.experiment, self.run = (match.group(1), match.group(2)) if match else (None, None)
        self._runs: list[dict[str, Any]] | None = None

    def _call(self, endpoint: str, *, body: dict | None = None, query: dict | None = None) -> dict[str, Any]:
        target = urllib.parse.urljoin(self.base, API + endpoint)
        if query:
            target += "?" + urllib.parse.urlencode(query)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif user is not None and password is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(target, data=data, headers=headers, method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return json.loads(response.read().decode("utf-8") or "{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", errors="replace")[:200].strip()
            hint = " (set MLFLOW_TRACKING_TOKEN, or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD)" \
                if exc.code in (401, 403) else ""
            raise InputError(f"{self.url}: the MLflow server answered {exc.code} {exc.reason} to {endpoint}{hint}: "
                             f"{detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise InputError(f"{self.url}: cannot reach the MLflow server ({reason})") from None
        except ValueError:
            raise InputError(f"{self.url}: the answer to {endpoint} is not JSON -- is this an MLflow tracking "
                             "server?") from None

    def runs(self) -> list[dict[str, Any]]:
        """Every run (deleted ones too: the caller says it left them out), of the experiment or run the
        address names, else of every experiment."""
        if self._runs is None:
            if self.run:
                runs = [self._call("runs/get", query={"run_id": self.run})["run"]]
            else:
                ids = [self.experiment] if self.experiment else self._experiment_ids()
                runs, token = [], None
                while True:
                    body = {"experiment_ids": ids, "max_results": PAGE, "run_view_type": "ALL",
                            **({"page_token": token} if token else {})}
                    page = self._call("runs/search", body=body)
                    runs += page.get("runs", [])
                    token = page.get("next_page_token")
                    if not token:
                        break
            self._runs = runs
        return self._runs

    def _experiment_ids(self) -> list[str]:
        ids, token = [], None
        while True:
            page = self._call("experiments/search", body={"max_results": PAGE, **({"page_token": token} if token else {})})
            ids += [e["experiment_id"] for e in page.get("experiments", []) if e.get("lifecycle_stage") != "deleted"]
            token = page.get("next_page_token")
            if not token:
                return ids

    def metric_keys(self) -> set[str]:
        """Every metric the runs hold (from each run's latest values: no history read)."""
        return {m["key"] for r in self.runs() for m in r.get("data", {}).get("metrics", [])}

    def records(self, keys: Collection[str]) -> list[Record]:
        out: list[Record] = []
        for r in self.runs():
            info, data = r["info"], r.get("data", {})
            rid = info["run_id"]
            tags = {t["key"]: t.get("value", "") for t in data.get("tags", [])}
            name = info.get("run_name") or tags.get(RUN_NAME_TAG) or rid[:8]
            stage = info.get("lifecycle_stage", "active")
            held = {m["key"] for m in data.get("metrics", [])}
            for key in sorted(set(keys) & held):
                out += [(rid, name, stage, key, _number(m.get("value")), int(m.get("step", 0) or 0),
                         int(m.get("timestamp", 0) or 0)) for m in self._history(rid, key)]
        return out

    def _history(self, run_id: str, key: str) -> list[dict[str, Any]]:
        values, token = [], None
        while True:
            query = {"run_id": run_id, "metric_key": key, "max_results": HISTORY_PAGE, **({"page_token": token} if token else {})}
            page = self._call("metrics/get-history", query=query)
            values += page.get("metrics", [])
            token = page.get("next_page_token")
            if not token:
                return values


def _number(value: Any) -> float:
    """A metric value as the API writes it: a number, or ``"NaN"`` / ``"Infinity"`` as text."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
