"""What the README and docs/ claim, against the code, a benchmark's own output, or the measured figure files
they cite (review de: each was untrue; tests/test_docs_references.py checks the names and paths they give)."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

def _flat(text: str) -> str:
    return " ".join(text.split())

def test_excursion_false_alarm_counts_are_what_the_benchmark_prints(capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        excursions = importlib.import_module("excursions")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    excursions.false_alarms([4, 4.5, 5])
    printed = [int(n) for n in re.findall(r"threshold [\d.]+: (\d+) evaluations left out", capsys.readouterr().out)]
    assert len(printed) == 3

    readme = _flat(README.read_text())
    m = re.search(r"\(45,600 evaluations\) it leaves out (\d+) / (\d+) / \*\*(\d+)\*\* at thresholds 4 / 4\.5", readme)
    assert m, "README's sentence on benchmarks/excursions.py moved"
    forecasting = (DOCS / "forecasting.md").read_text()
    row = re.search(r"\(45,600 evaluations\): evaluations left out \| (\d+) \| (\d+) \| \*\*(\d+)\*\* \|", forecasting)
    assert row, "forecasting.md's table of the excursion thresholds moved"
    assert [int(g) for g in m.groups()] == printed, (m.groups(), printed)
    assert [int(g) for g in row.groups()] == printed, (row.groups(), printed)

def test_decoding_in_pieces_is_not_promised_the_same_greedy_tokens_in_bf16():
    measured = []
    for figures in sorted((ROOT / "benchmarks" / "figures").glob("gpu_check_*.txt")):
        for same, rows in re.findall(r"decode bf16: rows with the same greedy tokens whole and in pieces: (\d+) of (\d+)",
                                     figures.read_text()):
            measured.append((int(same), int(rows)))
    assert measured and any(same < rows for same, rows in measured)  # bf16 pieces differ, measured on GPUs

    readme = _flat(README.read_text())
    bullet = re.search(r"\*\*Generation a few rows at a time.*?\(tested; docs/models\.md\)\.", readme)
    assert bullet, "README's bullet on the decode loop in pieces moved"
    models = _flat((DOCS / "models.md").read_text())
    pieces = re.search(r"The pieces run one after the other through one random stream \(.*?\)", models)
    assert pieces, "models.md's sentence on the pieces moved"
    # A claim of the same greedy tokens must say it holds in fp32, not in bf16.
    for claim in (bullet[0], pieces[0]):
        if "greedy" in claim:
            assert "bf16" in claim or "fp32" in claim, claim

def test_the_study_spec_block_lists_every_field_a_study_file_sets(tmp_path):
    import dataclasses

    from scalerl.study.spec import StudySpec, load_spec

    text = (DOCS / "study.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "Every field a study file can set" in b)
    shown = set(yaml.safe_load(block))
    settable = {f.name for f in dataclasses.fields(StudySpec)}
    # Each is a key a study file sets (the loader is strict: an unknown key is refused).
    spec = tmp_path / "s.yaml"
    spec.write_text("family: batch-size\nvalues: [8, 16]\nbase_value: 16\ncompute: 1.0e+12\nmax_steps: 900\n"
                    "ray_address: null\nprogress: false\n")
    loaded = load_spec(spec)
    assert (loaded.base_value, loaded.max_steps, loaded.progress) == (16, 900, False)
    assert settable - shown == set(), sorted(settable - shown)

def test_make_bench_forecast_runs_the_forecasting_benchmarks_the_readme_lists():
    text = README.read_text()
    start = text.index("### Forecasting")
    section = text[start:text.index("\n### ", start + 1)]
    assert "`make bench-forecast` runs all" in section
    listed = set(re.findall(r"`python (benchmarks/\w+\.py)", section))
    make = re.sub(r"\\\n\s*", " ", (ROOT / "Makefile").read_text())
    recipe = re.search(r"^bench-forecast:.*\n((?:\t.*\n)+)", make, re.M)[1]
    run = set(re.findall(r"(benchmarks/\w+\.py)", recipe))
    assert len(listed) >= 6 and run
    assert listed <= run, sorted(listed - run)

def test_the_forecast_only_install_can_read_the_log_formats_the_docs_give_it():
    """forecasting.md said zstd logs are read through pyarrow, "installed with scalerl"; pyarrow came only with the
    train extra (torch), and the error for a .zst said to install scalerl[train]."""
    from scalerl.cli import EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(re.match(r"pyarrow\b", dep) for dep in extras["logs"])
    assert EXTRAS["pyarrow"] == "logs"
    forecasting = _flat((DOCS / "forecasting.md").read_text())
    assert "zstd through pyarrow's codec: `pip install 'scalerl[logs]'`" in forecasting
