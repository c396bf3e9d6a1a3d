// Bad input to `cutune` gives one line on stderr, nothing on stdout, and exit code 2.

#include <catch2/catch.hpp>

#include "tests/cli/cli_run.h"

using cutune::test::CliRun;
using cutune::test::run_cutune;

namespace {

#define CHECK_USAGE_ERROR(args, needle)                \
  do {                                                 \
    CliRun r_ = run_cutune(args);                      \
    INFO_RUN(r_);                                      \
    CHECK(r_.status == 2);                             \
    CHECK(r_.err_lines() == 1);                        \
    CHECK(r_.out.empty());                             \
    CHECK_THAT(r_.err, Catch::StartsWith("cutune: ")); \
    CHECK_THAT(r_.err, Catch::Contains(needle));       \
  } while (0)

const char* kShow = "show gemm --shape 64,64,64 ";

}  // namespace

TEST_CASE("cli: an unknown operator", "[cli]") {
  CHECK_USAGE_ERROR("space conv9 --shape 1,2,3", "unknown operator 'conv9'");
  CHECK_USAGE_ERROR("show matmul --shape 4,4,4 --config 0", "unknown operator 'matmul'");
  CHECK_USAGE_ERROR("space gemm --shape 4,4,4 --template gemm_tt", "unknown template 'gemm_tt'");
}

TEST_CASE("cli: zero, negative or non-numeric sizes", "[cli]") {
  CHECK_USAGE_ERROR("space gemm --shape 0,4,4", "gemm needs M, N, K >= 1");
  CHECK_USAGE_ERROR("space gemm --shape=-1,4,4", "sizes must not be negative");
  CHECK_USAGE_ERROR("space gemm --shape 4,-4,4", "bad shape");
  CHECK_USAGE_ERROR("space gemm --shape a,b,c", "bad shape 'a,b,c'");
  CHECK_USAGE_ERROR("space gemm --shape 4,,4", "bad shape");
  CHECK_USAGE_ERROR("verify gemm --shape 4,4,1.5 --sample 1", "bad shape");
}

TEST_CASE("cli: the wrong number of sizes", "[cli]") {
  CHECK_USAGE_ERROR("space gemm --shape 4,4", "3 sizes");
  CHECK_USAGE_ERROR("space gemm --shape 4,4,4,4", "3 sizes");
}

TEST_CASE("cli: a configuration index out of range", "[cli]") {
  CHECK_USAGE_ERROR(std::string(kShow) + "--config 10800000", "10800000");
  CHECK_USAGE_ERROR(std::string(kShow) + "--config 99999999999999", "99999999999999");
  CHECK_USAGE_ERROR(std::string(kShow) + "--config '{\"index\": 10800000}'", "10800000");
}

TEST_CASE("cli: malformed configuration JSON", "[cli]") {
  CHECK_USAGE_ERROR(std::string(kShow) + "--config '{\"knobs\":'", "bad --config");
  CHECK_USAGE_ERROR(std::string(kShow) + "--config 'block_m=64'", "bad --config");
  CHECK_USAGE_ERROR(std::string(kShow) + "--config -1", "");
  CHECK_USAGE_ERROR(std::string(kShow) + "--config '[1, 2]'", "");
  CHECK_USAGE_ERROR(std::string(kShow) + "--config '{\"knobs\": {\"block_m\": 64}}'", "");
}

TEST_CASE("cli: configuration JSON with an unknown knob or value", "[cli]") {
  CHECK_USAGE_ERROR(std::string(kShow) + "--config '{\"knobs\": {\"bogus\": 1}}'", "bogus");
  CHECK_USAGE_ERROR(
      std::string(kShow) +
          "--config '{\"knobs\":{\"block_m\":48,\"block_n\":128,\"block_k\":8,\"thread_m\":8,"
          "\"thread_n\":8,\"warp_n\":8,\"frag_m\":4,\"frag_n\":4,\"vec_load\":4,\"smem_pad\":4,"
          "\"double_buffer\":1,\"unroll_k\":1}}'",
      "block_m");
}

TEST_CASE("cli: an unknown flag, command or a missing required option", "[cli]") {
  CHECK_USAGE_ERROR("space gemm --shape 4,4,4 --frobnicate", "frobnicate");
  CHECK_USAGE_ERROR("frobnicate", "unknown command 'frobnicate'");
  CHECK_USAGE_ERROR("space gemm", "--shape");
  CHECK_USAGE_ERROR("space --shape 4,4,4", "op");
  CHECK_USAGE_ERROR("show gemm --shape 4,4,4", "--config");
  CHECK_USAGE_ERROR("compile gemm --shape 4,4,4 --sample 0", "--sample");
  CHECK_USAGE_ERROR("compile gemm --shape 4,4,4 --jobs 0", "--jobs");
  CHECK_USAGE_ERROR("compile gemm --shape 4,4,4 --sample many", "--sample");
  CHECK_USAGE_ERROR("compile gemm --shape 4,4,4 --arch sm_1", "sm_1");
}

TEST_CASE("cli: no command at all is a usage error", "[cli]") {
  CliRun r = run_cutune("");
  INFO_RUN(r);
  CHECK(r.status == 2);
  CHECK(r.err_lines() == 1);
}

TEST_CASE("cli: tune-suite's transformer models refuse bad tokens, models and dtypes", "[cli]") {
  CHECK_USAGE_ERROR("tune-suite llama3-8b --tokens 16,1 --log x.jsonl", "increasing order");
  CHECK_USAGE_ERROR("tune-suite resnet18 --tokens 1 --log x.jsonl", "--tokens goes with");
  CHECK_USAGE_ERROR("tune-suite llama3-8b --batch-size 16 --log x.jsonl", "--batch-size goes");
  CHECK_USAGE_ERROR("tune-suite llama3-8b --dtype fp8 --log x.jsonl", "no fp8 templates yet");
  CHECK_USAGE_ERROR("tune-suite --model /nonexistent.json --log x.jsonl", "--model");
  CHECK_USAGE_ERROR("tune-suite --log x.jsonl", "name a suite");
  CHECK_USAGE_ERROR("tune-suite llama3-8b --model m.json --log x.jsonl", "name a suite");
}

TEST_CASE("cli: a bad --epilogue", "[cli][epilogue]") {
  CHECK_USAGE_ERROR("space gemm --shape 64,64,64 --epilogue bias,gleu",
                    "unknown epilogue op 'gleu' in 'bias,gleu' (known: alpha, beta, bias, relu");
  CHECK_USAGE_ERROR("verify gemm --shape 64,64,64 --epilogue relu,silu --sample 1",
                    "at most one");
  CHECK_USAGE_ERROR("space conv2d --shape 1,8,8,8,8,3,3,1,1 --epilogue relu",
                    "takes no fused epilogue");
}
