// The convolution side of the GPU runtime that needs no GPU: how a conv task maps onto cuDNN's
// descriptors, the RSCK -> KRSC filter copy, the worker command, that every loop and buffer
// of the conv templates' IR has a declared feature slot, `cutune export` of a conv log, and
// `cutune tune-suite` / `bench conv2d` without a device.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>

#include <unistd.h>

#include "kernels/conv_shape.h"
#include "kernels/template.h"
#include "src/ir/ir_visitor.h"
#include "src/records/tuning_log.h"
#include "src/export/cubin_loader.h"
#include "src/baselines/cudnn_conv.h"
#include "src/baselines/cudnn_conv_task.h"
#include "src/runtime/driver_api.h"
#include "src/export/export_log.h"
#include "tests/cli/cli_run.h"

using namespace cutune;

namespace {

// Ends the test case as skipped: exit 77, CTest's SKIP_RETURN_CODE (cutune_add_test), with the
// reason on stdout.
[[noreturn]] void skip(const std::string& reason) {
  std::cout << "skipped: " << reason << std::endl;
  std::exit(77);
}

CudnnConvProblem problem_of(const std::string& op, const std::vector<int64_t>& shape,
                            const std::string& template_name = "") {
  auto tmpl = make_template(op, shape, template_name);
  std::optional<CudnnConvProblem> p = cudnn_conv_problem(*tmpl);
  REQUIRE(p.has_value());
  return *p;
}

std::vector<int> dims(const int (&d)[4]) { return {d[0], d[1], d[2], d[3]}; }

// Every For variable and every buffer an Allocate, Load or Store names.
class NameWalker : public ir::IRVisitor {
 public:
  std::set<std::string> loops, buffers;
  void visit_node(const ir::For* op) override {
    loops.insert(op->var);
    IRVisitor::visit_node(op);
  }
  void visit_node(const ir::Allocate* op) override {
    buffers.insert(op->buffer->name);
    IRVisitor::visit_node(op);
  }
  void visit_node(const ir::Load* op) override {
    buffers.insert(op->buffer->name);
    IRVisitor::visit_node(op);
  }
  void visit_node(const ir::Store* op) override {
    buffers.insert(op->buffer->name);
    IRVisitor::visit_node(op);
  }
};

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cutune_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("a ResNet-18 NCHW layer maps onto cuDNN's descriptors", "[cudnn]") {
  // C4: 56x56, 64 -> 128, 3x3, stride 2, pad 1.
  const CudnnConvProblem p =
      problem_of("conv2d", {1, 64, 56, 56, 128, 3, 3, 2, 1, 1}, "conv2d_nchw");
  CHECK(p.layout == CudnnActivationLayout::nchw);
  CHECK(p.filter_layout == CudnnFilterLayout::kcrs);
  CHECK(p.output == 0);
  CHECK(p.input == 1);
  CHECK(p.filter == 2);
  const CudnnConvDescriptors d = cudnn_descriptors(p);
  CHECK_FALSE(d.format_nhwc);
  CHECK(dims(d.x_dims) == std::vector<int>{1, 64, 56, 56});
  CHECK(dims(d.w_dims) == std::vector<int>{128, 64, 3, 3});
  CHECK(dims(d.y_dims) == std::vector<int>{1, 128, 28, 28});
  CHECK(d.pad_h == 1);
  CHECK(d.pad_w == 1);
  CHECK(d.stride_h == 2);
  CHECK(d.stride_w == 2);
  CHECK(d.dilation_h == 1);
  CHECK(d.groups == 1);
  CHECK_FALSE(d.filter_needs_transpose);
}

TEST_CASE("an NHWC conv uses cuDNN's NHWC format and a transposed filter", "[cudnn]") {
  const CudnnConvProblem p = problem_of("conv2d", {2, 3, 17, 19, 5, 3, 3, 2, 1, 1}, "conv2d_nhwc");
  CHECK(p.layout == CudnnActivationLayout::nhwc);
  CHECK(p.filter_layout == CudnnFilterLayout::rsck);
  const CudnnConvDescriptors d = cudnn_descriptors(p);
  CHECK(d.format_nhwc);
  CHECK(d.filter_needs_transpose);
  // Dimensions are always given as n, c, h, w (k, c, r, s); the format says the memory order.
  CHECK(dims(d.x_dims) == std::vector<int>{2, 3, 17, 19});
  CHECK(dims(d.w_dims) == std::vector<int>{5, 3, 3, 3});
  CHECK(dims(d.y_dims) == std::vector<int>{2, 5, 9, 10});
}

TEST_CASE("depthwise maps to one group per channel", "[cudnn]") {
  // MobileNet D2: 112x112, 64 channels, stride 2.
  const CudnnConvProblem p = problem_of("depthwise_conv2d", {1, 64, 112, 112, 3, 3, 2, 1, 1});
  CHECK(p.groups == 64);
  CHECK(p.k == 64);
  const CudnnConvDescriptors d = cudnn_descriptors(p);
  CHECK(d.groups == 64);
  CHECK(dims(d.w_dims) == std::vector<int>{64, 1, 3, 3});
  CHECK(dims(d.y_dims) == std::vector<int>{1, 64, 56, 56});
}

TEST_CASE("cuDNN's output extents agree with the templates' on odd shapes", "[cudnn]") {
  const std::vector<std::vector<int64_t>> shapes = {{1, 3, 224, 224, 64, 7, 7, 2, 3, 1},
                                                    {3, 5, 13, 11, 7, 1, 1, 2, 0, 1},
                                                    {2, 4, 15, 9, 6, 3, 5, 1, 2, 2},
                                                    {1, 7, 8, 8, 3, 3, 3, 3, 1, 1}};
  for (const auto& s : shapes) {
    const ConvShape shape = conv2d_shape(s);
    for (const char* t : {"conv2d_nchw", "conv2d_nhwc"}) {
      const CudnnConvDescriptors d = cudnn_descriptors(problem_of("conv2d", s, t));
      INFO(shape.to_string() << " " << t);
      CHECK(d.y_dims[2] == shape.p);
      CHECK(d.y_dims[3] == shape.q);
      CHECK(d.y_dims[1] == shape.k);
      CHECK(d.dilation_w == shape.dilation);
    }
  }
}

TEST_CASE("impossible cuDNN problems are rejected with one line", "[cudnn]") {
  CudnnConvProblem p;
  p.c = 6;
  p.k = 4;
  p.groups = 4;
  CHECK_THROWS_AS(cudnn_descriptors(p), std::invalid_argument);
  p.groups = 2;
  p.r = 5;  // a 1x1 input with a 5x5 filter and no padding: empty output
  CHECK_THROWS_AS(cudnn_descriptors(p), std::invalid_argument);
  p.r = 1;
  p.n = int64_t(1) << 32;
  CHECK_THROWS_AS(cudnn_descriptors(p), std::invalid_argument);
}

TEST_CASE("the RSCK filter is copied to KRSC element by element", "[cudnn]") {
  const int64_t r = 2, s = 3, c = 4, k = 5;
  std::vector<float> rsck(size_t(r * s * c * k));
  for (size_t i = 0; i < rsck.size(); ++i) rsck[i] = float(i);
  const std::vector<float> krsc = rsck_to_krsc(rsck, r, s, c, k);
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t ri = 0; ri < r; ++ri)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t ci = 0; ci < c; ++ci)
          REQUIRE(krsc[size_t(((ki * r + ri) * s + si) * c + ci)] ==
                  rsck[size_t(((ri * s + si) * c + ci) * k + ki)]);
  CHECK_THROWS_AS(rsck_to_krsc(rsck, r, s, c, k + 1), std::invalid_argument);
}

