"""cutune's library calls: operators, spaces, tuning, the replay study and export.

Each is a command of the cutune executable run with --json (src/python/cutune/_command.py),
so a Python session and a shell get the same engine, records and messages.
"""

import json
import os
import time
from typing import Callable, Optional, Sequence, Union

from . import _command
from .errors import UsageError
from .log import median_s

Shape = Union[str, Sequence[int]]


def ops() -> list:
    """The computations, their template families and supported task parameters (`cutune ops`)."""
    return _command.run(["ops", "--json"])


def space(op: str, shape: Shape, **options) -> dict:
    """A task's knobs, constraints, size and reference configurations (`cutune space`).

    Options are the command's: dtype, out_dtype, layout, family, template, arch."""
    return _command.run(["space", op, "--shape", _command._text(shape),
                         *_command.flags(options), "--json"])


def tune(op: Optional[str] = None, shape: Optional[Shape] = None, *, trials: int = 200,
         log: Optional[str] = None, device: Optional[str] = None,
         replay: Union[None, str, Sequence[str]] = None,
         callback: Optional[Callable[[dict], None]] = None, **options) -> dict:
    """Tunes an operator (on the GPU, or `device="emulator"`) or replays a Kernel Tuner cache.

    Records go to `log` (default: a file named after the task in the working folder) after
    every batch; `callback(progress)` is called as they arrive with a dict: done, valid,
    best_s, best_config, elapsed_s, rate (trials/s), eta_s. Ctrl-C ends the run after the batch
    in flight, with its records logged (resume=True continues it), and raises
    KeyboardInterrupt. Other options are the command's (dtype, layout, tuner, batch, seed,
    prior, resume, transfer_from, spec, ...). Returns the command's summary.
    """
    args = ["tune"]
    if op is not None:
        args.append(op)
    if shape is not None:
        args += ["--shape", _command._text(shape)]
    if replay is not None:
        args += ["--replay", *([replay] if isinstance(replay, (str, os.PathLike)) else replay)]
    options = dict(options, trials=trials, log=log, device=device)
    args += _command.flags(options) + ["--json", "--quiet"]
    watch = None
    if callback is not None:
        if log is None:
            raise UsageError("tune(callback=...) needs log=PATH: progress is read from "
                                      "the records as they are logged")
        watch = _Progress(os.fspath(log), trials, options.get("resume", False), callback)
    return _command.run(args, while_running=watch)


def replay(cache: str, **options) -> dict:
    """The efficiency study of `cutune replay`: tuners on a Kernel Tuner cache over seeds."""
    return _command.run(["replay", "--cache", os.fspath(cache), *_command.flags(options),
                         "--json"])


def export(log: Optional[str] = None, out: Optional[str] = None, **options) -> dict:
    """The best kernel of each task in `log` as .cubin, .cu and manifest.json in `out`; with
    table=FILE (from tune(shape="M=lo..hi,N,K", table=FILE)) the dispatch table's kernels and
    the table, which cutune.load() calls by M."""
    if out is None:
        raise UsageError("export needs out=FOLDER")
    args = ["export"] + ([os.fspath(log)] if log is not None else [])
    return _command.run(args + ["--out", os.fspath(out), *_command.flags(options), "--json"])


class _Progress:
    """Follows a log as records are appended and reports the run's progress."""

    def __init__(self, log: str, trials: int, resume: bool, callback):
        self.log, self.trials, self.callback = log, trials, callback
        # With resume, the records already there are not this run's.
        self.offset = os.path.getsize(log) if resume and os.path.exists(log) else 0
        self.partial = ""
        self.done = self.valid = 0
        self.best_s, self.best_config = float("inf"), None
        self.start = time.monotonic()

    def __call__(self):
        if not os.path.exists(self.log):
            return
        with open(self.log, encoding="utf-8") as f:
            f.seek(self.offset)
            text = f.read()
            self.offset = f.tell()
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()  # a line still being written
        new = 0
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            new += 1
            self.done += 1
            t = median_s(record)
            if t is not None:
                self.valid += 1
                if t < self.best_s:
                    self.best_s, self.best_config = t, record.get("config")
        if new == 0:
            return
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = max(self.trials - self.done, 0)
        self.callback({"done": self.done, "trials": self.trials, "valid": self.valid,
                       "best_s": self.best_s, "best_config": self.best_config,
                       "elapsed_s": elapsed, "rate": rate,
                       "eta_s": left / rate if rate > 0 else None})

