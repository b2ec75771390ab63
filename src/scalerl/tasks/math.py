"""Math task over a ``{prompt, answer}`` dataset, rewarded with math-verify (as in the paper).

    task = MathTask(data="train.jsonl", eval_data={"aime": "aime24.jsonl"})

The data: training rows, evaluation sets (named files, or a held-out share of the training rows,
disjoint by prompt). The grading is :mod:`scalerl.tasks.math_grading` (math-verify on the text after
the last ``</think>``), the start's check of the references :mod:`scalerl.tasks.math_references`. The
chat template is applied at encoding time (:func:`scalerl.tasks.encoding.encode_prompt`), not here;
where it opens the model's thinking itself (the prompt ends in ``<think>``), the completion is read
as continuing it (:func:`scalerl.tasks.encoding.graded_texts`).

math-verify's time limits use ``signal.alarm``, which works only in the main thread. Elsewhere (the
default pipeline scores its batches in generator threads) a call is sent to a worker process, where
math-verify runs on its main thread with its own limits, and the process is killed if a call
outlives ``verify_timeout`` anyway: an answer such as ``99999999!`` makes sympy compute in C,
holding the GIL, where no alarm can stop it and no thread can be killed. Such a call scores -1, as
a wrong answer, and is counted (``reward_timeouts``) -- so is one math-verify's own limits stopped,
in the worker or on the main thread (:class:`~scalerl.tasks.math_grading.VerifyTimeout`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

from scalerl.errors import InputError
from scalerl.tasks.base import Problem
from scalerl.tasks.data_files import SplitNotFound
from scalerl.tasks.datasets import (FieldAdvice, Row, answer_conflicts, flow_mapping, load_rows, prompt_key, repeated_rows,
                                    settings_flag)
from scalerl.tasks.math_grading import on_main_thread, scored_here
from scalerl.tasks.math_references import reference_notes
from scalerl.tasks.rewards import MAX_TIMEOUT, MAX_WORKERS, RewardStats, RewardWorkers

log = logging.getLogger(__name__)

#: Guards the lazy start of a task's math-verify worker process (generator threads race to it).
_VERIFIER_LOCK = threading.Lock()

#: The keys of an ``eval_data`` set given as a mapping (a file with fields of its own).
_EVAL_KEYS = ("data", "prompt_field", "answer_field", "split")


def _held_out(prompt: str, fraction: float, salt: str) -> bool:
    h = hashlib.blake2b(f"{salt}:{prompt}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") < fraction * 2**64


def _warn_repeats(name: str, problems: list[Problem]) -> None:
    """Warn of an evaluation set holding a problem more than once: its mean weighs that problem
    twice, and a later run on the de-duplicated set is not comparable (the held-out val set holds
    every copy of a prompt the training data repeats)."""
    count, first = repeated_rows(problems)
    if first is not None:
        log.warning("evaluation set %r: %d problem(s) repeat an earlier one, prompt and answer (the first: rows "
                    "%d and %d): each copy counts in its pass rate; drop the copies for a plain mean", name, count,
                    first[0].meta["row"], first[1].meta["row"])


@dataclass(frozen=True)
class MathTask:
    """Problems from a data file; evaluation sets from other files or a held-out share of it."""

    data: str
    """Training data: a .jsonl / .json / .csv / .tsv / .parquet / .arrow file, a saved HF dataset
    directory, a directory of a hub dataset's files (shards), or a hub dataset id (``--data`` sets it)."""
    eval_data: dict[str, str | dict[str, str]] | str = field(default_factory=dict)
    """Named evaluation files, e.g. ``{"val": "val.jsonl", "aime": "aime24.jsonl"}`` (same formats as
    ``data``); a single file means the ``val`` set. Prompts in them are removed from training. A set
    whose file has other fields than the training data's is a mapping: ``{"aime": {"data":
    "aime24.parquet", "prompt_field": "Problem", "answer_field": "Answer", "split": "train"}}``
    (``prompt_field``, ``answer_field``, ``split``: each the training data's where not given)."""
    val_fraction: float = 0.05
    """When ``eval_data`` has no ``val``: share of the training rows held out as ``val`` (by a
    hash of the prompt, so identical prompts land on the same side)."""
    max_val: int = 1000
    """Cap on the held-out ``val`` set (the paper validates on 1,000 prompts); a training run holds out at most its
    ``eval.problems``, the ones it evaluates (``scalerl.train.config.held_out_capped``): the held-out rows past
    the cap train."""
    prompt_field: str = "prompt"
    """Field (column) holding the prompt, e.g. ``problem`` or ``question``: text, or a conversation (a
    list of ``{role, content}`` messages ending with a user turn: verl's ``prompt`` column, TRL's
    conversational format); a dotted path reaches into nested objects."""
    answer_field: str = "answer"
    """Field (column) holding the reference answer, e.g. ``solution``, or verl's
    ``reward_model.ground_truth`` (a dotted path into nested objects); math-verify compares to it."""
    split: str = "train"
    """Split to read from a dataset with several (or the key of a JSON document's rows, where it has several)."""
    eval_split: str | None = None
    """Split to read from the ``eval_data`` datasets that have several -- a saved ``DatasetDict``'s
    ``test`` beside training on its ``train`` (the same directory in ``data`` and ``eval_data``);
    None: ``split``."""
    evaluate_only: bool = False
    """``data`` is an evaluation set, every row of it (``scalerl eval --data FILE``): its ``val`` set,
    no share held out, no training problems. Not for training."""
    split_salt: str = "scalerl-math-v1"
    """Key of the hash that holds out ``val`` rows; change it only to get a different held-out set."""
    verify_timeout: float = 15.0
    """Seconds one math-verify call off the main thread may take in its worker process before the
    process is killed and the call scores -1 (math-verify's own bounds there are 5 s to parse and
    5 s to verify; this catches what they cannot stop)."""
    verify_workers: int = 1
    """Worker processes that score math-verify calls in parallel, a batch at a time. With 1, calls
    on the main thread run in this process, others in one worker; with more, every batch goes to
    the workers -- worth it where cores are free: a call is ~0.5 ms, its round trip to a worker
    ~0.4 ms more (benchmarks/reward_workers.py)."""
    name: str = field(default="math", init=False)

    def __post_init__(self) -> None:
        if isinstance(self.eval_data, str):  # a single file means the val set
            object.__setattr__(self, "eval_data", {"val": self.eval_data})
        if any(type(name) is int for name in self.eval_data):  # YAML reads {2024: FILE}'s name as a number
            object.__setattr__(self, "eval_data", {(str(k) if type(k) is int else k): v for k, v in self.eval_data.items()})
        for name, entry in self.eval_data.items():
            # A set's name prefixes its run-log columns (NAME/pass_rate): '' made '/pass_rate', and a '/'
            # a column read back as another set's. (Only those: a run an older scalerl trained with 'AIME
            # 2024' must still resume and evaluate -- review ak.)
            if not isinstance(name, str) or not name.strip() or "/" in name or name != name.strip():
                raise InputError(f"math task: eval_data set name {name!r}: a name must be non-empty text without "
                                 "'/' or spaces around it (it names the run log's columns, NAME/pass_rate), e.g. "
                                 "{val: FILE, aime24: FILE}")
            if isinstance(entry, dict) and ("data" not in entry or set(entry) - set(_EVAL_KEYS)):
                raise InputError(f"math task: eval_data {name!r}: a set given as a mapping takes the keys "
                                 f"{', '.join(_EVAL_KEYS)} (data required), got {', '.join(map(str, entry)) or 'none'}")
        if not 0.0 <= self.val_fraction < 1.0:
            raise InputError(f"math task: val_fraction must be in [0, 1), got {self.val_fraction}")
        if not 0.0 < self.verify_timeout <= MAX_TIMEOUT:  # also refuses nan and inf
            raise InputError(f"math task: verify_timeout must be a number of seconds > 0 (at most {MAX_TIMEOUT}), "
                             f"got {self.verify_timeout}")
        if isinstance(self.verify_workers, bool) or not isinstance(self.verify_workers, int) \
                or not 1 <= self.verify_workers <= MAX_WORKERS:
            raise InputError(f"math task: verify_workers must be a whole number in [1, {MAX_WORKERS}] (worker "
                             f"processes for math-verify; default 1), got {self.verify_workers!r}")
        # (the trainer's "it has: " listed nothing; scalerl eval --data FILE evaluates FILE itself: review FX)
        if self.val_fraction == 0 and not self.eval_data and not self.evaluate_only:
            raise InputError("math task: val_fraction 0 and no eval_data leave no evaluation set; give one with "
                             f"{self._settings_flag(eval_data={'val': 'FILE'})}, or a val_fraction > 0 (default 0.05)")
        # (0 left no val problems, a traceback in the first evaluation; -1 dropped the last held-out row.)
        if isinstance(self.max_val, bool) or not isinstance(self.max_val, int) or self.max_val < 1:
            raise InputError(f"math task: max_val must be a whole number >= 1 (the most held-out val rows; default "
                             f"1000), got {self.max_val!r}")

    def _problems(self, source: str, rows: list[Row]) -> list[Problem]:
        stem = Path(source).name
        return [Problem(id=f"{stem}:{r.row}", prompt=r.prompt, answer=r.answer, meta={"row": r.row}, messages=r.messages)
                for r in rows]

    def _eval_source(self, entry: str | dict[str, str]) -> tuple[str, str, str, str]:
        """(file, prompt field, answer field, split) of an ``eval_data`` entry: a file, read with the
        training data's fields and ``eval_split``; or a mapping that names its own."""
        split = self.split if self.eval_split is None else self.eval_split
        if isinstance(entry, str):
            return entry, self.prompt_field, self.answer_field, split
        return (entry["data"], entry.get("prompt_field", self.prompt_field),
                entry.get("answer_field", self.answer_field), entry.get("split", split))

    def _load(self, source: str, split: str, prompt_field: str | None = None, answer_field: str | None = None,
              *, eval_name: str | None = None) -> list[Row]:
        """``source``'s rows: the training data's (or, with ``eval_name``, that evaluation set's)."""
        # (the readers' advice is a --set of the one setting, which would replace the task's others: review FU, FV)
        try:
            rows = load_rows(source, prompt_field or self.prompt_field, answer_field or self.answer_field, split)
        except FieldAdvice as exc:
            flag = self._field_settings(exc, eval_name)
            raise InputError(exc.with_settings(flag) if eval_name is None else exc.for_evaluation_file(flag)) from None
        except SplitNotFound as exc:  # (an evaluation set's own split: the task's would train on its split)
            if eval_name is None:
                raise InputError(f"{exc.without_advice}; choose one: {self._settings_flag(**self._split_change())}") from None
            raise InputError(f"{exc.without_advice}; for this evaluation set: "
                             f"{self._entry_flag(eval_name, split='NAME')}") from None
        count, first = answer_conflicts(rows)
        if first is not None:
            a, b = first
            log.warning("%s: %d prompt(s) appear with different answers (the first: rows %d and %d, answers %r and "
                        "%r); each row is scored against its own answer, so a completion right by one is wrong by "
                        "the other: fix or drop the wrong rows", source, count, a.row, b.row, a.answer, b.answer)
        return rows

    def _split_change(self) -> dict[str, str]:
        """The settings that choose the data's split: ``split`` -- and, for ``scalerl eval --data FILE``'s, the run's
        evaluation sets kept at the split they read now (``eval_split``), which ``split`` also moves (review GB: a
        run's ``hard`` set was read from another split, under its name)."""
        if self.evaluate_only and self.eval_data and self.eval_split is None:
            return {"split": "NAME", "eval_split": self.split}
        return {"split": "NAME"}

    def _entry(self, name: str) -> dict[str, str]:
        """Evaluation set ``name`` as a mapping (its file and what it names of its own)."""
        entry = self.eval_data[name]
        return {"data": entry} if isinstance(entry, str) else dict(entry)

    def _entry_flag(self, name: str, **changed: str) -> str:
        """:meth:`_settings_flag` with evaluation set ``name``'s entry ``changed``, the other sets as they are."""
        return self._settings_flag(eval_data={**self.eval_data, name: {**self._entry(name), **changed}})

    def _field_settings(self, exc: FieldAdvice, eval_name: str | None) -> str:
        """The ``--set`` that names ``exc``'s field for the data it read alone: an evaluation set's entry (its
        file, split and fields: the missing one's likely name, the other as the row has it, else NAME to fill in),
        or the task's field (where the file is ``scalerl eval --data``'s, each evaluation set of the run keeping the
        fields it reads now) -- with every other setting as it is, which the ``--set`` replaces (review FU: a
        config file's fields, a set's split, the other evaluation sets were dropped by the advice)."""
        if eval_name is not None:
            return self._entry_flag(eval_name, **{"prompt_field": "NAME", "answer_field": "NAME", **exc.found,
                                                  exc.setting: exc.name})
        sets = self.eval_data
        if self.evaluate_only:
            sets = {name: {**self._entry(name), "prompt_field": prompt, "answer_field": answer}
                    for name, (_, prompt, answer, _) in ((n, self._eval_source(e)) for n, e in sets.items())}
        return self._settings_flag(**{exc.setting: exc.name}, eval_data=sets)

    def _settings_flag(self, **changed: Any) -> str:
        """``--set 'task.settings={...}'`` of this task's settings as given -- every one not at its default but
        ``evaluate_only``, the command's own -- with ``changed``. ``data`` too: a config may give it there (review
        FX), and ``--data`` (task.data) wins over it where both are given -- but not ``scalerl eval --data FILE``'s,
        whose FILE the command gives (pasted without --data, eval read the run's data: review FZ)."""
        given = {}
        for f in dataclasses.fields(self):
            if f.init and f.name != "evaluate_only" and not (self.evaluate_only and f.name == "data"):
                default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
                if getattr(self, f.name) != default:  # (data, without a default: always)
                    given[f.name] = getattr(self, f.name)
        settings = {k: v for k, v in {**given, **changed}.items() if v not in ({}, None)}
        return settings_flag(flow_mapping(settings))

    @cached_property
    def _split(self) -> tuple[list[Problem], dict[str, list[Problem]]]:
        train = self._problems(self.data, self._load(self.data, self.split))
        sources = {name: self._eval_source(entry) for name, entry in self.eval_data.items()}
        evals = {name: self._problems(src, self._load(src, split, prompt, answer, eval_name=name))
                 for name, (src, prompt, answer, split) in sources.items()}
        if self.evaluate_only:  # the whole file is the val set (held-out shares are for training runs)
            # The file given is val, whatever a run's own eval_data called val (it won, silently: eval --run
            # RUN --data FILE scored the run's val file under FILE's name).
            evals = {"val": train, **{name: problems for name, problems in evals.items() if name != "val"}}
            for name, problems in evals.items():
                _warn_repeats(name, problems)
            return [], evals
        if "val" not in evals and self.val_fraction > 0:
            held = [p for p in train if _held_out(p.prompt, self.val_fraction, self.split_salt)]
            if not held:
                distinct = len({p.prompt for p in train})
                flag = self._settings_flag(eval_data={**self.eval_data, "val": "FILE"})
                raise InputError(f"{self.data}: too few rows to hold out a val set (none of its {len(train)} rows, "
                                 f"{distinct} distinct prompts, falls in the held-out {self.val_fraction:.0%}, chosen "
                                 f"by a hash of the prompt); give one: {flag}, or raise task.settings val_fraction")
            evals = {"val": held[: self.max_val], **evals}
            # The held-out rows past max_val are evaluated by no one: they train (review cb: dropped from both, a
            # tenth of a 10,000-row file lost without a word); a copy of a val prompt among them goes below.
            val_rows = {id(p) for p in evals["val"]}
            train = [p for p in train if id(p) not in val_rows]
        for name, problems in evals.items():
            _warn_repeats(name, problems)
        # Disjoint by prompt: an evaluation prompt never appears among the training problems, nor
        # one that differs from it only in whitespace (a trailing space or newline another export
        # left: the same problem, trained on and then evaluated).
        held_prompts = {prompt_key(p.prompt) for problems in evals.values() for p in problems}
        before = len(train)
        train = [p for p in train if prompt_key(p.prompt) not in held_prompts]
        if len(train) < before:
            # (an evaluation file that overlaps the training data shrinks it: said, with the count -- review cb; so
            # does a held-out prompt's copy that differs in whitespace, hashed to the training side -- review dj)
            log.warning("%s: %d of its %d training rows left out: their prompts, whitespace aside, are in the "
                        "evaluation set(s) %s",
                        self.data, before - len(train), before, ", ".join(repr(n) for n in evals))
        if not train:
            same = [name for name, (src, *_) in sources.items() if Path(src).resolve() == Path(self.data).resolve()]
            hint = f" (eval_data {same[0]!r} is the training file itself" + (
                "; a saved dataset's other split: eval_split: NAME)" if Path(self.data).is_dir() else ")") if same else ""
            raise InputError(f"{self.data}: no training rows left after removing the evaluation prompts{hint}; give "
                             "evaluation problems that are not all in the training data")
        return train, evals

    def train_problems(self) -> list[Problem]:
        return self._split[0]

    def reference_notes(self) -> list[str]:
        """A note per set whose sampled references no completion can match as meant
        (:func:`scalerl.tasks.math_references.reference_notes`)."""
        train, evals = self._split
        return reference_notes({"training": train, **{f"evaluation set {k!r}": v for k, v in evals.items()}})

    def eval_sets(self) -> dict[str, list[Problem]]:
        return self._split[1]

    def reward(self, problem: Problem, completion: str) -> float:
        if on_main_thread():
            return scored_here(completion, problem.answer)
        return self._verifier()(problem, completion)

    def rewards(self, pairs: Sequence[tuple[Problem, str]]) -> list[float]:
        """Many completions at once: on the ``verify_workers`` worker processes where there are
        several, else one call at a time as :meth:`reward` makes it."""
        if self.verify_workers == 1:
            return [self.reward(problem, completion) for problem, completion in pairs]
        return self._verifier().score_many(pairs)

    @property
    def reward_calls_at_once(self) -> int:
        """math-verify's worker processes (:func:`scalerl.tasks.base.calls_at_once`)."""
        return self.verify_workers

    @cached_property
    def _bounded(self) -> RewardWorkers:
        # (math_worker: math-verify imported as the worker loads, not within the first call's verify_timeout)
        return RewardWorkers("scalerl.tasks.math_worker:math_verify_reward", timeout=self.verify_timeout,
                             workers=self.verify_workers)

    def _verifier(self) -> RewardWorkers:
        """The worker process that scores calls off the main thread (started on first use)."""
        with _VERIFIER_LOCK:
            return self._bounded

    def reward_stats(self) -> dict[str, Any]:
        """Calls scored in the worker process, and how many of them failed or ran out of time."""
        bounded = self.__dict__.get("_bounded")
        return (bounded.stats if bounded is not None else RewardStats()).as_dict()

    def close(self) -> None:
        """Stop the worker process, if one was started."""
        bounded = self.__dict__.get("_bounded")
        if bounded is not None:
            bounded.close()

    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "data": self.data,
            "eval_data": dict(self.eval_data),
            "val_fraction": self.val_fraction,
            "max_val": self.max_val,
            "prompt_field": self.prompt_field,
            "answer_field": self.answer_field,
            "split": self.split,
            "eval_split": self.eval_split,
            "evaluate_only": self.evaluate_only,
            "split_salt": self.split_salt,
            "verify_timeout": self.verify_timeout,
            "verify_workers": self.verify_workers,
        }