TEST_CASE("the cuDNN problem round-trips as JSON and follows the template's declaration",
          "[cudnn]") {
  const CudnnConvProblem p = problem_of("conv2d", {2, 3, 17, 19, 5, 3, 3, 2, 1, 1}, "conv2d_nhwc");
  CHECK(CudnnConvProblem::from_json(p.to_json()) == p);
  nlohmann::json broken = p.to_json();
  broken["layout"] = "nchw4";
  CHECK_THROWS_WITH(CudnnConvProblem::from_json(broken), Catch::Contains("nchw4"));
  broken.erase("layout");
  CHECK_THROWS_WITH(CudnnConvProblem::from_json(broken), Catch::Contains("'layout'"));

  // The declaration travels inside the worker's task; the worker derives the same problem.
  auto conv = make_template("conv2d", {1, 64, 56, 56, 64, 3, 3, 1, 1, 1});
  const BaselineSpec declared = conv->baseline();
  REQUIRE(declared.kind == BaselineSpec::Kind::conv);
  CHECK(cudnn_conv_problem(BaselineSpec::from_json(declared.to_json())) ==
        *cudnn_conv_problem(*conv));

  auto fp16 = make_template("conv2d_fp16", {1, 16, 9, 9, 8, 3, 3, 1, 1});
  const std::optional<CudnnConvProblem> half = cudnn_conv_problem(*fp16);
  REQUIRE(half.has_value());
  CHECK(half->dtype == "float16");
  CHECK(half->layout == CudnnActivationLayout::nhwc);
  CHECK(half->filter_layout == CudnnFilterLayout::rsck);
  CHECK(CudnnConvProblem::from_json(half->to_json()) == *half);

  auto gemm = make_template("gemm", {64, 64, 64});
  CHECK_FALSE(cudnn_conv_problem(*gemm).has_value());
  CHECK(gemm->baseline().kind == BaselineSpec::Kind::gemm);
}

