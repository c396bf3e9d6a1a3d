// `cutune export` without a GPU: a hand-written log with one ok GEMM record becomes a cubin, its
// source and a manifest the header-only loader reads.

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "kernels/template.h"
#include "src/lower/lower.h"
#include "src/records/tuning_log.h"
#include "src/export/cubin_loader.h"
#include "src/export/export_log.h"
#include "src/export/export_manifest.h"

using namespace cutune;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cutune_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Record gemm_record(uint64_t index, double median_s, MeasureStatus status) {
  Record r;
  r.task = {"gemm", {128, 256, 64}, "float32", "sm_90", "NVIDIA H200", "gemm_nn"};
  r.config_index = index;
  r.result.status = status;
  r.result.times_s = {median_s};
  r.result.timer = TimerKind::cupti;
  // What the worker adds to a record of a task whose baseline it timed (worker_gpu.h).
  r.result.details.baseline.name = "cudnn";
  r.result.details.baseline.baseline_s = 2e-5;
  if (status != MeasureStatus::ok) r.result.error = "x";
  r.timestamp = "2026-11-30T09:00:00Z";
  return r;
}

// Exports, into dir/out, a log of one ok record of configuration `index` of gemm_fp16_wgmma_nt
// at `shape`, and reads its manifest back (one kernel).
std::vector<cutune_loader::KernelManifest> export_wgmma_record(const std::filesystem::path& dir,
                                                               const std::vector<int64_t>& shape,
                                                               uint64_t index) {
  {
    LogWriter w(dir / "log.jsonl");
    Record r = gemm_record(index, 1e-5, MeasureStatus::ok);
    r.task = {"gemm_fp16", shape, "float32", "sm_90", "NVIDIA H200", "gemm_fp16_wgmma_nt"};
    w.append(r);
  }
  const ExportSummary s = export_log(dir / "log.jsonl", dir / "out");
  REQUIRE(s.written.size() == 1);
  auto kernels = cutune_loader::read_manifest((dir / "out").string());
  REQUIRE(kernels.size() == 1);
  return kernels;
}

}  // namespace

TEST_CASE("export names are file-safe", "[export]") {
  CHECK(export_name("gemm_nn", {127, 4096, 255}, "sm_90") == "gemm_nn_127x4096x255_sm_90");
  CHECK(export_name("a-b", {1}, "sm_90a") == "a_b_1_sm_90a");
}

