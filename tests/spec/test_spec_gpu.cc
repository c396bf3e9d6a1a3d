// User kernels measured on the GPU (SpecMeasurer and the worker's user-kernel backend): the
// examples' configurations are checked against the reference computed on the GPU and timed;
// scalars, constant memory, dynamic shared memory and template kernels reach the kernel; a
// configuration with a planted bug is a wrong answer. Each case exits 77 (CTest's "skipped")
// with the reason where there is no device.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "src/runtime/driver_api.h"
#include "src/measure/gpu_measurer.h"
#include "src/spec/spec_kernel_task.h"
#include "src/spec/spec_verify.h"

using namespace cutune;
using namespace cutune::spec;

namespace {

// The examples of the source tree, or (in a device pack, bench/device/pack_device_build.sh) those the
// check names.
const std::string kExamples = [] {
  const char* moved = std::getenv("CUTUNE_EXAMPLES_DIR");
  return std::string(moved ? moved : CUTUNE_SOURCE_DIR "/examples");
}();

void skip_without_device() {
  if (driver_api() != nullptr) return;
  std::cout << "skipped: no CUDA device found: " << driver_unavailable_reason() << std::endl;
  std::exit(77);
}

GpuMeasureOptions options() {
  GpuMeasureOptions o;
  const char* moved = std::getenv("CUTUNE_TEST_WORKER");
  o.worker_command = {moved ? moved : CUTUNE_TEST_WORKER};
  o.max_measure_seconds = 0.2;
  return o;
}

// `count` sampled valid configurations (the reference first) measured; all must be ok or
// refused for registers, and every ok one matches the reference.
void measure_sample(const SpecTask& task, int count) {
  std::unique_ptr<Measurer> m = make_gpu_measurer(spec_kernel_task(task), options());
  std::vector<Config> batch = {task.config_of(task.spec().reference.configuration)};
  std::mt19937_64 rng(5);
  while (int(batch.size()) < count) batch.push_back(*task.space().sample_valid(rng));
  const std::vector<MeasureResult> results = m->measure(batch);
  int ok = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const MeasureResult& r = results[i];
    INFO(batch[i].to_string() << ": " << to_string(r.status) << " " << r.error);
    CHECK((r.ok() || r.status == MeasureStatus::invalid));
    if (!r.ok()) continue;
    ++ok;
    CHECK_FALSE(r.times_s.empty());
    CHECK(r.median_s() > 0);
    CHECK(r.details.baseline.reference == "reference kernel");
  }
  CHECK(ok * 2 >= count);
  CHECK(results.front().ok());
}

}  // namespace

TEST_CASE("reduction example on the GPU: scalars, dynamic shared memory, atomics") {
  skip_without_device();
  KernelSpec spec = load_kernel_spec(kExamples + "/reduction/reduce.json");
  spec.problem_size = {1 << 20};
  measure_sample(SpecTask(std::move(spec)), 12);
}

TEST_CASE("conv2d example on the GPU: constant memory and scalars") {
  skip_without_device();
  KernelSpec spec = load_kernel_spec(kExamples + "/conv2d/conv2d.json");
  spec.problem_size = {512, 512};
  measure_sample(SpecTask(std::move(spec)), 12);
}

TEST_CASE("a template kernel runs on the GPU, a planted bug is a wrong answer") {
  skip_without_device();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutune_spec_gpu";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "scale.cu") << R"(
template <typename T, int block>
__global__ void scale(T* out, const T* in, int n) {
  int i = blockIdx.x * block + threadIdx.x;
  if (i < n) out[i] = in[i] * (block == 256 ? T(3) : T(2));
}
)";
  std::ofstream(dir / "spec.json") << R"({
 "General": {"BenchmarkName": "scale", "FormatVersion": 1},
 "ConfigurationSpace": {"TuningParameters": [
   {"Name": "block_size_x", "Type": "int", "Values": "[64, 128, 256]", "Default": 64}],
   "Conditions": []},
 "KernelSpecification": {"Language": "CUDA", "KernelName": "scale", "KernelFile": "scale.cu",
   "TemplateArguments": "float, block_size_x", "GlobalSizeType": "CUDA",
   "LocalSize": {"X": "block_size_x", "Y": "1", "Z": "1"},
   "GlobalSize": {"X": "(ProblemSize[0] + block_size_x - 1) // block_size_x", "Y": "1", "Z": "1"},
   "ProblemSize": [100000],
   "Arguments": [
     {"Name": "out", "Type": "float", "MemoryType": "Vector", "FillType": "Constant",
      "FillValue": 0.0, "Size": "ProblemSize[0]", "Output": 1},
     {"Name": "in", "Type": "float", "MemoryType": "Vector", "FillType": "Random",
      "FillValue": 1.0, "Size": "ProblemSize[0]"},
     {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": "ProblemSize[0]"}]}})";
  const SpecTask task(load_kernel_spec(dir / "spec.json"));
  std::unique_ptr<Measurer> m = make_gpu_measurer(spec_kernel_task(task), options());
  const std::vector<MeasureResult> r =
      m->measure({task.config_of({64}), task.config_of({128}), task.config_of({256})});
  INFO(r[0].error << " | " << r[1].error << " | " << r[2].error);
  CHECK(r[0].ok());
  CHECK(r[1].ok());
  CHECK(r[2].status == MeasureStatus::wrong_answer);
  std::filesystem::remove_all(dir);
}
