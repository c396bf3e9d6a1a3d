// Measurement on a real GPU through the worker: the timer against a kernel of known duration,
// a wrong kernel caught, faulting and hanging kernels recorded while the run goes on, the GPU
// measurer end to end, and the export round trip through the header-only loader. Every case
// exits 77 (CTest's "skipped") with the reason where there is no device.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

#include <unistd.h>

#include "kernels/template.h"
#include "src/records/tuning_log.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/export/export_log.h"
#include "src/runtime/nvrtc_builder.h"
#include "src/measure/worker_process.h"
#include "src/measure/correctness.h"
#include "src/measure/gpu_measurer.h"

using namespace cutune;

namespace {

// The worker (and example) binaries: from the environment where a pack moved them, else the
// build's own paths.
std::string tool(const char* env, const char* built) {
  const char* moved = std::getenv(env);
  return moved ? moved : built;
}

void skip_without_device() {
  if (driver_api() != nullptr) return;
  std::cout << "skipped: no CUDA device found: " << driver_unavailable_reason() << std::endl;
  std::exit(77);
}

WorkerOptions gpu_worker(double timeout_s = 20) {
  WorkerOptions o;
  o.command = {tool("CUTUNE_TEST_WORKER", CUTUNE_TEST_WORKER)};
  o.measure_timeout_s = timeout_s;
  return o;
}

// The GPU measurer's options for these tests: the test worker, half a second a candidate.
GpuMeasureOptions measurer_options() {
  GpuMeasureOptions o;
  o.worker_command = {tool("CUTUNE_TEST_WORKER", CUTUNE_TEST_WORKER)};
  o.max_measure_seconds = 0.5;
  return o;
}

// A kernel C[M*N], A, B (the GEMM task's parameters) with a hand-written body.
MeasureRequest handwritten(uint64_t id, const std::string& name, const std::string& body, Dim3 grid,
                           Dim3 block) {
  CudaSource s;
  s.kernel_name = name;
  s.code = "extern \"C\" __global__ void " + name +
           "(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B) {\n" +
           body + "\n}\n";
  s.launch.grid = grid;
  s.launch.block = block;
  BuildOptions b;
  b.arch = default_arch();
  NvrtcBuilder builder(b);
  const CompileResult c = builder.compile(s);
  INFO(c.log);
  REQUIRE(c.ok());
  MeasureRequest r;
  r.id = id;
  r.kernel_name = name;
  r.launch = s.launch;
  r.cubin = c.cubin;
  r.args = {0, 1, 2};
  return r;
}

// A naive correct GEMM for 64x64x64 (row-major, nn).
const char* kNaiveGemm =
    "  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= 64 || j >= 64) return;\n"
    "  float acc = 0.f;\n"
    "  for (int k = 0; k < 64; ++k) acc += A[i * 64 + k] * B[k * 64 + j];\n"
    "  C[i * 64 + j] = acc;";

WorkerTask gemm64_task() {
  auto tmpl = make_template("gemm", {64, 64, 64}, "gemm_nn");
  std::vector<char> expected;
  GpuMeasureOptions o;
  o.max_measure_seconds = 0.5;
  return worker_task(*tmpl, o, &expected);
}

}  // namespace

TEST_CASE("the timer measures a kernel of known duration", "[gpu]") {
  skip_without_device();
  WorkerTask task = gemm64_task();
  task.reference = ReferenceKind::none;
  WorkerSupervisor s(gpu_worker());
  s.set_task(task, {});
  // Spins on the global ns timer for 200 us.
  const MeasureRequest spin =
      handwritten(1, "spin200us",
                  "  unsigned long long t0, t;\n"
                  "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
                  "  do { asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - "
                  "t0 < 200000ull);\n"
                  "  if (threadIdx.x == 0) C[0] = float(t - t0);",
                  {1, 1, 1}, {32, 1, 1});
  const MeasureReply r = s.measure(spin);
  INFO(r.result.error << " " << to_json(r.result.details).dump());
  REQUIRE(r.result.ok());
  CHECK(r.result.timer == TimerKind::cupti);
  CHECK(r.result.median_s() > 195e-6);
  CHECK(r.result.median_s() < 240e-6);
  CHECK(r.result.times_s.size() >= 5);
}

TEST_CASE("a wrong kernel is caught and a right one passes", "[gpu]") {
  skip_without_device();
  WorkerSupervisor s(gpu_worker());
  s.set_task(gemm64_task(), {});
  const MeasureReply right = s.measure(handwritten(1, "naive", kNaiveGemm, {4, 4, 1}, {16, 16, 1}));
  INFO(right.result.error);
  CHECK(right.result.ok());
  // Checked (not -1, "unchecked") and within the float32 rule for a 64-long reduction.
  CHECK(right.result.max_rel_error >= 0);
  CHECK(right.result.max_rel_error <= error_tolerance("float32", 64));
  const MeasureReply wrong =
      s.measure(handwritten(2, "off_by_one",
                            "  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * "
                            "blockDim.x + threadIdx.x;\n"
                            "  float acc = 0.f;\n"
                            "  for (int k = 0; k < 63; ++k) acc += A[i * 64 + k] * B[k * 64 + j];\n"
                            "  C[i * 64 + j] = acc;",
                            {4, 4, 1}, {16, 16, 1}));
  CHECK(wrong.result.status == MeasureStatus::wrong_answer);
  const MeasureReply partial = s.measure(
      handwritten(3, "half_written", "  if (threadIdx.x == 0 && blockIdx.x == 0) C[0] = 0.f;",
                  {1, 1, 1}, {32, 1, 1}));
  CHECK(partial.result.status == MeasureStatus::wrong_answer);
  CHECK_THAT(partial.result.error, Catch::Contains("NaN/Inf"));
}

