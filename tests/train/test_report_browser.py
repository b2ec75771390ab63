"""The run report rendered by a real browser: headless Chromium (Debian's ``chromium`` package;
CI installs it in .ci/run) loads report.html; every image loads, nothing overflows horizontally,
and the sample completion is shown. Skipped, with the reason, where no Chromium is installed.

The checks run in the page: a copy of the report gets a script that, once everything has loaded,
writes its findings into the DOM, which ``--dump-dom`` prints.
"""

import json
import re
import shutil
import subprocess

import pytest

from scalerl.runlog import RunLogWriter
from scalerl.train.report import write_run_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium)")

PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images].map(i => ({src: i.getAttribute("src"), ok: i.complete && i.naturalWidth > 0,
                                               width: i.naturalWidth}));
  const root = document.documentElement;
  const out = {images: imgs, scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
               text: document.body.innerText};
  const pre = document.createElement("pre");
  pre.id = "scalerl-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _synthetic_run(out):
    """A run directory as the trainer writes it: a run log rising like a sigmoid, and samples."""
    writer = RunLogWriter(out / "runlog.jsonl", {"run": "browser", "recipe": "scalerl", "model": "tiny",
                                                 "task": "arithmetic", "params": 1_000_000,
                                                 "config": {"forecast": {"x": "flops"}}})
    samples = RunLogWriter(out / "samples.jsonl", resume_offset=0)
    for i in range(16):
        flops = 2.6e11 * (1 + 0.12 * i)  # less than a decade: the axis labels minor ticks
        rate = 0.2 + 0.5 / (1 + (4e11 / flops) ** 4)
        writer.append({"type": "eval", "step": 10 * i, "flops": flops, "gpu_hours": 1e-4 * i, "samples": 128 * i,
                       "val/pass_rate": rate, "hard/pass_rate": rate - 0.1})
        samples.append({"step": 10 * i, "version": 10 * i, "set": "val", "problem_id": "18+48", "prompt": "18+48=",
                        "answer": "66", "completion": "<think>8+8+0=16\n1+4+1=5\n</think>66" + " pad" * 60,
                        "reward": 1.0, "passed": True})
    writer.close()
    samples.close()


def test_the_report_renders_in_chromium(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    _synthetic_run(out)
    write_run_report(out, n_boot=50)
    page = (out / "report.html").read_text()
    probe = out / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"))
    profile = tmp_path / "chromium-profile"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--window-size=1024,768", "--virtual-time-budget=5000", "--allow-file-access-from-files", "--dump-dom",
           probe.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="scalerl-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"chromium exit {proc.returncode}: {proc.stderr[-2000:]}"
    result = json.loads(found[1].replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&"))
    assert {i["src"] for i in result["images"]} == {"curve.png", "sets.png"}
    assert all(i["ok"] and i["width"] > 0 for i in result["images"]), result["images"]
    assert result["scrollWidth"] <= result["clientWidth"], "the page overflows horizontally"
    assert "A sample" in result["text"] and "<think>8+8+0=16" in result["text"]
