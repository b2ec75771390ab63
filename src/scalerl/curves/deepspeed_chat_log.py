"""Read the console of DeepSpeed-Chat's RLHF stage (``DeepSpeedExamples/applications/DeepSpeed-Chat``,
``training/step3_rlhf_finetuning/main.py``). After each step's PPO epochs it prints::

    epoch: 0|step: 259|ppo_ep: 1|act_loss: 0.0253753662109375|cri_loss: 0.2144775390625|unsuper_loss: 0.0
    average reward score: 0.20556640625
    -------------------------------------------------------------------------------------

(before mid-2023 without ``unsuper_loss``, and with the spaces of a continued string before
``act_loss``: ``ppo_ep: 1|                        act_loss: 0.1 |cri_loss: 0.2``). Since August 2023 it
prints its lines in words (review do: such a console was not read at all)::

    Epoch: 0 | Step: 259 | PPO Epoch: 1 | Actor Loss: 0.0253 | Critic Loss: 0.2144 | Unsupervised Loss: 0.0
    Average reward score: 0.2055 | EMA reward score: 0.1871

(some copies with ``samples: N`` after the step), read under the same names (``ema_reward_score``,
``samples`` beside them). Each step line
and the reward line after it make a row: ``epoch``, ``step``, ``ppo_ep``, ``act_loss``, ``cri_loss``,
``unsuper_loss`` and ``average_reward_score`` (the reward model's mean score of the step's
generations: the curve to read). ``step`` counts the prompt batches of an epoch and starts again at
0 in the next; ``global_step`` goes on across epochs (the steps of the epochs before, as the log
shows them, added). A step printed again (the oldest script printed after every PPO epoch) keeps
its last line. The rest of the console (DeepSpeed's own logging, tqdm bars, colours) is passed over;
a step line cut off is skipped and counted. A console that a training started over printed into is
a run of its own (``<stem>#2``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import split_attempts
from scalerl.curves.console import shown_lines, skipped_lines_note, text_head
from scalerl.curves.rows import read_from_rows

GLOBAL_STEP = "global_step"
REWARD = "average_reward_score"
#: The step line's start, anywhere in the line (after a launcher's prefix); the older lines and the newer.
_STEP_LINE = re.compile(r"(?i)epoch:\s*(\d+)\s*\|\s*step:\s*(\d+)\s*\|(.*)$")
#: One ``name: value`` item of the step line (the newer lines' names hold spaces: ``Actor Loss``).
_ITEM = re.compile(r"^\s*([A-Za-z_][\w ]*?):\s*(\S+)\s*$")
#: The newer lines' names, as the older lines write them.
_NAMES = {"PPO Epoch": "ppo_ep", "Actor Loss": "act_loss", "Critic Loss": "cri_loss", "Unsupervised Loss": "unsuper_loss"}
#: What tells a step line from the rest of the console: its PPO epoch, in either spelling.
_PPO_EPOCH = re.compile(r"\|\s*(?:ppo_ep|PPO Epoch):")
#: The reward line (the newer one goes on with ``| EMA reward score: E``; a fork's with ``, ema reward score: E``).
_REWARD_LINE = re.compile(r"(?i)average reward score:\s*([^\s|,]+)(?:\s*[|,]\s*EMA reward score:\s*([^\s|,]+))?")
EMA_REWARD = "ema_reward_score"
#: How much of a file's start is searched for a step line.
SNIFF_CHARS = 1_000_000


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _step_row(line: str) -> dict[str, Any] | None:
    """The row of a step line; None where it is cut off or not one."""
    found = _STEP_LINE.search(line)
    if found is None:
        return None
    row: dict[str, Any] = {"epoch": int(found.group(1)), "step": int(found.group(2))}
    for part in found.group(3).split("|"):
        item = _ITEM.match(part)
        value = _number(item.group(2)) if item else None
        if value is None:
            return None
        row[_NAMES.get(item.group(1), item.group(1))] = value
    return row if "act_loss" in row else None


def looks_like_deepspeed_chat(path: Path) -> bool:
    """Whether the start of ``path`` holds a DeepSpeed-Chat step line."""
    head = text_head(path, SNIFF_CHARS)
    if head is None or _PPO_EPOCH.search(head) is None:
        return False
    return any(_step_row(line) is not None for line in head.splitlines() if _PPO_EPOCH.search(line))


def read_deepspeed_chat_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per step, in log order, and the notes."""
    rows: list[dict[str, Any]] = []
    torn: list[int] = []
    offset, epoch, last_step = 0, None, -1
    for lineno, line in shown_lines(path):
        if _PPO_EPOCH.search(line):
            row = _step_row(line)
            if row is None:
                torn.append(lineno)
                continue
            if epoch is not None and row["epoch"] < epoch:  # started over
                offset, last_step = 0, -1
            elif epoch is not None and row["epoch"] > epoch:  # the next epoch: its steps count from 0 again
                offset += last_step + 1
            epoch, last_step = row["epoch"], row["step"]
            row[GLOBAL_STEP] = offset + row["step"]
            if rows and rows[-1]["epoch"] == row["epoch"] and rows[-1]["step"] == row["step"]:
                rows[-1] = row  # printed again after a later PPO epoch: the step's last line
            else:
                rows.append(row)
        elif rows and REWARD not in rows[-1] and (found := _REWARD_LINE.search(line)):
            value = _number(found.group(1))
            if value is None:
                torn.append(lineno)
            else:
                rows[-1][REWARD] = value
                if found.group(2) is not None and (ema := _number(found.group(2))) is not None:
                    rows[-1][EMA_REWARD] = ema
    notes = skipped_lines_note(torn, "step or reward")
    rows, more = split_attempts(rows, GLOBAL_STEP, path.stem)
    return rows, notes + more


read_deepspeed_chat = read_from_rows(read_deepspeed_chat_rows)
