"""Write ``areal_console.log.gz``, the AReaL console fixture of tests/curves/test_areal_log.py, as
AReaL's ``StatsLogger.commit`` (areal/utils/stats_logger.py) prints it: a colourised
``Epoch e/E Step s/S Train step g+1/T done.`` line, ``Stats (1/1):``, then the stats as
``tabulate_stats`` (areal/utils/printing.py, copied below) formats them -- tabulate's ``fancy_grid``,
four key / value pairs a row, floats as ``.4e`` -- behind AReaL's log format
(areal/utils/logging.py: ``(AReaL) %(asctime)s.%(msecs)03d %(name)s %(levelname)s: %(message)s``,
date ``%Y%m%d-%H:%M:%S``). AReaL's trackers (W&B, SwanLab, TensorBoard, Trackio) get the same dict at
step ``g`` (0-based ``global_step``).

40 training steps; an evaluation (``eval-rollout/reward``, ``timeperf/eval``) after every 5th
(``evaluator.freq_steps=5``): at global steps 4, 9, ..., 39; the reward is a rising sigmoid of the
step, ``round(0.2 + 0.5 / (1 + exp(-(g - 20) / 8)), 4)``.

    pip install tabulate
    python make_areal_console.py OUT_DIR
"""

import gzip
import math
import sys
from pathlib import Path

from tabulate import tabulate

STEPS, FREQ = 40, 5
HEADER = "\033[1;38;2;180;140;80m(AReaL)\033[0m "  # areal/utils/logging.py: AREAL_HEADER
INFO = "\033[37m"  # colorlog's colour of the StatsLogger's INFO lines (any colour: removed on reading)
RESET = "\033[0m"


def tabulate_stats(data, col=4, floatfmt=".4e"):  # areal/utils/printing.py
    items = list(data.items())
    row_count = (len(items) + col - 1) // col
    column_major = []
    for i in range(row_count):
        row = []
        for j in range(col):
            index = i + j * row_count
            if index < len(items):
                row.extend(items[index])
        column_major.append(row)
    return tabulate(column_major, floatfmt=floatfmt, tablefmt="fancy_grid")


def reward(g: int) -> float:
    return round(0.2 + 0.5 / (1 + math.exp(-(g - 20) / 8)), 4)


def main(out: Path) -> None:
    lines = []
    for g in range(STEPS):
        now = f"20251120-10:{g // 60:02d}:{g % 60:02d}.{(37 * g) % 1000:03d}"
        log = f"{HEADER}{INFO}{now} StatsLogger INFO: "
        lines.append(f"{log}Epoch 1/1 Step {g + 1}/{STEPS} Train step {g + 1}/{STEPS} done.{RESET}")
        stats = {"ppo_actor/update/actor_loss/avg": (-1) ** g * 0.01 * (g % 7), "ppo_actor/task_reward/avg": 0.3 + g / 200,
                 "rollout/reward": 0.3 + g / 200, "ppo_actor/n_tokens": 123456.0 + g,
                 "timeperf/rollout": 20.5, "timeperf/train_step": 11.25, "timeperf/update_weights": 1.5}
        if (g + 1) % FREQ == 0:
            stats |= {"timeperf/eval": 30.0, "eval-rollout/reward": reward(g)}
        lines.append(f"{log}Stats (1/1):{RESET}")
        lines.append(f"{log}\n{tabulate_stats(dict(sorted(stats.items())))}{RESET}")
    with gzip.open(out / "areal_console.log.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