TEST_CASE("cuDNN's graph API accepts the convolutions it is offered as a baseline", "[cudnn]") {
  // The tensors, the convolution and the operation finalize without a GPU; the operation
  // graph, its engines and their plans need a handle (test_gpu_conv).
  if (!cudnn_version()) skip("cuDNN unavailable: " + cudnn_unavailable_reason());
  // C8 (28x28, 128 -> 256, 1x1, stride 2) in fp16 NHWC with its RSCK filter, the layer the
  // legacy API has no good tensor-core algorithm for; bf16 with padding, dilation and odd
  // sizes; an NCHW fp32 layer; and a depthwise one (C groups).
  const std::vector<CudnnConvProblem> problems = {
      problem_of("conv2d_fp16", {1, 128, 28, 28, 256, 1, 1, 2, 0, 1}),
      problem_of("conv2d_bf16", {2, 24, 17, 19, 40, 3, 3, 1, 2, 2}),
      problem_of("conv2d", {1, 64, 56, 56, 128, 3, 3, 2, 1, 1}, "conv2d_nchw"),
      problem_of("depthwise_conv2d", {1, 32, 28, 28, 3, 3, 1, 1, 1})};
  for (const CudnnConvProblem& p : problems) {
    INFO(p.to_json().dump());
    CHECK_NOTHROW(cudnn_graph_operation_check(p));
  }
  // A group count that does not divide C is refused before cuDNN sees it.
  CudnnConvProblem odd = problems[0];
  odd.groups = 3;
  CHECK_THROWS_AS(cudnn_graph_operation_check(odd), std::invalid_argument);
}

TEST_CASE("cuDNN loads at run time or says why not", "[cudnn]") {
  // No GPU is needed to load the library; only to create a handle.
  if (std::optional<int64_t> v = cudnn_version()) {
    CHECK(*v >= 90000);
    CHECK(cudnn_unavailable_reason().empty());
  } else {
    CHECK_FALSE(cudnn_unavailable_reason().empty());
  }
  CHECK(cudnn_algo_name(1) == "IMPLICIT_PRECOMP_GEMM");
  CHECK(cudnn_algo_name(42) == "algo 42");
}

TEST_CASE("the conv templates declare every loop and buffer their IR contains", "[features]") {
  struct Case {
    std::string op, template_name;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"conv2d", "conv2d_nchw", {1, 64, 56, 56, 64, 3, 3, 1, 1, 1}},
      {"conv2d", "conv2d_nchw", {2, 3, 17, 19, 5, 7, 7, 2, 3, 1}},
      {"conv2d", "conv2d_nchw", {1, 5, 9, 11, 3, 1, 1, 2, 0, 1}},
      {"conv2d", "conv2d_nhwc", {1, 64, 56, 56, 64, 3, 3, 1, 1, 1}},
      {"conv2d", "conv2d_nhwc", {2, 3, 17, 19, 5, 7, 7, 2, 3, 1}},
      {"conv2d", "conv2d_nhwc", {1, 5, 9, 11, 3, 1, 1, 2, 0, 1}},
      {"depthwise_conv2d", "", {1, 32, 112, 112, 3, 3, 1, 1, 1}},
      {"depthwise_conv2d", "", {2, 5, 13, 11, 3, 5, 2, 2, 1}},
  };
  for (const Case& c : cases) {
    auto tmpl = make_template(c.op, c.shape, c.template_name);
    const std::vector<std::string> loops = tmpl->loop_names(), buffers = tmpl->buffer_names();
    const std::set<std::string> loop_set(loops.begin(), loops.end()),
        buffer_set(buffers.begin(), buffers.end());
    CHECK(loop_set.size() == loops.size());
    CHECK(buffer_set.size() == buffers.size());
    std::vector<Config> configs = tmpl->reference_configs();
    std::mt19937_64 rng(7);
    for (int i = 0; i < 60; ++i)
      if (std::optional<Config> cfg = tmpl->space().sample_valid(rng, 10000))
        configs.push_back(*cfg);
    int built = 0;
    for (const Config& cfg : configs) {
      ir::Kernel kernel;
      try {
        kernel = tmpl->build(cfg);
      } catch (const ir::IRError&) {
        continue;
      }
      ++built;
      NameWalker walk;
      for (const ir::Buffer& b : kernel.buffers) walk.buffers.insert(b->name);
      walk.visit(kernel.body);
      for (const std::string& l : walk.loops) {
        INFO(tmpl->name() << " config " << cfg.index() << ": loop " << l);
        CHECK(loop_set.count(l) == 1);
      }
      for (const std::string& b : walk.buffers) {
        INFO(tmpl->name() << " config " << cfg.index() << ": buffer " << b);
        CHECK(buffer_set.count(b) == 1);
      }
    }
    INFO(tmpl->name());
    CHECK(built >= 40);
  }
}

