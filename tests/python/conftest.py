"""Shared fixtures of the Python package's tests (run by CTest as `python: pytest`, with
PYTHONPATH naming the build tree's package and CUTUNE_BINARY the built command)."""

import os
import subprocess

import pytest

import cutune

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATASETS = os.path.join(os.path.dirname(REPO), "shared", "datasets")


def has_gpu() -> bool:
    return os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")


@pytest.fixture(scope="session")
def gemm_cache():
    """A recorded GEMM space of a real GPU; tests that need it skip where ../shared is absent."""
    path = os.path.join(DATASETS, "gemm", "RTX_3090.json.gz")
    if not os.path.exists(path):
        pytest.skip(f"no recorded space at {path} (a user's clone has no ../shared)")
    return path


@pytest.fixture(scope="session")
def emulated_export(tmp_path_factory):
    """A GEMM tuned in the CPU emulator (2 trials, an odd shape) and exported."""
    folder = tmp_path_factory.mktemp("emulated")
    log = folder / "gemm.jsonl"
    summary = cutune.tune("gemm", (67, 45, 33), trials=2, batch=2, device="emulator",
                          log=str(log))
    assert summary["valid"] == 2
    out = folder / "exported"
    written = cutune.export(str(log), str(out))
    assert written["written"] == ["gemm_nn_67x45x33_sm_90"]
    return {"log": str(log), "dir": str(out)}


@pytest.fixture(scope="session")
def emulated_table(tmp_path_factory):
    """A dispatch table over M = 1..64 of a 64x48 GEMM (run-time M), tuned in the emulator
    (one point's worth of trials) and exported."""
    folder = tmp_path_factory.mktemp("table")
    table = folder / "table.json"
    cutune.tune("gemm", "M=1..64,64,48", trials=2, device="emulator", tuner="random", points=3,
                candidates=1, tolerance=9, table=str(table), log=str(folder / "range.jsonl"))
    out = folder / "exported"
    cutune.export(out=str(out), table=str(table))
    return str(out)
