// The commands work on small shapes, in text and as JSON.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;
using nlohmann::json;

namespace {

json parse_stdout(const CliRun& r) {
  INFO_RUN(r);
  REQUIRE(r.status == 0);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  return j;
}

}  // namespace

TEST_CASE("cli: ops lists each computation's families and what they support", "[cli]") {
  CliRun text = run_cutune("ops");
  INFO_RUN(text);
  CHECK(text.status == 0);
  CHECK(text.err.empty());
  // By computation, each family with its combinations and the template name each has in logs.
  CHECK_THAT(text.out,
             Catch::Matches(R"([\s\S]*gemm --shape M,N,K\n  --family simt: [^\n]*\n[\s\S]*)"));
  CHECK_THAT(text.out, Catch::Matches(R"([\s\S]*\n    fp32 +fp32 +nt +gemm_nt\n[\s\S]*)"));
  CHECK_THAT(
      text.out,
      Catch::Matches(R"([\s\S]*\n  --family wgmma: [^\n]*\(the default on sm_90\)\n[\s\S]*)"));
  CHECK_THAT(
      text.out,
      Catch::Matches(
          R"([\s\S]*\n    bf16 +fp32 +nhwc +conv2d_bf16_wgmma_nhwc +default on sm_90\n[\s\S]*)"));

  json j = parse_stdout(run_cutune("ops --json"));
  REQUIRE(j.is_array());
  std::vector<std::string> computations;
  for (const json& c : j) computations.push_back(c["computation"]);
  CHECK(computations == std::vector<std::string>{"conv2d", "depthwise_conv2d", "gemm"});
  const json& gemm = j[2];
  CHECK(gemm["shape"] == "M,N,K");
  REQUIRE(gemm["families"].size() == 3);
  const json& simt = gemm["families"][0];
  CHECK(simt["family"] == "simt");
  CHECK_FALSE(simt.contains("native_arch"));
  CHECK(simt["supported"] == json::parse(R"([
      {"dtype": "fp32", "out_dtype": "fp32", "layout": "nn", "template": "gemm_nn",
       "operator": "gemm", "default": "default"},
      {"dtype": "fp32", "out_dtype": "fp32", "layout": "nt", "template": "gemm_nt",
       "operator": "gemm"}])"));
  CHECK(gemm["families"][1]["supported"][0]["default"] == "default off sm_90");
  const json& wgmma = gemm["families"][2];
  CHECK(wgmma["family"] == "wgmma");
  CHECK(wgmma["native_arch"] == "sm_90");
  CHECK(wgmma["supported"].size() == 8);
  CHECK(wgmma["supported"][0]["template"] == "gemm_fp16_wgmma_nn");
  CHECK(wgmma["supported"][0]["default"] == "default on sm_90");
}

