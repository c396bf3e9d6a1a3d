"""Kernel Tuner reads what cutune writes.

A Kernel Tuner cache of the blur kernel in tests/spec/data/kt_style (made here: every valid
configuration with a time, repetitions and a compile time) is tuned over by
`cutune tune --spec ... --replay`; `cutune cache` writes the log back as a Kernel Tuner cache and
`cutune export --t4` as T4. Then Kernel Tuner 1.5, in simulation mode, tunes the same kernel
over cutune's cache with brute force (every configuration must be there), and its answers must
be the recorded ones; and the T4 file must validate against Kernel Tuner's own T4 schema.
Exits non-zero with a message on the first difference.
"""

import itertools
import json
import pathlib
import subprocess
import sys
import tempfile

import jsonschema
import kernel_tuner
from kernel_tuner.file_utils import output_file_schema

HERE = pathlib.Path(__file__).resolve().parent
SPEC = HERE / "data" / "kt_style" / "blur.json"


def fail(message):
    print(f"FAILED: {message}")
    sys.exit(1)


def run(cutune, *args):
    r = subprocess.run([cutune, *args], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"cutune {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def space(spec):
    params = {p["Name"]: eval(p["Values"]) for p in spec["ConfigurationSpace"]["TuningParameters"]}
    restrictions = [c["Expression"] for c in spec["ConfigurationSpace"]["Conditions"]]
    valid = []
    for values in itertools.product(*params.values()):
        point = dict(zip(params, values))
        if all(eval(r, {}, dict(point)) for r in restrictions):
            valid.append(point)
    return params, restrictions, valid


def main():
    cutune = sys.argv[1]
    spec = json.loads(SPEC.read_text())
    ks = spec["KernelSpecification"]
    params, restrictions, valid = space(spec)
    keys = list(params)
    entries = {}
    for i, point in enumerate(valid):
        time = 1.0 + 0.25 * ((i * 7) % len(valid))  # ms; one fastest configuration
        entries[",".join(str(point[k]) for k in keys)] = {
            **point, "time": time, "times": [time] * 3,
            "compile_time": 100.0 + i, "verification_time": 0, "benchmark_time": 3 * time,
        }
    source_cache = {
        "device_name": "Test GPU", "kernel_name": ks["KernelName"], "problem_size": ks["ProblemSize"],
        "tune_params_keys": keys, "tune_params": params, "objective": "time", "cache": entries,
    }
    with tempfile.TemporaryDirectory(prefix="cutune-kt-") as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "source_cache.json").write_text(json.dumps(source_cache))
        log = tmp / "tune.jsonl"
        run(cutune, "tune", "--spec", str(SPEC), "--replay", str(tmp / "source_cache.json"),
            "--trials", str(len(valid)), "--log", str(log), "--seed", "1")
        run(cutune, "cache", str(log), "--out", str(tmp / "cutune_cache.json"), "--spec", str(SPEC))
        run(cutune, "export", str(log), "--t4", "--out", str(tmp / "t4.json"))

        written = json.loads((tmp / "cutune_cache.json").read_text())
        if len(written["cache"]) != len(valid):
            fail(f"cutune's cache holds {len(written['cache'])} configurations, the space {len(valid)}")
        results, _ = kernel_tuner.tune_kernel(
            ks["KernelName"], str(SPEC.parent / ks["KernelFile"]), ks["ProblemSize"], [], params,
            grid_div_x=ks["GridDivX"], restrictions=restrictions, lang="CUDA",
            cache=str(tmp / "cutune_cache.json"), simulation_mode=True, strategy="brute_force",
            quiet=True, verbose=False)
        if len(results) != len(valid):
            fail(f"Kernel Tuner's simulation answered {len(results)} configurations of {len(valid)}")
        for r in results:
            key = ",".join(str(r[k]) for k in keys)
            want = entries[key]
            if abs(r["time"] - want["time"]) > 1e-9:
                fail(f"{key}: Kernel Tuner read time {r['time']}, the cache said {want['time']}")
            if abs(r["compile_time"] - want["compile_time"]) > 1e-6:
                fail(f"{key}: compile_time {r['compile_time']}, recorded {want['compile_time']}")
        best = min(results, key=lambda r: r["time"])
        print(f"Kernel Tuner read {len(results)} configurations from cutune's cache; "
              f"best {best['time']} ms")

        _, schema = output_file_schema("results")
        t4 = json.loads((tmp / "t4.json").read_text())
        try:
            jsonschema.validate(t4, json.loads(schema) if isinstance(schema, str) else schema)
        except jsonschema.ValidationError as e:
            fail(f"cutune's T4 file does not validate against Kernel Tuner's schema: {e.message}")
        print(f"cutune's T4 file ({len(t4['results'])} results) validates against Kernel Tuner's schema")


if __name__ == "__main__":
    main()
