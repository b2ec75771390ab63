def small_args(output, *extra):
    """A few-step run of the real tiny model: small batches and evaluations, no progress bar."""
    return [
        "train", "--model", "tiny", "--output", str(output), "--no-progress", "--steps", "4", "--eval-every", "2",
        "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
        "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2", "--set", "forecast.min_points=3",
        "--set", "forecast.bootstrap=20", *extra,
    ]
