# shellcheck shell=bash disable=SC2154  # run_step, $bin, $work, $pack are device_check.sh's
# The Python plan of the device check (issue 54), sourced by device_check.sh:
#
#   bash PACK/device_check.sh --plan python [--deadline 420]
#
# cutune's Python package on the GPU machine's own python3 (the one with PyTorch):
#   1. the native loader built there (cmake -S src/python: the loader alone, with that Python's
#      nanobind; the pack carries src/python, cubin_loader.h and nlohmann/json.hpp), since a
#      module built here is for this machine's Python;
#   2. tests/python on the GPU: besides the checks that run anywhere, test_gpu.py tunes a wgmma
#      GEMM (TMA tensor maps) and a convolution for a few trials, exports and loads them, and
#      compares them with torch.matmul and conv2d: called directly, inside torch.compile and in
#      a captured CUDA graph;
#   3. examples/python/tune_and_call.py with 40 trials a task (its times and errors in the log).
# Python runs without the pack's LD_LIBRARY_PATH (its libstdc++ is not PyTorch's); the cutune
# command it drives gets it through a wrapper.

plan_python() {
  local src="$pack/python_pkg" loader="$work/python_loader" wrapper="$work/cutune_command"
  printf '#!/usr/bin/env bash\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$(program_path)" "$bin/cutune" > "$wrapper"
  chmod +x "$wrapper"
  local py="env -u LD_LIBRARY_PATH PYTHONPATH=$loader CUTUNE_BINARY=$wrapper PYTHONUNBUFFERED=1"
  run_step python_loader_build 150 other -- env -u LD_LIBRARY_PATH bash -c \
    "cmake -S '$src/src/python' -B '$loader' -G Ninja -DPython_EXECUTABLE=\$(command -v python3) -DCUTUNE_JSON_INCLUDE='$src/include' > '$work/loader_cmake.txt' && cmake --build '$loader' && ls '$loader'/cutune/_loader*"
  run_step python_tests 240 test -- $py python3 -m pytest -q -rs -p no:cacheprovider "$src/tests/python"
  run_step python_example 180 other -- $py python3 "$src/examples/python/tune_and_call.py" --trials 40 --out "$work/python_example"
}
