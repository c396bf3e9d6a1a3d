#include "src/runtime/nvrtc_builder.h"

#include <catch2/catch.hpp>

#include <stdexcept>

#include "tests/runtime/test_kernels.h"

using namespace cutune;

namespace {

bool is_elf(const std::vector<char>& image) {
  return image.size() > 4 && image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' &&
         image[3] == 'F';
}

}  // namespace

TEST_CASE("a valid kernel compiles to an sm_90 cubin with a ptxas report", "[nvrtc]") {
  NvrtcBuilder builder(BuildOptions{});
  const CompileResult result = builder.compile(test::axpy_source());
  INFO(result.log);
  REQUIRE(result.status == CompileStatus::ok);
  CHECK(is_elf(result.cubin));
  CHECK(result.ptxas.parsed);
  CHECK(result.ptxas.registers > 0);
  CHECK_FALSE(result.ptxas.spills());
  CHECK_FALSE(result.from_cache);
  CHECK(result.seconds > 0);
  const Cubin cubin = result.to_cubin();
  CHECK(cubin.kernel_name == "axpy");
  CHECK(cubin.arch == "sm_90");
  CHECK(cubin.image == result.cubin);
}

TEST_CASE("a syntax error is a compile_error result carrying the log", "[nvrtc]") {
  NvrtcBuilder builder(BuildOptions{});
  CompileResult result;
  REQUIRE_NOTHROW(result = builder.compile(test::syntax_error_source()));
  CHECK(result.status == CompileStatus::compile_error);
  CHECK_FALSE(result.ok());
  CHECK(result.cubin.empty());
  CHECK(result.log.find("error") != std::string::npos);
  CHECK(result.log.find("expected an expression") != std::string::npos);
  CHECK_FALSE(result.ptxas.parsed);
}

TEST_CASE("too much static shared memory is the candidate's compile_error", "[nvrtc]") {
  CudaSource source;
  source.kernel_name = "greedy";
  source.code =
      "extern \"C\" __global__ void greedy(float* y) {\n"
      "  __shared__ float s[100000];\n"
      "  s[threadIdx.x] = y[threadIdx.x];\n"
      "  __syncthreads();\n"
      "  y[threadIdx.x] = s[(threadIdx.x + 1) % 100000];\n"
      "}\n";
  NvrtcBuilder builder(BuildOptions{});
  const CompileResult result = builder.compile(source);
  CHECK(result.status == CompileStatus::compile_error);
  CHECK_FALSE(result.log.empty());
}

TEST_CASE("local memory shows as a stack frame, and spills under a register cap", "[nvrtc]") {
  NvrtcBuilder plain(BuildOptions{});
  const CompileResult local = plain.compile(test::local_memory_source());
  INFO(local.log);
  REQUIRE(local.ok());
  REQUIRE(local.ptxas.parsed);
  CHECK(local.ptxas.stack_frame_bytes >= 1024);

  BuildOptions capped;
  capped.extra_flags = {"--maxrregcount=24"};
  NvrtcBuilder tight(capped);
  const CompileResult spilled = tight.compile(test::local_memory_source());
  INFO(spilled.log);
  REQUIRE(spilled.ok());
  CHECK(spilled.ptxas.registers <= 24);
  CHECK(spilled.ptxas.spills());
}

TEST_CASE("batch compile on 2 jobs keeps input order", "[nvrtc]") {
  NvrtcBuilder builder(BuildOptions{}, 2);
  std::vector<CudaSource> sources = {test::axpy_source("k0", 1.0f), test::syntax_error_source(),
                                     test::axpy_source("k2", 3.0f), test::axpy_source("k3", 4.0f),
                                     test::axpy_source("k4", 5.0f)};
  const std::vector<CompileResult> results = builder.compile_batch(sources);
  REQUIRE(results.size() == sources.size());
  for (size_t i = 0; i < results.size(); ++i) {
    CHECK(results[i].kernel_name == sources[i].kernel_name);
    CHECK(results[i].ok() == (i != 1));
  }
  // Each cubin holds its own kernel's name.
  for (size_t i : {0, 2, 3, 4}) {
    const std::string& name = sources[i].kernel_name;
    const std::string image(results[i].cubin.begin(), results[i].cubin.end());
    CHECK(image.find(name) != std::string::npos);
  }
  CHECK(builder.compile_batch({}).empty());
}

TEST_CASE("options shape the flag list", "[nvrtc]") {
  BuildOptions options;
  options.use_fast_math = true;
  options.line_info = true;
  options.extra_flags = {"-DFOO=1"};
  NvrtcBuilder builder(options);
  const std::vector<std::string> expected = {
      "--gpu-architecture=sm_90", "-std=c++17", "-default-device", "--ptxas-options=-v",
      "--use_fast_math",          "-lineinfo",  "-DFOO=1"};
  CHECK(builder.flags() == expected);
}

TEST_CASE("unsupported architectures and job counts are user errors", "[nvrtc]") {
  BuildOptions bad;
  bad.arch = "sm_13";
  CHECK_THROWS_AS(NvrtcBuilder(bad), std::invalid_argument);
  bad.arch = "compute_90";
  CHECK_THROWS_AS(NvrtcBuilder(bad), std::invalid_argument);
  bad.arch = "sm_90x";
  CHECK_THROWS_AS(NvrtcBuilder(bad), std::invalid_argument);
  CHECK_THROWS_AS(NvrtcBuilder(BuildOptions{}, 0), std::invalid_argument);

  BuildOptions feature;
  feature.arch = "sm_90a";
  NvrtcBuilder builder(feature);
  CHECK(builder.compile(test::axpy_source()).ok());
}

TEST_CASE("nvrtc version string is major.minor", "[nvrtc]") {
  const std::string version = nvrtc_version_string();
  CHECK(version.find('.') != std::string::npos);
  CHECK_FALSE(nvrtc_supported_archs().empty());
}
