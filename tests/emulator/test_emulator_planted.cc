// Bugs planted in the generated CUDA of valid configurations of three templates (the fp32
// GEMM, conv2d_nchw, and the tensor-core GEMM with cp.async and ldmatrix): a barrier removed,
// a shared index off by one, a global read at index -1. The sanitizer must catch each with the
// right status, array and source line; the unmodified kernels pass.

#include <catch2/catch.hpp>

#include <random>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"

using namespace cutune;
using Catch::Matchers::Contains;

namespace {

emu::Emulator& emulator() {
  // One host thread: the first block's thread 0 meets a bug first, as in these expectations.
  static emu::Emulator e([] {
    emu::EmulatorOptions o;
    o.host_threads = 1;
    return o;
  }());
  return e;
}

struct Kernel {
  std::unique_ptr<Template> tmpl;
  CudaSource source;
};

Kernel lowered(const std::string& op, std::vector<int64_t> shape, const std::string& name,
               const Config& (*pick)(const Template&, Config&), Config storage = {}) {
  Kernel k{make_template(op, shape, name), {}};
  const Config& c = pick(*k.tmpl, storage);
  Lowered l = lower(*k.tmpl, c, ir::TargetLimits{});
  REQUIRE(l.ok());
  k.source = *l.source;
  return k;
}

Kernel gemm_fp32() {
  return lowered(
      "gemm", {127, 255, 63}, "gemm_nn", [](const Template& t, Config& c) -> const Config& {
        c = t.space().from_json(nlohmann::json::parse(
            R"({"knobs":{"block_m":64,"block_n":32,"block_k":8,"thread_m":4,"thread_n":2,"warp_n":4,)"
            R"("frag_m":2,"frag_n":2,"vec_load":1,"smem_pad":0,"double_buffer":0,"unroll_k":0}})"));
        return c;
      });
}

Kernel conv2d_nchw() {
  return lowered("conv2d", {2, 3, 9, 11, 5, 3, 3, 1, 1}, "conv2d_nchw",
                 [](const Template& t, Config& c) -> const Config& {
                   c = t.space().from_json(nlohmann::json::parse(
                       R"({"knobs":{"auto_unroll_max_step":0,"inner_f":1,"inner_x":2,"inner_y":2,)"
                       R"("rc_inner":1,"thread_f":4,"thread_x":8,"thread_y":8,"tile_rx":[1,3],)"
                       R"("tile_ry":[3,1],"vthread_f":2,"vthread_x":1,"vthread_y":1}})"));
                   return c;
                 });
}

Kernel gemm_fp16() {
  return lowered(
      "gemm_fp16", {128, 72, 40}, "gemm_fp16_nn",
      [](const Template& t, Config& c) -> const Config& {
        c = t.space().from_json(nlohmann::json::parse(
            R"({"knobs":{"block_m":64,"block_n":64,"block_k":32,"warp_m":32,"warp_n":32,)"
            R"("stages":3,"smem_layout":2,"copy_bytes":16,"ldmatrix":1,"raster_group":4,)"
            R"("split_k":1,"epilogue_vec":2}})"));
        return c;
      });
}

// Replaces every occurrence of `from` in the code with `to`; returns the (1-based) lines changed.
std::set<int> plant(CudaSource& src, const std::string& from, const std::string& to,
                    bool first_only = false) {
  std::set<int> lines;
  std::string& code = src.code;
  for (size_t at = code.find(from); at != std::string::npos; at = code.find(from, at + to.size())) {
    lines.insert(1 + static_cast<int>(std::count(code.begin(), code.begin() + at, '\n')));
    code.replace(at, from.size(), to);
    if (first_only) break;
  }
  REQUIRE(!lines.empty());
  return lines;
}

std::set<int> lines_in(const std::string& message) {
  std::set<int> lines;
  std::regex re("line (\\d+)");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), re);
       it != std::sregex_iterator(); ++it) {
    lines.insert(std::stoi((*it)[1]));
  }
  return lines;
}

std::string line_text(const std::string& code, int line) {
  std::istringstream in(code);
  std::string l;
  for (int i = 0; i < line && std::getline(in, l); ++i) {
  }
  return l;
}

EmulatedCheck run(const Kernel& k, const CudaSource& src) {
  return check_source_in_emulator(*k.tmpl, src, emulator(), 2e-5);
}

void require_clean(const Kernel& k) {
  EmulatedCheck r = run(k, k.source);
  INFO(r.status << ": " << r.message);
  REQUIRE(r.passed);
}

