"""``scalerl study``: run a family of runs (leave-one-out, recipes, a knob sweep), fit each,
and say which choices moved the ceiling and which only the efficiency -- with a report.

    scalerl study --family loo --steps 400 --eval-every 20 --output runs/study-loo
    scalerl study configs/studies/loo.yaml --output runs/study-loo      # the same, from a spec file
    scalerl study --family batch-size --values 8 16 32 --compute 3e13 --output runs/study-batch
    scalerl study configs/studies/workload-gen-length.yaml --seeds 3 --parallel 2 --threads 1   # 2 runs at once
    scalerl study --output runs/study-loo --resume                       # after a kill: finished runs are skipped
    scalerl study --list                                                 # families and their variants
    scalerl report runs/study-loo                                        # the report again, from the logs alone

Flags override the spec file's fields (``scalerl study --help`` lists them; the spec fields
are documented in scalerl.study.spec). Bad input (unknown family, variant, recipe or key)
exits with status 2 and one line; a run that fails is reported and the others go on (exit 1).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from scalerl.errors import ConfigError, InputError

#: flag dest -> spec field, for flags whose value replaces the spec's.
_FLAGS = {
    "family": "family", "base": "base", "values": "values", "base_value": "base_value", "only": "only",
    "seeds": "seeds", "steps": "steps", "compute": "compute", "max_steps": "max_steps", "eval_every": "eval_every",
    "x": "x", "model": "model", "task": "task", "backend": "backend", "ray_address": "ray_address",
    "parallel": "parallel", "threads": "threads", "rule": "rule", "bootstrap": "bootstrap", "extrapolate": "extrapolate",
    "calibration": "calibration",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", nargs="?", metavar="SPEC.yaml", help="a study spec file (fields: see scalerl.study.spec)")
    p.add_argument("--output", metavar="DIR", help="study directory (default: runs/study-FAMILY)")
    p.add_argument("--resume", action="store_true", help="continue the study in --output with its saved spec")
    p.add_argument("--list", action="store_true", help="list the families and their variants, then exit")
    p.add_argument("--dry-run", action="store_true", help="print the runs (directory, status, change) and exit")
    p.add_argument("--no-report", action="store_true", help="run only; no fits and no report")
    g = p.add_argument_group("what to run (override the spec file)")
    g.add_argument("--family", metavar="NAME", help="loo, recipes, batch-size, generations, gen-length, model-size")
    g.add_argument("--base", metavar="RECIPE", help="recipe the variants are compared with (default: scalerl)")
    g.add_argument("--values", nargs="+", action="extend", metavar="V", help="sweep values (e.g. 8 16 32, or tiny-s tiny tiny-l)")
    g.add_argument("--base-value", metavar="V", help="sweep value that is the baseline (default: the base's own)")
    g.add_argument("--only", nargs="+", action="extend", metavar="VARIANT", help="run only these variants (and the base)")
    g.add_argument("--seeds", type=int, metavar="N", help="seeds per variant (default 1)")
    g.add_argument("--steps", type=int, metavar="N", help="optimizer steps per run (default 400)")
    g.add_argument("--compute", type=float, metavar="X", help="compute budget per run in the --x column")
    g.add_argument("--max-steps", type=int, metavar="N", help="with --compute: step cap per run")
    g.add_argument("--eval-every", type=int, metavar="N", help="evaluate every N steps (default 20)")
    g.add_argument("--x", metavar="COL", help="compute column: flops (default), gpu_hours, tokens, samples, step")
    g.add_argument("--model", metavar="PATH|tiny", help="model every run starts from (default: tiny; tiny-s/m/l: "
                   "the arithmetic-mix ladder)")
    g.add_argument("--task", metavar="NAME", help="task of every run: arithmetic (default), arithmetic-mix, math")
    g.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override for every run, as in scalerl train --set; repeatable")
    g = p.add_argument_group("how to run and compare")
    g.add_argument("--backend", metavar="NAME", help="local (one run after another; default) or ray (in parallel)")
    g.add_argument("--ray-address", metavar="ADDR", help="ray: a running cluster's address (default: start one)")
    g.add_argument("--parallel", type=int, metavar="N", help="at most N runs at once (local: worker processes)")
    g.add_argument("--threads", type=int, metavar="N", help="torch threads per run")
    g.add_argument("--rule", metavar="NAME", help="classification rule: intervals (default) or paper")
    g.add_argument("--bootstrap", type=int, metavar="N", help="bootstrap resamples per interval (default 300)")
    g.add_argument("--extrapolate", type=float, metavar="K", help="predict each variant at K x the budget (default 10)")
    g.add_argument("--calibration", metavar="FILE", help="the report's forecast bands from a file `scalerl calibrate` "
                   "wrote from your own runs (default: the shipped factors)")
    g.add_argument("--no-progress", action="store_true", help="no per-run progress bars")


def _value(text: str):
    import yaml

    from scalerl.config import load_yaml_text

    try:
        v = load_yaml_text(text)  # (a sweep value as a config's: 010 is ten)
    except yaml.YAMLError:
        return text
    return v if isinstance(v, (int, str)) and not isinstance(v, bool) else text


def _changes(args) -> dict:
    changes = {}
    for dest, name in _FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            changes[name] = value
    if "values" in changes:
        changes["values"] = [_value(v) for v in changes["values"]]
    if "base_value" in changes:
        changes["base_value"] = _value(changes["base_value"])
    if args.no_progress:
        changes["progress"] = False
    return changes


def resolve_spec(args):
    """(spec, study directory) from the spec file, the flags and, when continuing, the saved spec."""
    from scalerl.study.spec import SPEC_FILE, StudySpec, load_spec, with_changes

    changes = _changes(args)
    # The directory holding the study to continue: --output's, else (no spec file to name the family) the default
    # one of --family's -- whose saved study the flags change as --output's (review cc: they changed the defaults,
    # and `--family loo --seeds 2` planned 18 runs where `--output runs/study-loo --seeds 2` added a seed).
    default_dir = None if args.output or args.spec else Path(f"runs/study-{args.family or StudySpec().family}")
    saved_path = Path(args.output) / SPEC_FILE if args.output else default_dir / SPEC_FILE if default_dir else None
    saved = _saved(saved_path, spec_file=bool(args.spec))
    if args.resume:
        if args.spec:  # (first: with no --output, "None (no --output) holds no study" was said -- review cd)
            raise InputError("--resume continues the study with its saved spec; drop the spec file")
        if saved is None:
            where = args.output or f"{default_dir} (no --output)"
            raise InputError(f"--resume: {where} holds no study ({SPEC_FILE}); "
                             "give --output DIR of a study, or drop --resume to start one")
        spec = saved
    elif args.spec:
        spec = load_spec(args.spec)  # (its profile pins: the directory's, once that is known -- below)
    elif saved is not None:
        # The directory's own study, the flags changing it (--seeds 2 adds a seed, --steps 800 extends
        # it): starting from the defaults instead planned runs that clash with those on disk.
        spec = saved
    else:
        spec = StudySpec()
    if args.overrides:
        changes["overrides"] = _merged_overrides(spec.overrides, args.overrides)
    # Saved in the study's spec: absolute, so `report` finds it from anywhere -- the flag's, and a
    # spec file's (relative to the working directory, as a train config's paths are).
    calibration = changes.get("calibration") or (spec.calibration if args.spec else None)
    if calibration:
        changes["calibration"] = str(Path(calibration).expanduser().resolve())
    spec = with_changes(spec, changes).validate() if changes else spec.validate()
    directory = Path(args.output or f"runs/study-{spec.family}")
    if saved is None and (directory / SPEC_FILE).exists():  # the default directory may hold a study too
        saved = _saved(directory / SPEC_FILE, spec_file=bool(args.spec))
    if saved is not None and (saved.family, saved.base) != (spec.family, spec.base):
        raise InputError(f"{directory} holds a {saved.family} study of {saved.base}; this is a {spec.family} "
                         f"study of {spec.base} -- use another --output")
    if args.spec and not args.resume:  # (the default directory's saved spec is read above: review et)
        spec = _own_profile_pins(spec, saved, args.spec)
    return spec, directory


def _own_profile_pins(spec, saved, spec_file: str):
    """``spec`` (read from ``spec_file``) with the profile pins of this study directory's saved spec, not the file's.

    A study's ``study.yaml`` used as a spec file for a new study carried ``auto_profile`` -- the profile ``auto``
    chose for its model on the machine that study ran on -- into the new one without a word (review EP): on
    another device the new study planned with the old machine's profile. A spec file is a plan; the pins are a
    study's record, so the new study chooses again, and a note names each pin left behind."""
    from dataclasses import replace

    own = dict(saved.auto_profile) if saved is not None else {}
    for model, profile in spec.auto_profile.items():
        if own.get(model) != profile:
            mine = f"keeps its own ({own[model]})" if model in own else "chooses its own"
            print(f"note: {spec_file} holds the profile another study chose for {model} ({profile}); this study "
                  f"{mine} (`--set profile={profile}` takes that one)", file=sys.stderr)
    return replace(spec, auto_profile=own)


