// Convolution on a real GPU: sampled and hand-picked conv kernels checked against cuDNN's
// output on a ResNet-18 layer and on an odd shape, and cuDNN's own timing sanity (same
// harness as the candidates, never faster than the fp32 peak allows). Every case exits 77
// (CTest's "skipped") with the reason where there is no device or no cuDNN.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <random>

#include "kernels/template.h"
#include "src/baselines/cudnn_conv.h"
#include "src/baselines/cudnn_conv_task.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/measure/worker_gpu.h"
#include "src/measure/worker_process.h"
#include "src/measure/gpu_measurer.h"

using namespace cutune;

namespace {

std::string test_worker() {
  const char* moved = std::getenv("CUTUNE_TEST_WORKER");
  return moved ? moved : CUTUNE_TEST_WORKER;
}

void skip_without_cudnn() {
  if (driver_api() == nullptr) {
    std::cout << "skipped: no CUDA device found: " << driver_unavailable_reason() << std::endl;
    std::exit(77);
  }
  if (!cudnn_version()) {
    std::cout << "skipped: cuDNN unavailable: " << cudnn_unavailable_reason() << std::endl;
    std::exit(77);
  }
}

// The worker sets cuDNN up from the task's declared baseline.
std::vector<std::string> worker_with_cudnn(const Template&) { return {test_worker()}; }

// Measures the reference configurations and `samples` sampled ones; every one that ran must
// be right against cuDNN, and cuDNN must have been the reference and the baseline.
void check_against_cudnn(const std::string& op, const std::vector<int64_t>& shape,
                         const std::string& template_name, int samples) {
  auto tmpl = make_template(op, shape, template_name);
  GpuMeasureOptions options;
  options.worker_command = worker_with_cudnn(*tmpl);
  options.max_measure_seconds = 0.2;
  auto measurer = make_gpu_measurer(*tmpl, options);
  std::vector<Config> configs = tmpl->reference_configs();
  std::mt19937_64 rng(11);
  for (int i = 0; i < samples; ++i)
    if (auto c = tmpl->space().sample_valid(rng, 10000)) configs.push_back(*c);
  const std::vector<MeasureResult> results = measurer->measure(configs);
  int ok = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const MeasureResult& r = results[i];
    INFO(tmpl->name() << " config " << configs[i].index() << ": " << to_string(r.status) << " "
                      << r.error << " extra " << to_json(r.details).dump());
    CHECK(r.status != MeasureStatus::wrong_answer);
    CHECK(r.status != MeasureStatus::runtime_error);
    CHECK(r.status != MeasureStatus::timeout);
    if (!r.ok()) continue;
    ++ok;
    const BaselineFacts& b = r.details.baseline;
    CHECK(b.reference.value_or("") == "cudnn");
    CHECK(b.baseline_s.value_or(0.0) > 0);
    CHECK(b.cudnn_vs_cpu_max_rel_error.value_or(1.0) < 1e-3);
  }
  // Every hand-tuned configuration runs, and a sampled one may only be turned down by the
  // verifier before it runs (see the status checks above): a launch failure is a bug in the
  // device limits the verifier was given.
  for (size_t i = 0; i < tmpl->reference_configs().size(); ++i) {
    INFO("reference config " << configs[i].index() << ": " << to_string(results[i].status));
    CHECK(results[i].ok());
  }
  for (const MeasureResult& r : results) CHECK((r.ok() || r.status == MeasureStatus::invalid));
  CHECK(ok > 0);
}

// A worker with cuDNN for `tmpl`'s task, asked for the baseline alone.
MeasureResult measure_baseline(const Template& tmpl, const GpuMeasureOptions& options,
                               double timeout_s) {
  std::vector<char> expected;
  const WorkerTask task = worker_task(tmpl, options, &expected);
  WorkerOptions w;
  w.command = worker_with_cudnn(tmpl);
  w.measure_timeout_s = timeout_s;
  WorkerSupervisor worker(w);
  worker.set_task(task, std::move(expected));
  MeasureRequest request;
  request.what = MeasureWhat::baseline;
  return worker.measure(request).result;
}

}  // namespace

TEST_CASE("conv2d NCHW kernels match cuDNN on ResNet-18 C6", "[gpu][conv]") {
  skip_without_cudnn();
  check_against_cudnn("conv2d", {1, 128, 28, 28, 128, 3, 3, 1, 1, 1}, "conv2d_nchw", 12);
}

