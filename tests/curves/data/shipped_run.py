"""What the fixture scripts that replay a real run through another trainer's output format share:
the run (``examples/data/real_rl_curves.csv``'s verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538)
in the step numbering most trainers use, and the check that the messages they print are the
trainer's own (each literal piece found in its source)."""

import csv
import sys
from pathlib import Path

RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
ROOT = Path(__file__).resolve().parents[3]


def points() -> list[tuple[int, float, float]]:
    """(step, hours, score) of the run: verl's evaluation after step 9 at step 10 (the evaluation
    after N steps at N), the one before training at 0."""
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return [(int(r["step"]) + 1, float(r["cum_wall_hours"]), float(r["val_score"])) for r in rows]


def check_literals(checkout: Path, literals: dict[str, list[str]], trainer: str) -> None:
    """Exit unless every literal is in its file (a path relative to ``checkout``)."""
    missing = [s for rel, wanted in literals.items() for s in wanted if s not in (checkout / rel).read_text()]
    if missing:
        sys.exit(f"not in this {trainer} checkout's source: {missing}")