def _merged_overrides(saved: list[str], given: list[str]) -> list[str]:
    """The saved ``KEY=VALUE`` overrides with ``given`` after them, a saved one dropped where ``given`` sets its field
    again: the same command run again gives the same spec (review cc: every rerun appended its --set values again).
    Keys compare as the config field they name (``k`` is ``recipe.off_policy.k``); one that names none is checked
    where the spec is validated, and compared as written here. A mapping (``task.settings={digits: 3}``) merges
    with the earlier ones as ``train --set`` merges them, so a saved one goes only where given again as it was;
    ``given`` itself is kept whole (two mappings given together both count, as in train: review cd)."""
    from scalerl.config import resolve_key
    from scalerl.train.config import TrainConfig

    def key(item: str) -> str:
        raw = item.partition("=")[0].strip()
        try:
            return resolve_key(TrainConfig, raw)
        except (ConfigError, ValueError, KeyError):
            return raw

    def mapping(item: str) -> bool:
        return item.partition("=")[2].lstrip().startswith("{")

    kept = [o for o in saved if o not in given and not any(key(o) == key(g) and not mapping(g) for g in given)]
    return kept + list(given)


def _saved(path: Path | None, *, spec_file: bool):
    """The study directory's saved spec, or None when there is none -- or when it was lost (an empty
    study.yaml) and a spec file is given to restore it (its runs are still checked against the plan)."""
    from scalerl.study.spec import LostSpec, load_saved_spec

    if path is None or not path.exists():
        return None
    try:
        return load_saved_spec(path)
    except LostSpec:
        if spec_file:
            return None
        raise