TEST_CASE("conv2d kernels match cuDNN on an odd shape", "[gpu][conv]") {
  skip_without_cudnn();
  // 3 -> 5 channels, 17x19, 7x7 stride 2 pad 3; 1x1 stride 2 with 7 channels.
  check_against_cudnn("conv2d", {2, 3, 17, 19, 5, 7, 7, 2, 3, 1}, "conv2d_nchw", 8);
  check_against_cudnn("conv2d", {2, 3, 17, 19, 5, 7, 7, 2, 3, 1}, "conv2d_nhwc", 8);
  check_against_cudnn("conv2d", {1, 7, 15, 13, 9, 1, 1, 2, 0, 1}, "conv2d_nhwc", 8);
}

TEST_CASE("depthwise kernels match cuDNN with one group per channel", "[gpu][conv]") {
  skip_without_cudnn();
  check_against_cudnn("depthwise_conv2d", {1, 32, 112, 112, 3, 3, 1, 1, 1}, "", 8);
  check_against_cudnn("depthwise_conv2d", {2, 5, 13, 11, 3, 5, 2, 2, 1}, "", 8);
}

TEST_CASE("a 16-bit convolution's baseline also tries cuDNN's graph API", "[gpu][conv]") {
  skip_without_cudnn();
  // C8 in fp16 NHWC (28x28, 128 -> 256, 1x1, stride 2): the legacy API's algorithms for it
  // do not use the tensor cores well.
  auto tmpl = make_template("conv2d_fp16", {1, 128, 28, 28, 256, 1, 1, 2, 0, 1});
  const MeasureResult r = measure_baseline(*tmpl, GpuMeasureOptions{}, 60);
  INFO(to_string(r.status) << " " << r.error << " extra " << to_json(r.details).dump());
  REQUIRE(r.ok());
  CHECK(r.details.baseline.cudnn_graph_plans.value_or(0) > 0);
  CHECK_FALSE(r.details.baseline.cudnn_graph_note);
  // Whichever API won, its fp16 output agrees with the legacy implicit GEMM's.
  CHECK(r.details.baseline.baseline_max_rel_error.value_or(1.0) < 1e-2);
}

TEST_CASE("cuDNN is timed like a candidate and within the fp32 peak", "[gpu][conv]") {
  skip_without_cudnn();
  auto tmpl = make_template("conv2d", {1, 64, 56, 56, 64, 3, 3, 1, 1, 1});  // C2
  GpuMeasureOptions options;
  options.min_repeats = 20;
  options.early_stop_factor = 0;
  const MeasureResult r = measure_baseline(*tmpl, options, 30);
  INFO(to_string(r.status) << " " << r.error << " extra " << to_json(r.details).dump());
  REQUIRE(r.ok());
  CHECK(r.details.baseline.reference == "cudnn");
  CHECK(r.times_s.size() >= 20);
  const double t = r.median_s();
  REQUIRE(r.details.baseline.baseline_s);
  const double baseline = *r.details.baseline.baseline_s;
  CHECK(t > 1e-6);
  CHECK(t < 5e-3);
  // The same algorithm timed twice in one harness: the two medians agree within 20%.
  CHECK(t / baseline == Approx(1.0).epsilon(0.2));
  const DeviceInfo d = list_devices().front();
  const double peak = double(d.sm_count) * double(d.clock_khz) * 1e3 * 128.0 * 2.0;
  // Faster than the fp32 FMA peak would mean TF32 tensor cores (or a broken timer).
  CHECK(tmpl->flops() / t < 1.05 * peak);
  CHECK(r.details.baseline.baseline_max_rel_error.value_or(1.0) < 1e-3);

  // A task without a baseline (a GEMM task whose reference is the host's: no cuBLAS, and not
  // a convolution, so no cuDNN): the request fails as data, not a crash. (A GEMM task with its
  // baseline would be served by cuBLAS.)
  WorkerOptions plain;
  plain.command = {test_worker()};
  WorkerSupervisor gemm_worker(plain);
  auto gemm = make_template("gemm", {64, 64, 64});
  std::vector<char> gemm_expected;
  // The task first: set_task's by-value vector may be moved from before worker_task fills it.
  const WorkerTask gemm_task = worker_task(*gemm, {}, &gemm_expected, /*allow_baseline=*/false);
  gemm_worker.set_task(gemm_task, std::move(gemm_expected));
  MeasureRequest request;
  request.what = MeasureWhat::baseline;
  const MeasureReply none = gemm_worker.measure(request);
  CHECK(none.result.status == MeasureStatus::launch_error);
}