TEST_CASE("trap and out-of-bounds write and hang are each recorded while the run goes on",
          "[gpu]") {
  skip_without_device();
  WorkerSupervisor s(gpu_worker(/*timeout_s=*/5));
  s.set_task(gemm64_task(), {});
  std::vector<MeasureReply> replies;
  auto good = [&](uint64_t id) {
    return handwritten(id, "naive", kNaiveGemm, {4, 4, 1}, {16, 16, 1});
  };
  replies.push_back(s.measure(good(0)));
  replies.push_back(s.measure(handwritten(1, "traps", "  __trap();", {1, 1, 1}, {32, 1, 1})));
  replies.push_back(s.measure(good(2)));
  replies.push_back(s.measure(handwritten(
      3, "oob", "  reinterpret_cast<float*>(0x100)[threadIdx.x] = 1.f; C[threadIdx.x] = 0.f;",
      {1, 1, 1}, {32, 1, 1})));
  replies.push_back(s.measure(good(4)));
  // Spins on the global timer for 10 minutes (the worker's timeout is 5 s). A loop on a
  // volatile local does not hang on the H200: the compiler may drop a loop without side effects.
  replies.push_back(s.measure(handwritten(
      5, "hangs",
      "  unsigned long long t0, t;\n"
      "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
      "  do { asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - t0 < "
      "600000000000ull);\n"
      "  C[0] = float(t - t0);",
      {1, 1, 1}, {32, 1, 1})));
  replies.push_back(s.measure(good(6)));
  REQUIRE(replies.size() == 7);
  for (size_t i = 0; i < replies.size(); ++i) CHECK(replies[i].id == i);
  for (size_t i : {0, 2, 4, 6}) {
    INFO(i << ": " << replies[i].result.error);
    CHECK(replies[i].result.ok());
  }
  CHECK(replies[1].result.status == MeasureStatus::runtime_error);
  CHECK(replies[3].result.status == MeasureStatus::runtime_error);
  CHECK(replies[5].result.status == MeasureStatus::timeout);
  CHECK(s.restarts() >= 3);
}

TEST_CASE("the GPU measurer measures GEMM candidates end to end", "[gpu]") {
  skip_without_device();
  auto tmpl = make_template("gemm", {512, 512, 512}, "gemm_nn");
  auto measurer = make_gpu_measurer(*tmpl, measurer_options());
  std::vector<Config> batch = tmpl->reference_configs();
  std::mt19937_64 rng(5);
  for (int i = 0; i < 6; ++i) batch.push_back(*tmpl->space().sample_valid(rng));
  const std::vector<MeasureResult> results = measurer->measure(batch);
  REQUIRE(results.size() == batch.size());
  const size_t references = tmpl->reference_configs().size();
  REQUIRE(references > 0);
  for (size_t i = 0; i < results.size(); ++i) {
    const MeasureResult& r = results[i];
    INFO("config " << batch[i].index() << ": " << to_string(r.status) << " " << r.error);
    // The hand-tuned configurations must all run; a sampled one may only be turned down by the
    // verifier (the device's limits) before it runs, never fail on the GPU.
    if (i < references) CHECK(r.ok());
    CHECK((r.ok() || r.status == MeasureStatus::invalid));
    if (r.ok()) {
      CHECK(r.timer == TimerKind::cupti);
      CHECK(r.median_s() > 0);
      CHECK(r.max_rel_error >= 0);
      CHECK(r.max_rel_error <= error_tolerance("float32", 512));
      CHECK(r.details.gpu.gpu_before);
    }
  }
}

TEST_CASE("a 16-bit GEMM's baseline is the fastest of GemmEx and cuBLASLt's algorithms", "[gpu]") {
  skip_without_device();
  auto tmpl = make_template("gemm_fp16", {1024, 1024, 1024}, "gemm_fp16_nn");
  auto measurer = make_gpu_measurer(*tmpl, measurer_options());
  const std::vector<MeasureResult> results = measurer->measure({tmpl->reference_configs().front()});
  REQUIRE(results.size() == 1);
  const MeasureResult& r = results.front();
  INFO(to_string(r.status) << " " << r.error << " extra " << to_json(r.details).dump());
  CHECK(r.ok());
  // cuBLAS's GemmEx output stays the reference; the candidates ran against it.
  const BaselineFacts& b = r.details.baseline;
  CHECK(b.reference.value_or("") == "cublas");
  CHECK(b.cublaslt_algos.value_or(0) > 0);
  CHECK_FALSE(b.cublaslt_note);
  const std::string algo = b.cublas_algo.value_or("");
  CHECK((algo == "GemmEx default" || algo.starts_with("cuBLASLt heuristic ")));
}

TEST_CASE("an exported kernel runs through the loader and matches cuBLAS", "[gpu]") {
  skip_without_device();
  auto tmpl = make_template("gemm", {256, 512, 128}, "gemm_nn");
  const auto dir =
      std::filesystem::temp_directory_path() / ("cutune_export_gpu_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Record r;
  r.task = {"gemm", {256, 512, 128}, "float32", default_arch(), "", "gemm_nn"};
  r.config_index = tmpl->reference_configs().front().index();
  r.result.status = MeasureStatus::ok;
  r.result.times_s = {1e-5};
  r.result.timer = TimerKind::cupti;
  {
    LogWriter w(dir / "log.jsonl");
    w.append(r);
  }
  REQUIRE(export_log(dir / "log.jsonl", dir / "out").written.size() == 1);
  const std::string command =
      tool("CUTUNE_EXPORT_EXAMPLE", CUTUNE_EXPORT_EXAMPLE) + " " + (dir / "out").string();
  CHECK(std::system(command.c_str()) == 0);
  std::filesystem::remove_all(dir);
}
