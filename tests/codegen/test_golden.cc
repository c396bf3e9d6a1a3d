// One golden .cu per GEMM template: the generated source of fixed configurations on fixed
// shapes, compared exactly. Regenerate after an intended change with
//   CUTUNE_UPDATE_GOLDEN=1 ctest -R test_codegen
// and review the diff of tests/codegen/golden/.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "src/lower/lower.h"
#include "src/runtime/nvrtc_builder.h"

using namespace cutune;

namespace {

struct Golden {
  const char* file;
  const char* layout;
  std::vector<int64_t> shape;
  const char* config;  // "ref0" or the knobs as JSON
};

// The reference configuration on a tile-aligned shape, and a scalar-load configuration
// (no double buffering, no K unrolling) on an odd shape that needs every tail guard.
const char* kScalarConfig =
    R"({"knobs":{"block_m":64,"block_n":32,"block_k":8,"thread_m":4,"thread_n":2,"warp_n":4,)"
    R"("frag_m":2,"frag_n":2,"vec_load":1,"smem_pad":0,"double_buffer":0,"unroll_k":0}})";

const std::vector<Golden>& goldens() {
  static const std::vector<Golden> g = {
      {"gemm_nn_256x256x256_ref0.cu", "gemm_nn", {256, 256, 256}, "ref0"},
      {"gemm_nt_256x256x256_ref0.cu", "gemm_nt", {256, 256, 256}, "ref0"},
      {"gemm_nn_127x255x63_scalar.cu", "gemm_nn", {127, 255, 63}, kScalarConfig},
      {"gemm_nt_127x255x63_scalar.cu", "gemm_nt", {127, 255, 63}, kScalarConfig},
  };
  return g;
}

std::string golden_path(const Golden& g) {
  return std::string(CUTUNE_SOURCE_DIR) + "/tests/codegen/golden/" + g.file;
}

CudaSource generate(const Golden& g) {
  auto tmpl = make_template("gemm", g.shape, g.layout);
  Config config = std::string(g.config) == "ref0"
                      ? tmpl->reference_configs().at(0)
                      : tmpl->space().from_json(nlohmann::json::parse(g.config));
  INFO("config: " << config.to_string());
  REQUIRE(tmpl->space().is_valid(config));
  Lowered l = lower(*tmpl, config, ir::TargetLimits{});
  for (const std::string& e : l.verify.errors) INFO(e);
  REQUIRE(l.ok());
  return *l.source;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first line where a and b differ, for the failure message.
std::string first_difference(const std::string& actual, const std::string& expected) {
  std::istringstream a(actual), e(expected);
  std::string la, le;
  for (int line = 1;; ++line) {
    bool more_a = bool(std::getline(a, la)), more_e = bool(std::getline(e, le));
    if (!more_a && !more_e) return "no difference";
    if (!more_a || !more_e || la != le) {
      return "line " + std::to_string(line) + ":\n  actual:   " + (more_a ? la : "<end>") +
             "\n  expected: " + (more_e ? le : "<end>");
    }
  }
}

void check_golden(const Golden& g) {
  CudaSource src = generate(g);
  const std::string path = golden_path(g);
  const char* update = std::getenv("CUTUNE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << src.code;
    WARN("rewrote " << path);
    return;
  }
  std::string expected = read_file(path);
  INFO("golden file: " << path << " (CUTUNE_UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE_FALSE(expected.empty());
  INFO("first difference at " << first_difference(src.code, expected));
  CHECK(src.code == expected);
}

}  // namespace

TEST_CASE("golden: gemm_nn reference configuration on 256x256x256", "[codegen][golden]") {
  check_golden(goldens()[0]);
}

TEST_CASE("golden: gemm_nt reference configuration on 256x256x256", "[codegen][golden]") {
  check_golden(goldens()[1]);
}

TEST_CASE("golden: gemm_nn scalar-load configuration on 127x255x63", "[codegen][golden]") {
  check_golden(goldens()[2]);
}

TEST_CASE("golden: gemm_nt scalar-load configuration on 127x255x63", "[codegen][golden]") {
  check_golden(goldens()[3]);
}

TEST_CASE("golden: the reference configuration's launch on 256x256x256", "[codegen][golden]") {
  CudaSource src = generate(goldens()[0]);
  CHECK(src.kernel_name == "gemm_nn");
  CHECK(src.launch.grid == Dim3{2, 2, 1});
  CHECK(src.launch.block == Dim3{256, 1, 1});
  // Two stages of an 8 x (128 + 4) tile for each of A and B.
  CHECK(src.launch.static_smem_bytes == 2 * 2 * 8 * 132 * 4);
  CHECK(src.launch.dynamic_smem_bytes == 0);
}

TEST_CASE("golden: every golden file compiles with NVRTC for sm_90", "[codegen][golden][nvrtc]") {
  std::vector<CudaSource> sources;
  for (const Golden& g : goldens()) {
    CudaSource src = generate(g);
    std::string code = read_file(golden_path(g));
    REQUIRE_FALSE(code.empty());
    src.code = code;
    sources.push_back(src);
  }
  NvrtcBuilder builder(BuildOptions{}, 2);
  std::vector<CompileResult> results = builder.compile_batch(sources);
  for (size_t i = 0; i < results.size(); ++i) {
    INFO(goldens()[i].file << ":\n" << results[i].log);
    CHECK(results[i].ok());
    CHECK_FALSE(results[i].ptxas.spills());
  }
}
