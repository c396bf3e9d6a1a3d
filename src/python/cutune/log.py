"""A tuning log as Python data: one plain dict per record, as the JSONL file holds it."""

import json
import os
from typing import Iterator, Optional

from .errors import UsageError


def median_s(record: dict) -> Optional[float]:
    """The median measured time of an ok record, in seconds; None for a failed one."""
    result = record.get("result", {})
    times = result.get("times") or []
    if result.get("status") != "ok" or not times:
        return None
    s = sorted(times)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class Log:
    """The records of a tuning log (`cutune tune --log`), read when made.

    A malformed line is a UsageError naming the file and line, as the command line says it.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.records = []
        try:
            with open(self.path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise UsageError(f"{self.path}:{number}: not a JSON record ({e.msg})") \
                            from None
                    if not isinstance(record, dict) or "task" not in record or \
                            "result" not in record:
                        raise UsageError(f"{self.path}:{number}: not a tuning record (no task "
                                         "or result)")
                    self.records.append(record)
        except FileNotFoundError:
            raise UsageError(f"no tuning log at {self.path}") from None

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.records)

    def tasks(self) -> list:
        """The distinct tasks of the log, in the order they first appear."""
        seen = []
        for r in self.records:
            if r["task"] not in seen:
                seen.append(r["task"])
        return seen

    def best(self, task: Optional[dict] = None) -> Optional[dict]:
        """The ok record with the least median time (of `task` where given), or None."""
        best, best_t = None, float("inf")
        for r in self.records:
            if task is not None and r["task"] != task:
                continue
            t = median_s(r)
            if t is not None and t < best_t:
                best, best_t = r, t
        return best

    def to_pandas(self):
        """One row per record: task fields, the knobs, status, median_s (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Log.to_pandas() needs pandas (pip install pandas)") from None
        rows = []
        for r in self.records:
            row = {f"task.{k}": (tuple(v) if isinstance(v, list) else v)
                   for k, v in r["task"].items()}
            row.update(r.get("config", {}).get("knobs", {}))
            row["index"] = r.get("config", {}).get("index")
            row["status"] = r["result"].get("status")
            row["median_s"] = median_s(r)
            rows.append(row)
        return pandas.DataFrame(rows)