TEST_CASE("export round-trips a conv task through make_template", "[export]") {
  const std::vector<int64_t> shape = {1, 64, 56, 56, 128, 3, 3, 2, 1, 1};
  const auto dir = fresh_dir("conv_export");
  for (const char* name : {"conv2d_nchw", "conv2d_nhwc"}) {
    auto tmpl = make_template("conv2d", shape, name);
    REQUIRE_FALSE(tmpl->reference_configs().empty());
    Record r;
    r.task = {"conv2d", tmpl->shape(), "float32", "sm_90", "NVIDIA H200", name};
    r.config_index = tmpl->reference_configs().front().index();
    r.result.status = MeasureStatus::ok;
    r.result.times_s = {4e-5};
    r.result.timer = TimerKind::cupti;
    r.result.details.baseline.baseline_s = 5e-5;
    r.result.details.baseline.reference = "cudnn";
    r.timestamp = "2026-11-30T09:00:00Z";
    LogWriter(dir / "log.jsonl").append(r);
  }
  const ExportSummary s = export_log(dir / "log.jsonl", dir / "out");
  CHECK(s.skipped.empty());
  REQUIRE(s.written.size() == 2);
  const auto kernels = cutune_loader::read_manifest((dir / "out").string());
  REQUIRE(kernels.size() == 2);
  for (const auto& k : kernels) {
    CHECK(k.raw["task"]["op"] == "conv2d");
    CHECK(k.raw["task"]["shape"].get<std::vector<int64_t>>() == shape);
    // What export wrote names a task make_template rebuilds, with the same tensors.
    auto again = make_template(k.raw["task"]["op"].get<std::string>(),
                               k.raw["task"]["shape"].get<std::vector<int64_t>>(),
                               k.raw["task"]["template"].get<std::string>());
    REQUIRE(k.params.size() == again->tensors().size());
    for (size_t i = 0; i < k.params.size(); ++i) {
      CHECK(k.params[i].name == again->tensors()[i].name);
      CHECK(k.params[i].bytes == again->tensors()[i].elements * 4);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("tune-suite and bench conv2d without a GPU: one line, exit 1, no log", "[cli]") {
  if (driver_api() != nullptr)
    skip("a CUDA device is present; the no-device path is not reachable");
  const auto dir = fresh_dir("suite_cli");
  const std::string log = (dir / "suite.log").string();
  test::CliRun r = test::run_cutune("tune-suite resnet18 --trials 3 --log " + log);
  INFO_RUN(r);
  CHECK(r.status == 1);
  CHECK(r.err.rfind("cutune: no CUDA device found", 0) == 0);
  CHECK(r.err_lines() == 1);
  CHECK_FALSE(std::filesystem::exists(log));

  r = test::run_cutune("bench conv2d --shape 1,64,56,56,64,3,3,1,1,1");
  CHECK(r.status == 1);
  CHECK(r.err.rfind("cutune: no CUDA device found", 0) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tune-suite rejects bad input before looking for a GPU", "[cli]") {
  test::CliRun r = test::run_cutune("tune-suite vgg16 --trials 3 --log /tmp/unused.log");
  INFO_RUN(r);
  CHECK(r.status == 2);
  CHECK(r.err.find("unknown suite 'vgg16' (known: resnet18, mobilenet, resnet50") !=
        std::string::npos);
  CHECK(r.err_lines() == 1);
  r = test::run_cutune("tune-suite resnet18 --trials 3 --batch-size 300 --log /tmp/unused.log");
  CHECK(r.status == 2);
  CHECK(r.err.find("--batch-size 300: give 1 to 256") != std::string::npos);
  r = test::run_cutune("tune-suite resnet18 --trials 3 --tuner magic --log /tmp/unused.log");
  CHECK(r.status == 2);
  r = test::run_cutune("tune-suite resnet18 --layers C2,C99 --log /tmp/unused.log");
  CHECK(r.status == 2);
  CHECK(r.err.find("no layer 'C99' in the suite (known: C1, C2") != std::string::npos);
  r = test::run_cutune("bench transpose --shape 4,4");
  CHECK(r.status == 2);
}
