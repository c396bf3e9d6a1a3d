"""Runs the cutune command, the one engine behind both the command line and this package.

Tuning runs in a child process, as it does from a shell: a fault in the engine or a GPU
worker cannot take the interpreter (a notebook) down, and the messages, exit codes and logs
are the command's own. Keyword arguments become flags (`out_dtype="fp16"` -> `--out-dtype
fp16`, `resume=True` -> `--resume`, a list -> the values after one flag), so the command line
checks every option and an unknown one is a UsageError with its message.
"""

import json
import os
import shutil
import signal
import subprocess
import sysconfig
import time
from typing import Callable, Iterable, Optional

from .errors import CommandError, MissingLibraryError, NoDeviceError, UsageError

_EXIT_USAGE = 2
_EXIT_INTERRUPTED = 130


def binary() -> str:
    """The cutune executable: $CUTUNE_BINARY, the one installed beside this package, or PATH's."""
    given = os.environ.get("CUTUNE_BINARY")
    if given:
        if not os.access(given, os.X_OK):
            raise CommandError(f"CUTUNE_BINARY names {given}, which is not an executable")
        return given
    beside = os.path.join(sysconfig.get_path("scripts"), "cutune")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("cutune")
    if found:
        return found
    raise CommandError("the cutune command was not found (pip install . installs it; or set "
                       "CUTUNE_BINARY to a built one, e.g. build/src/cli/cutune)")


def flags(options: dict) -> list:
    """`{"out_dtype": "fp16", "resume": True, "seed": 3}` -> ["--out-dtype", "fp16", ...]."""
    out = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out.append(flag)
            out.extend(_text(v) for v in value)
        else:
            out.extend([flag, _text(value)])
    return out


def _text(value) -> str:
    if isinstance(value, (list, tuple)):  # a shape
        return ",".join(str(v) for v in value)
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _raise_for(code: int, stderr: str):
    lines = [line for line in stderr.splitlines() if line.strip()]
    message = next((line[len("cutune: "):] for line in reversed(lines)
                    if line.startswith("cutune: ")), lines[-1] if lines else f"exit code {code}")
    if code == _EXIT_USAGE:
        raise UsageError(message)
    # Exit code 1 is a missing GPU or library, or an internal error; the line says which.
    if message.startswith("no CUDA device") or "no CUDA device found" in message:
        raise NoDeviceError(message)
    if " is missing: " in message or message.startswith("cannot load "):
        raise MissingLibraryError(message)
    raise CommandError(message)


def run(args: Iterable[str], *, json_output: bool = True,
        while_running: Optional[Callable[[], None]] = None, poll_s: float = 0.25):
    """Runs `cutune ARGS`; its parsed JSON (or text) on success, the matching error otherwise.

    `while_running` is called every `poll_s` seconds while the command runs (progress). Ctrl-C
    (KeyboardInterrupt) is passed on to the command once, which ends after the batch in flight
    with its records logged; then KeyboardInterrupt is raised here. A second Ctrl-C ends it now.
    """
    argv = [binary(), *[str(a) for a in args]]
    # Its own session: a terminal's Ctrl-C reaches only Python, which passes it on once.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=poll_s)
                break
            except subprocess.TimeoutExpired:
                if while_running is not None:
                    while_running()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if while_running is not None:
        while_running()
    if proc.returncode == _EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if proc.returncode != 0:
        _raise_for(proc.returncode, stderr)
    if not json_output:
        return stdout
    try:
        return json.loads(stdout)
    except json.JSONDecodeError as e:
        raise CommandError(f"cutune {' '.join(argv[1:3])}: output is not JSON ({e})") from None


def wait_for(path: str, timeout_s: float = 0.0) -> bool:
    """Whether `path` exists, waiting up to `timeout_s`."""
    end = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True