// Without the barrier that follows the shared stores, the reads race with other threads'
// writes: a race on a shared array, both lines shared-memory accesses.
void require_race_without_barrier(const Kernel& k) {
  CudaSource buggy = k.source;
  plant(buggy, "__syncthreads();\n", "\n", true);
  EmulatedCheck r = run(k, buggy);
  INFO(r.message);
  REQUIRE(r.status == "race");
  REQUIRE_THAT(r.message, Contains("data race on shared") && Contains("_shared["));
  std::set<int> lines = lines_in(r.message);
  REQUIRE(lines.size() >= 1);
  for (int l : lines) {
    INFO("line " << l << ": " << line_text(buggy.code, l));
    REQUIRE_THAT(line_text(buggy.code, l), Contains("_shared["));
  }
}

void require_caught(const Kernel& k, const std::string& from, const std::string& to,
                    const std::string& status, const std::string& element) {
  CudaSource buggy = k.source;
  std::set<int> planted = plant(buggy, from, to);
  EmulatedCheck r = run(k, buggy);
  INFO(r.message);
  REQUIRE(r.status == status);
  REQUIRE_THAT(r.message, Contains(element));
  std::set<int> reported = lines_in(r.message);
  REQUIRE(reported.size() == 1);
  REQUIRE(planted.count(*reported.begin()) == 1);
}

}  // namespace

TEST_CASE("fp32 GEMM: the unmodified kernel is clean, each planted bug is caught",
          "[emulator][sanitizer]") {
  Kernel k = gemm_fp32();
  require_clean(k);
  require_race_without_barrier(k);
  require_caught(k, "A_shared[tx % 8 * 64 + a_ld * 32 + tx / 8] =",
                 "A_shared[tx % 8 * 64 + a_ld * 32 + tx / 8 + 1] =", "shared_out_of_bounds",
                 "write to shared A_shared[512] (A_shared has 512 elements)");
  require_caught(k, "= A[by * 4032", "= A[-1 + by * 4032", "out_of_bounds",
                 "read of A[-1] (A has 8001 elements) by block (0,0,0) thread (0,0,0)");
}

TEST_CASE("conv2d_nchw: the unmodified kernel is clean, each planted bug is caught",
          "[emulator][sanitizer]") {
  Kernel k = conv2d_nchw();
  require_clean(k);
  require_race_without_barrier(k);
  require_caught(k, "Input_shared[in_ld * 256 + tx] =", "Input_shared[in_ld * 256 + tx + 1] =",
                 "shared_out_of_bounds",
                 "write to shared Input_shared[288] (Input_shared has 288 elements)");
  require_caught(k, "= Filter[f_block * 216", "= Filter[-1 + f_block * 216", "out_of_bounds",
                 "read of Filter[-1] (Filter has 135 elements) by block (0,0,0) thread (0,0,0)");
}

TEST_CASE("tensor-core GEMM (cp.async, ldmatrix, mma): clean, each planted bug is caught",
          "[emulator][sanitizer]") {
  Kernel k = gemm_fp16();
  require_clean(k);
  require_race_without_barrier(k);
  // cp.async copies 16 aligned bytes: the destination index is off by one 16-byte chunk (8
  // halves), downwards, which puts thread 0's first copy before the array.
  require_caught(k, "cutune_cp_async_16(&A_shared[a_cp * 1024",
                 "cutune_cp_async_16(&A_shared[-8 + a_cp * 1024", "shared_out_of_bounds",
                 "write to shared A_shared[-8] (A_shared has 6144 elements) by block (0,0,0) "
                 "thread (0,0,0)");
  // Off by one 16-byte row in the ldmatrix of the next slice's first fragments (after the
  // loop's barrier): it reads past that slot into the third ring slot, which K = 40 (two
  // slices) never fills, and is reported as the uninitialised read it is.
  {
    CudaSource buggy = k.source;
    std::set<int> planted =
        plant(buggy, "cutune_ldmatrix_x4(&A_frag[i * 4], &A_shared[stage_ring[0] * 2048",
              "cutune_ldmatrix_x4(&A_frag[i * 4], &A_shared[8 + stage_ring[0] * 2048");
    EmulatedCheck r = run(k, buggy);
    INFO(r.message);
    REQUIRE(r.status == "uninitialized_read");
    REQUIRE_THAT(r.message, Contains("A_shared[4096]") && Contains("no thread of the block wrote"));
    REQUIRE(lines_in(r.message).count(*planted.begin()) == 1);
  }
  require_caught(k, "&A[tile_m * 2560 + a_cp * 1280", "&A[-1 + tile_m * 2560 + a_cp * 1280",
                 "out_of_bounds",
                 "read of A[-1] (A has 5120 elements) by block (0,0,0) thread (0,0,0)");
}