def _list(spec) -> int:
    from scalerl.study.families import FAMILIES, family_variants
    from scalerl.study.plan import base_config

    base = base_config(spec)
    for name, fam in FAMILIES.items():
        print(f"{name}: {fam.summary}")
        try:
            variants = family_variants(_with_family(spec, name), base)
        except ConfigError as exc:
            print(f"    (not available with base {spec.base!r} / model {spec.model!r}: {exc})")
            continue
        width = max(len(v.label) for v in variants)
        for v in variants:
            print(f"    {v.label:<{width}}  {'(base) ' if v.is_base else ''}{v.summary}")
    return 0


def _with_family(spec, family: str):
    from scalerl.study.spec import with_changes

    return with_changes(spec, {"family": family, "values": [], "base_value": None, "only": []})


def _dry_run(spec, directory: Path) -> int:
    from scalerl.study.plan import Budget, plan_study
    from scalerl.study.run_state import check_existing, failed_runs, run_status
    from scalerl.study.runner import check_study_output

    check_study_output(directory)
    plans = plan_study(spec, directory)
    budget = Budget.of(spec)
    check_existing(plans, budget)
    failed = failed_runs(directory)
    for p in plans:
        change = "(base)" if p.variant.is_base else ", ".join(p.variant.overrides) or p.variant.summary
        status = run_status(p.directory, budget)
        # (A run whose last attempt failed was shown "partial", as one stopped by a kill.)
        status = "failed" if status in ("new", "partial") and (p.directory.parent.name, p.seed) in failed else status
        print(f"{status:<8} {p.directory}  {p.config.recipe_name}  {change}")
    what = f"{spec.compute:g} {spec.x}" if spec.compute else f"{spec.steps} steps"
    print(f"{len(plans)} runs ({len(plans) // spec.seeds} variants x {spec.seeds} seed(s)), {what} each, "
          f"evaluation every {spec.eval_every} steps")
    return 0


def run(args) -> int:
    spec, directory = resolve_spec(args)
    if args.list:
        return _list(spec)
    if args.dry_run:
        return _dry_run(spec, directory)
    from scalerl.study.plan import Budget, plan_study
    from scalerl.study.run_state import check_existing
    from scalerl.study.runner import check_study_output, hold_study_directory

    check_study_output(directory)  # before the line that announces the study
    plans = plan_study(spec, directory)  # every config resolved and checked before the first line is printed
    check_existing(plans, Budget.of(spec))  # and the runs on disk (run_study checks again, for API callers)
    # Held before the announcement (a second study refused printed "scalerl study: ... output DIR" above its
    # refusal, as if it had started) and through the report.
    held = hold_study_directory(directory)
    try:
        return _run_and_report(args, spec, directory, held)
    finally:
        held.release()


def _run_and_report(args, spec, directory: Path, held) -> int:
    """The study's runs, then its report, in ``directory`` (held: :func:`~scalerl.study.runner.hold_study_directory`)."""
    from scalerl.study.runner import run_study

    what = f"{spec.compute:g} {spec.x}" if spec.compute else f"{spec.steps} steps"
    print(f"scalerl study: {spec.family} of {spec.base}, {spec.seeds} seed(s), {what} per run, backend "
          f"{spec.backend}; output {directory}", file=sys.stderr)
    try:
        result = run_study(spec, directory, held=held)
    except KeyboardInterrupt as exc:  # the run's own message would name the run, not the study
        from scalerl.errors import RunInterrupted

        raise RunInterrupted(f"interrupted; resume with: scalerl study --output {shlex.quote(str(directory))} --resume",
                             cause=exc) from None
    counts = {s: sum(o.status in s.split("/") for o in result.outcomes) for s in ("trained/resumed", "skipped", "failed")}
    failed = f", {counts['failed']} failed" if counts["failed"] else ""
    print(f"runs finished in {result.seconds / 60:.1f} min, {result.cpu_seconds / 60:.1f} CPU-min "
          f"({counts['trained/resumed']} trained or resumed, {counts['skipped']} already done{failed})", file=sys.stderr)
    if not args.no_report:
        from scalerl.commands.report import report_files
        from scalerl.study.report import print_summary, write_study_report

        with report_files(directory):  # the runs are kept; `scalerl report DIR` writes it later
            report = write_study_report(directory)
        print_summary(report)
    for o in result.failed:
        print(f"scalerl study: run {o.label}/seed{o.seed} failed: {o.error}", file=sys.stderr)
    return 1 if result.failed else 0