TEST_CASE("cli: an operator is a computation and its task parameters", "[cli]") {
  // --dtype, --layout, --out-dtype and --family name a template; what is not given is the
  // operator's default's for the target; the operator names of before fix the dtype.
  auto kernel = [](const std::string& args) {
    const CliRun r = run_cutune("show " + args + " --config 0 --json");
    INFO_RUN(r);
    REQUIRE(r.status == 0);
    return parse_stdout(r)["kernel_name"].get<std::string>();
  };
  CHECK(kernel("gemm --shape 64,64,64 --arch sm_90") == "gemm_nn");
  CHECK(kernel("gemm --shape 64,64,64 --layout nt") == "gemm_nt");
  CHECK(kernel("gemm --shape 64,64,64 --dtype fp16 --layout nt --arch sm_90") ==
        "gemm_fp16_wgmma_nt");
  CHECK(kernel("gemm --shape 64,64,64 --dtype fp16 --layout nt --arch sm_86") == "gemm_fp16_nt");
  CHECK(kernel("gemm --shape 64,64,64 --dtype bf16 --family mma --out-dtype bf16 --arch sm_90") ==
        "gemm_bf16_nn_out16");
  CHECK(kernel("gemm_fp16 --shape 64,64,64 --layout nt --family mma") == "gemm_fp16_nt");
  CHECK(kernel("conv2d --shape 1,8,8,8,8,3,3 --dtype fp16 --arch sm_90") ==
        "conv2d_fp16_wgmma_nhwc");
  CHECK(kernel("conv2d --shape 1,8,8,8,8,3,3 --layout nhwc") == "conv2d_nhwc");
  // A template named with parameters that agree is kept.
  CHECK(kernel("gemm --shape 64,64,64 --dtype fp16 --template gemm_fp16_nt --layout nt") ==
        "gemm_fp16_nt");
  // The computation takes any of its templates by name (the template fixes the rest).
  CHECK(kernel("gemm --shape 64,64,64 --template gemm_bf16_wgmma_nt") == "gemm_bf16_wgmma_nt");
  // What no template has, or a template that contradicts a parameter: one line, exit 2.
  CHECK_ONE_LINE_ERROR(run_cutune("show gemm --shape 64,64,64 --family wgmma --config 0"), 2,
                       "gemm has no template with family wgmma");
  CHECK_ONE_LINE_ERROR(
      run_cutune("show conv2d --shape 1,8,8,8,8,3,3 --dtype fp16 --layout nchw --config 0"), 2,
      "conv2d has no template with dtype fp16, layout nchw (dtype/out-dtype/layout/family: "
      "fp16/fp32/nhwc/mma, fp16/fp16/nhwc/mma, fp16/fp32/nhwc/wgmma, fp16/fp16/nhwc/wgmma)");
  CHECK_ONE_LINE_ERROR(
      run_cutune("show depthwise_conv2d --shape 1,8,8,8,3,3 --dtype fp16 --config 0"), 2,
      "depthwise_conv2d has no template for --dtype fp16");
  CHECK_ONE_LINE_ERROR(
      run_cutune("show gemm --shape 64,64,64 --template gemm_nt --layout nn --config 0"), 2,
      "template gemm_nt has layout nt; asked: layout nn");
  CHECK_ONE_LINE_ERROR(run_cutune("show gemm_fp16 --shape 64,64,64 --dtype bf16 --config 0"), 2,
                       "gemm_fp16 is fp16");
  CHECK_ONE_LINE_ERROR(run_cutune("show gemm --shape 64,64,64 --dtype fp8 --config 0"), 2,
                       "--dtype");
}

TEST_CASE("cli: an operator's default template follows the target architecture", "[cli]") {
  // On Hopper the 16-bit operators default to their wgmma templates (same layouts and output
  // type); elsewhere to mma.sync; a named template is kept. (default_template itself:
  // test_gemm_space.)
  json j =
      parse_stdout(run_cutune("show gemm_fp16 --shape 64,64,64 --arch sm_90 --config 0 --json"));
  CHECK(j["kernel_name"] == "gemm_fp16_wgmma_nn");
  j = parse_stdout(run_cutune("show gemm_fp16 --shape 64,64,64 --arch sm_86 --config 0 --json"));
  CHECK(j["kernel_name"] == "gemm_fp16_nn");
  j = parse_stdout(run_cutune(
      "show gemm_fp16 --shape 64,64,64 --arch sm_90 --template gemm_fp16_nt --config 0 --json"));
  CHECK(j["kernel_name"] == "gemm_fp16_nt");
}

TEST_CASE("cli: space --json describes the knobs and counts", "[cli]") {
  json j = parse_stdout(run_cutune("space gemm --shape 64,64,64 --json"));
  CHECK(j["template"] == "gemm_nn");
  CHECK(j["shape"] == json({64, 64, 64}));
  CHECK(j["size"] == 10800000);
  REQUIRE(j["valid"].is_number());
  CHECK(j["valid"].get<uint64_t>() > 0);
  CHECK(j["valid"].get<uint64_t>() < 10800000);
  CliRun text = run_cutune("space gemm --shape 64,64,64");
  INFO_RUN(text);
  CHECK_THAT(text.out, Catch::Contains("space size: 10800000 configurations"));
  CHECK_THAT(text.out, Catch::Contains("block_m"));
}