TEST_CASE("export writes the best ok kernel of each task by compiling only", "[export]") {
  auto tmpl = make_template("gemm", {128, 256, 64}, "gemm_nn");
  const std::vector<Config> refs = tmpl->reference_configs();
  REQUIRE_FALSE(refs.empty());
  const uint64_t best = refs.front().index();
  std::mt19937_64 rng(1);
  const uint64_t other = tmpl->space().sample_valid(rng)->index();

  const auto dir = fresh_dir("export");
  const auto log = dir / "log.jsonl";
  {
    LogWriter w(log);
    w.append(gemm_record(other, 5e-5, MeasureStatus::ok));
    w.append(gemm_record(best, 3e-5, MeasureStatus::ok));
    w.append(gemm_record(other, 1e-6, MeasureStatus::wrong_answer));  // never the best
  }
  const ExportSummary s = export_log(log, dir / "out");
  CHECK(s.skipped.empty());
  REQUIRE(s.written == std::vector<std::string>{"gemm_nn_128x256x64_sm_90"});
  const auto out = dir / "out";
  CHECK(std::filesystem::file_size(out / "gemm_nn_128x256x64_sm_90.cubin") > 0);
  CHECK(std::filesystem::file_size(out / "gemm_nn_128x256x64_sm_90.cu") > 0);

  const auto kernels = cutune_loader::read_manifest(out.string());
  REQUIRE(kernels.size() == 1);
  const cutune_loader::KernelManifest& k = kernels[0];
  const Lowered lowered = lower(*tmpl, tmpl->space().get(best), ir::TargetLimits{});
  REQUIRE(lowered.ok());
  CHECK(k.kernel == lowered.source->kernel_name);
  CHECK(k.grid[0] == lowered.source->launch.grid.x);
  CHECK(k.block[0] == lowered.source->launch.block.x);
  CHECK(k.dynamic_smem_bytes == lowered.source->launch.dynamic_smem_bytes);
  REQUIRE(k.params.size() == 3);
  CHECK(k.params[0].name == "C");
  CHECK(k.params[0].bytes == 128 * 256 * 4);
  CHECK(k.params[1].is_const);
  // The fp32 GEMM never adds into C: nothing to zero before a launch.
  for (const cutune_loader::Param& p : k.params) CHECK_FALSE(p.zero_init);
  CHECK(k.time_s == 3e-5);
  CHECK(k.raw["config"]["index"] == best);
  CHECK(k.raw["task"]["arch"] == "sm_90");
  CHECK(k.raw["baseline_s"] == 2e-5);
  CHECK(k.raw["baseline"] == "cudnn");
  CHECK(k.raw["gflops"].get<double>() == Approx(tmpl->flops() / 3e-5 * 1e-9));
  CHECK(k.raw["registers"].get<int>() > 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a kernel that loads through TMA is exported with its tensor maps described",
          "[export]") {
  // The wgmma GEMM's configurations with TMA loads take tensor maps as parameters: the
  // manifest must say how to encode each (its buffer, box, swizzle), or the cubin is unusable.
  const std::vector<int64_t> shape = {256, 256, 128};
  auto tmpl = make_template("gemm_fp16", shape, "gemm_fp16_wgmma_nt");
  ir::TargetLimits limits;
  limits.arch = "sm_90";
  std::mt19937_64 rng(3);
  std::optional<Config> tma;
  std::optional<Lowered> lowered;
  for (int i = 0; i < 400 && !tma; ++i) {
    const std::optional<Config> c = tmpl->space().sample_valid(rng);
    if (!c) continue;
    Lowered l = lower(*tmpl, *c, limits);
    if (!l.ok()) continue;
    const auto& params = l.source->params;
    if (std::any_of(params.begin(), params.end(), [](const KernelParam& p) { return bool(p.tensor_map); })) {
      tma = c;
      lowered = std::move(l);
    }
  }
  REQUIRE(tma);
  const auto dir = fresh_dir("export_tma");
  const auto kernels = export_wgmma_record(dir, shape, tma->index());
  const auto& params = kernels[0].params;
  REQUIRE(params.size() == lowered->source->params.size());
  int maps = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& want = lowered->source->params[i];
    const cutune_loader::Param& got = params[i];
    INFO(got.name);
    CHECK(got.name == want.name);
    CHECK(got.is_tensor_map == bool(want.tensor_map));
    // Its fp32 C takes split-K's atomic adds in some configurations: zeroed before a launch
    // (launch_buffers does it), as the measuring worker does.
    CHECK(got.zero_init == (got.pointer && got.name == "C"));
    if (!want.tensor_map) {
      CHECK(got.type != "tensor_map");
      continue;
    }
    ++maps;
    const ir::TensorMapDesc& m = *want.tensor_map;
    CHECK(got.type == "tensor_map");
    CHECK_FALSE(got.pointer);
    CHECK(got.bytes == 128);
    CHECK(got.tensor_map.buffer == m.buffer);
    // The buffer it names is a pointer parameter of the same kernel, so launch_buffers finds it.
    CHECK(std::any_of(params.begin(), params.end(), [&](const cutune_loader::Param& p) {
      return p.pointer && p.name == got.tensor_map.buffer;
    }));
    // A and B are fp16; C (a TMA store's map, fp32 here) its own type.
    CHECK(got.tensor_map.dtype == (got.tensor_map.buffer == "C" ? "float32" : "float16"));
    CHECK(got.tensor_map.dims[0] == uint64_t(m.dims[0]));
    CHECK(got.tensor_map.dims[1] == uint64_t(m.dims[1]));
    CHECK(got.tensor_map.row_stride_bytes == uint64_t(m.row_stride_bytes));
    CHECK(got.tensor_map.box[0] == uint32_t(m.box[0]));
    CHECK(got.tensor_map.box[1] == uint32_t(m.box[1]));
    CHECK(got.tensor_map.element_strides[1] == uint32_t(m.element_strides[1]));
    CHECK(got.tensor_map.swizzle_bytes == ir::swizzle_span_bytes(m.swizzle));
  }
  CHECK(maps >= 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a log without an ok record cannot be exported", "[export]") {
  const auto dir = fresh_dir("export_empty");
  {
    LogWriter w(dir / "log.jsonl");
    w.append(gemm_record(0, 1e-3, MeasureStatus::runtime_error));
  }
  CHECK_THROWS_AS(export_log(dir / "log.jsonl", dir / "out"), UserError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a log whose tasks cannot be rebuilt is an error, not an empty export", "[export]") {
  // A replayed cache's task names no template of cutune's.
  Record r = gemm_record(7, 3e-5, MeasureStatus::ok);
  r.task.op = "replay";
  r.task.template_name = "convolution_kernel";
  const auto dir = fresh_dir("export_replay");
  const auto log = dir / "replay.jsonl";
  {
    LogWriter w(log);
    w.append(r);
  }
  CHECK_THROWS_WITH(export_log(log, dir / "out"), Catch::Contains("nothing to export"));
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "manifest.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a persistent kernel's manifest says so, and the loader sizes its grid from the GPU",
          "[export][persistent]") {
  // The grid of a persistent kernel is the most blocks it can use (its tiles); the loader
  // launches min(that, SMs x blocks per SM) on the GPU it runs on.
  const std::vector<int64_t> shape = {1024, 1024, 256};
  auto tmpl = make_template("gemm_fp16", shape, "gemm_fp16_wgmma_nt");
  const std::vector<Config> refs = tmpl->reference_configs();
  auto it = std::find_if(refs.begin(), refs.end(),
                         [](const Config& c) { return c.get("persistent") == 1; });
  REQUIRE(it != refs.end());
  const auto dir = fresh_dir("export_persistent");
  const auto kernels = export_wgmma_record(dir, shape, it->index());
  const cutune_loader::KernelManifest& k = kernels[0];
  const Lowered lowered = lower(*tmpl, *it, ir::TargetLimits{});
  REQUIRE(lowered.ok());
  const uint32_t tiles = lowered.source->launch.grid.x;
  CHECK(tiles == 1024 / it->get("block_m") * (1024 / it->get("block_n")));
  CHECK(k.grid[0] == tiles);
  CHECK(k.persistent_blocks_per_sm == 1);
  CHECK(cutune_loader::LoadedKernel::grid_for(k, 4)[0] == 4);
  CHECK(cutune_loader::LoadedKernel::grid_for(k, 1000)[0] == tiles);
  // Another kernel's grid is its own on any GPU.
  cutune_loader::KernelManifest plain = k;
  plain.persistent_blocks_per_sm = 0;
  CHECK(cutune_loader::LoadedKernel::grid_for(plain, 4)[0] == tiles);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a cluster kernel's manifest carries the cluster, and the loader keeps whole clusters",
          "[export][cluster]") {
  // The cluster shape is compiled into the cubin (__cluster_dims__), so a plain launch makes
  // the clusters; the manifest says it, and a persistent grid stays a multiple of it.
  const std::vector<int64_t> shape = {1024, 1024, 256};
  auto tmpl = make_template("gemm_fp16", shape, "gemm_fp16_wgmma_nt");
  const std::vector<Config> refs = tmpl->reference_configs();
  auto it = std::find_if(refs.begin(), refs.end(),
                         [](const Config& c) { return c.get("cluster_m") == 2; });
  REQUIRE(it != refs.end());
  REQUIRE(it->get("persistent") == 1);
  const auto dir = fresh_dir("export_cluster");
  const auto kernels = export_wgmma_record(dir, shape, it->index());
  const cutune_loader::KernelManifest& k = kernels[0];
  CHECK(k.cluster_x == 2);
  CHECK(k.raw.at("cluster") == nlohmann::json::array({2, 1, 1}));
  CHECK(k.grid[0] % 2 == 0);
  CHECK(cutune_loader::LoadedKernel::grid_for(k, 7)[0] == 6);
  CHECK(cutune_loader::LoadedKernel::grid_for(k, 1)[0] == 2);
  std::ifstream cu(dir / "out" / (k.name + ".cu"));
  const std::string source((std::istreambuf_iterator<char>(cu)), std::istreambuf_iterator<char>());
  CHECK(source.find("__cluster_dims__(2, 1, 1)") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a kernel with a fused epilogue is exported with its text and extra arguments",
          "[export][epilogue]") {
  // The manifest says the epilogue; bias and residual are pointer params after A and B, alpha
  // and beta float32 scalars after the buffers, C read as well as written (beta).
  const std::vector<int64_t> shape = {256, 128, 64};
  const std::string name = "gemm_fp16_wgmma_nt_ep_alpha_beta_bias_gelu_residual";
  auto tmpl = make_template("gemm_fp16", shape, name);
  const std::vector<Config> refs = tmpl->reference_configs();
  REQUIRE_FALSE(refs.empty());
  const auto dir = fresh_dir("export_epilogue");
  {
    LogWriter w(dir / "log.jsonl");
    Record r = gemm_record(refs.front().index(), 1e-5, MeasureStatus::ok);
    r.task = {"gemm_fp16", shape, "float32", "sm_90", "NVIDIA H200", name};
    w.append(r);
  }
  REQUIRE(export_log(dir / "log.jsonl", dir / "out").written.size() == 1);
  const auto kernels = cutune_loader::read_manifest((dir / "out").string());
  REQUIRE(kernels.size() == 1);
  const cutune_loader::KernelManifest& k = kernels[0];
  CHECK(k.epilogue == "alpha,beta,bias,gelu,residual");
  CHECK(k.raw.at("task").at("template") == name);
  std::vector<std::string> names;
  for (const cutune_loader::Param& p : k.params)
    if (!p.is_tensor_map) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"C", "A", "B", "bias", "residual", "alpha", "beta"});
  auto param = [&](const std::string& n) {
    return *std::find_if(k.params.begin(), k.params.end(),
                         [&](const cutune_loader::Param& p) { return p.name == n; });
  };
  CHECK(param("C").initial);
  CHECK_FALSE(param("C").zero_init);
  CHECK(param("bias").elements == 128);
  CHECK(param("bias").type == "float16");
  CHECK(param("residual").elements == 256 * 128);
  CHECK_FALSE(param("alpha").pointer);
  CHECK(param("alpha").type == "float32");
  CHECK(param("beta").bytes == 4);
  std::filesystem::remove_all(dir);
}
