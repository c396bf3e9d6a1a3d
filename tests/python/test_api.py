"""cutune's library calls: operators, spaces, errors, replayed tuning with progress, resume,
Ctrl-C, the replay study and the log."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import cutune
from conftest import has_gpu


def test_ops_lists_every_computation_with_its_families():
    ops = cutune.ops()
    names = [o["computation"] for o in ops]
    assert names == sorted(names) and "gemm" in names and "conv2d" in names
    gemm = next(o for o in ops if o["computation"] == "gemm")
    assert [f["family"] for f in gemm["families"]] == ["simt", "mma", "wgmma"]


def test_space_of_a_task_has_knobs_size_and_references():
    s = cutune.space("gemm", (4096, 4096, 4096), dtype="fp16", layout="nt", family="wgmma")
    assert s["template"] == "gemm_fp16_wgmma_nt"
    assert s["size"] > 1000 and any(k["name"] == "persistent" for k in s["knobs"])
    assert s["references"] and all("index" in r for r in s["references"])
    # A shape as text is the same task.
    assert cutune.space("gemm", "4096,4096,4096", dtype="fp16", layout="nt",
                        family="wgmma")["size"] == s["size"]


def test_bad_input_raises_usage_error_with_the_command_line_message():
    with pytest.raises(cutune.UsageError, match=r"^unknown operator 'gemmm' \(known: "):
        cutune.space("gemmm", (1, 2, 3))
    with pytest.raises(ValueError, match="--dtype"):  # UsageError is a ValueError
        cutune.space("gemm", (8, 8, 8), dtype="fp64")
    with pytest.raises(cutune.UsageError, match="bogus"):
        cutune.tune("gemm", (67, 45, 33), trials=2, bogus_option=3)
    with pytest.raises(cutune.UsageError, match="callback"):
        cutune.tune("gemm", (67, 45, 33), callback=print)  # progress is read from the log


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU")
def test_tuning_on_a_missing_gpu_raises_no_device_error(tmp_path):
    with pytest.raises(cutune.NoDeviceError, match="no CUDA device found"):
        cutune.tune("gemm", (67, 45, 33), trials=2, log=str(tmp_path / "g.jsonl"))
    assert not (tmp_path / "g.jsonl").exists()  # refused before the log is made


def test_replayed_tuning_reports_progress_and_resumes(gemm_cache, tmp_path):
    log = str(tmp_path / "replay.jsonl")
    seen = []
    summary = cutune.tune(replay=gemm_cache, trials=48, batch=16, seed=3, log=log,
                          callback=seen.append)
    assert summary["trials"] == 48
    done = [p["done"] for p in seen]
    assert done == sorted(done) and done[-1] == 48
    last = seen[-1]
    assert last["valid"] <= 48 and last["rate"] > 0 and last["best_config"] is not None
    records = cutune.Log(log)
    assert len(records) == 48
    best = records.best()
    assert last["best_s"] == pytest.approx(cutune.log.median_s(best))
    # resume: the log continues to 64 trials; the callback counts this run's records only.
    more = []
    cutune.tune(replay=gemm_cache, trials=64, batch=16, seed=3, log=log, resume=True,
                callback=more.append)
    assert len(cutune.Log(log)) == 64 and more[-1]["done"] == 16


def test_ctrl_c_ends_after_the_batch_keeping_the_log(gemm_cache, tmp_path):
    log = tmp_path / "interrupted.jsonl"
    script = textwrap.dedent(f"""
        import cutune
        try:
            cutune.tune(replay={gemm_cache!r}, trials=4000, batch=8, log={str(log)!r},
                        replay_cost_ms=25, tuner="random")
        except KeyboardInterrupt:
            print("interrupted")
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("\n") >= 8:
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert out.strip() == "interrupted"
    kept = len(cutune.Log(str(log)))
    assert 8 <= kept < 4000 and kept % 8 == 0  # whole batches


def test_replay_study_summarises_seeds(gemm_cache):
    study = cutune.replay(gemm_cache, tuner="random", trials=20, seeds=2)
    assert isinstance(study, dict) and json.dumps(study)


def test_log_rejects_a_malformed_line_with_its_number(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": {}, "result": {}}\nnot json\n')
    with pytest.raises(cutune.UsageError, match=r"bad.jsonl:2: not a JSON record"):
        cutune.Log(str(bad))
    with pytest.raises(cutune.UsageError, match="no tuning log"):
        cutune.Log(str(tmp_path / "absent.jsonl"))


def test_log_best_and_tasks(emulated_export):
    log = cutune.Log(emulated_export["log"])
    assert len(log) == 2 and len(log.tasks()) == 1
    best = log.best()
    assert best["result"]["status"] == "ok"
    assert cutune.log.median_s(best) == min(cutune.log.median_s(r) for r in log)


def test_log_to_pandas(emulated_export):
    pytest.importorskip("pandas")
    frame = cutune.Log(emulated_export["log"]).to_pandas()
    assert len(frame) == 2 and "block_m" in frame.columns and "median_s" in frame.columns