TEST_CASE("cli: space lists the template's reference configurations", "[cli]") {
  // The classic 128x128 SGEMM and the 64x64 one fit 256^3; each is listed with its index and
  // knobs, in the order the tuner measures them, and the index names those knobs.
  json j = parse_stdout(run_cutune("space gemm --shape 256,256,256 --json"));
  REQUIRE(j["references"].size() == 2);
  const json& first = j["references"][0];
  CHECK(first["knobs"]["block_m"] == 128);
  CHECK(first["knobs"]["thread_m"] == 8);
  CHECK(j["references"][1]["knobs"]["block_m"] == 64);
  const std::string index = std::to_string(first["index"].get<uint64_t>());
  json shown = parse_stdout(run_cutune("show gemm --shape 256,256,256 --json --config " + index));
  CHECK(shown["config"]["knobs"] == first["knobs"]);
  CliRun text = run_cutune("space gemm --shape 256,256,256");
  INFO_RUN(text);
  CHECK_THAT(text.out, Catch::Contains("reference configurations (cutune show --config INDEX): " +
                                       index + ", "));
  // A shape no reference fits says so (their channel tiles do not fit 2 output channels).
  CHECK_THAT(run_cutune("space conv2d --shape 1,3,5,5,2,3,3").out,
             Catch::Contains("no reference configurations for this shape"));
}

TEST_CASE("cli: show --json gives the IR, the CUDA source and the launch", "[cli]") {
  json j = parse_stdout(run_cutune("show gemm --shape 64,64,64 --config 0 --json"));
  CHECK(j["config"]["index"] == 0);
  CHECK(j["constraint_violation"].is_null());
  CHECK(j["verifier_errors"].empty());
  CHECK(j["kernel_name"] == "gemm_nn");
  CHECK_THAT(j["ir"].get<std::string>(), Catch::StartsWith("kernel gemm_nn("));
  CHECK_THAT(j["cuda"].get<std::string>(), Catch::Contains("extern \"C\" __global__"));
  CHECK(j["launch"]["grid"] == json({4, 4, 1}));
  CHECK(j["launch"]["block"] == json({256, 1, 1}));

  CliRun text = run_cutune("show gemm --shape 64,64,64 --config 0");
  INFO_RUN(text);
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("/* IR") && Catch::Contains("__global__"));
}

TEST_CASE("cli: show accepts a configuration as JSON, and reports violations", "[cli]") {
  json j = parse_stdout(run_cutune(
      "show gemm --shape 256,256,256 --template gemm_nt --json --config "
      "'{\"knobs\":{\"block_m\":128,\"block_n\":128,\"block_k\":8,\"thread_m\":8,\"thread_n\":8,"
      "\"warp_n\":8,\"frag_m\":4,\"frag_n\":4,\"vec_load\":4,\"smem_pad\":4,\"double_buffer\":1,"
      "\"unroll_k\":1}}'"));
  CHECK(j["kernel_name"] == "gemm_nt");
  CHECK(j["launch"]["grid"] == json({2, 2, 1}));
  // The last index (every knob at its last value) has 16x16 accumulators per thread.
  json k = parse_stdout(run_cutune("show gemm --shape 64,64,64 --config 4049999 --json"));
  CHECK(k["config"]["index"] == 4049999);
  CHECK(k["constraint_violation"].is_string());
}

TEST_CASE("cli: compile --json reports the outcome of a small sample", "[cli][nvrtc]") {
  json j =
      parse_stdout(run_cutune("compile gemm --shape 64,64,64 --sample 3 --jobs 2 --seed 7 --json"));
  for (const char* key : {"sampled", "rejected", "compiled", "failed", "configs_per_second"}) {
    INFO(key);
    CHECK(j.contains(key));
  }
  CHECK(j["sampled"] == 3);
  CHECK(j["failed"] == 0);
  CHECK(j["compiled"].get<int>() + j["rejected"].get<int>() == 3);
  CHECK(j["configs_per_second"].get<double>() > 0);
  CHECK(j["arch"] == "sm_90");
}

TEST_CASE("cli: verify --json runs configurations in the emulator", "[cli][emulator]") {
  json j = parse_stdout(run_cutune("verify gemm --shape 33,17,9 --sample 2 --seed 3 --json"));
  REQUIRE(j["results"].is_array());
  REQUIRE(j["results"].size() == 2);
  for (const json& r : j["results"]) {
    INFO(r.dump());
    CHECK(r["config"].contains("knobs"));
    CHECK(r["passed"] == true);
    REQUIRE(r["max_rel_error"].is_number());
    CHECK(r["max_rel_error"].get<double>() < 1e-4);
  }
  CliRun text = run_cutune("verify gemm --shape 33,17,9 --sample 1 --seed 3");
  INFO_RUN(text);
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("1 of 1 passed"));
}
