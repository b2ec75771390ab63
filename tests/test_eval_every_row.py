"""``scalerl eval --data FILE`` evaluates every row of FILE, past --problems' default of 200, as the README,
--data's help and docs/tasks.md say (review w: 200 of 250 rows, unsaid); --problems still caps it."""

import argparse
import json

from scalerl.commands.evaluate import _chosen_settings, _eval_problems, _eval_task, add_arguments


def _eval_args(argv):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(argv)


def test_eval_data_file_evaluates_every_row_past_200(tmp_path):
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"question": f"Compute {i} + 7.", "answer": str(i + 7)}) + "\n"
                            for i in range(250)))
    # README: scalerl eval --model ./any-model --task math --data test.jsonl --set 'task.settings={prompt_field: question}'
    args = _eval_args(["--model", "tiny", "--task", "math", "--data", str(data),
                       "--set", "task.settings={prompt_field: question}", "--max-new-tokens", "8"])
    pick, base, _ = _chosen_settings(args)
    task = _eval_task(args, pick, base)
    try:
        assert len(task.eval_sets()["val"]) == 250  # the file is read whole ...
        problems = _eval_problems(task, pick, args)
    finally:
        task.close()
    assert len(problems["val"]) == 250  # ... and evaluated whole (it stopped at 200, unsaid)


def test_problems_still_caps_the_data_file(tmp_path):
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"question": f"Compute {i} + 7.", "answer": str(i + 7)}) + "\n"
                            for i in range(250)))
    args = _eval_args(["--model", "tiny", "--task", "math", "--data", str(data), "--problems", "30",
                       "--set", "task.settings={prompt_field: question}", "--max-new-tokens", "8"])
    pick, base, _ = _chosen_settings(args)
    task = _eval_task(args, pick, base)
    try:
        problems = _eval_problems(task, pick, args)
    finally:
        task.close()
    assert len(problems["val"]) == 30
