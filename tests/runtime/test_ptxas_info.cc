#include "src/runtime/ptxas_info.h"

#include <catch2/catch.hpp>

using cutune::parse_ptxas_info;
using cutune::PtxasInfo;

namespace {

// NVRTC 13.0, sm_90, --maxrregcount=24: two kernels and a non-inlined device function.
constexpr const char* kTwoKernels =
    "ptxas info    : Overriding maximum register limit 256 for 'other' with  24 of "
    "maxrregcount option\n"
    "ptxas info    : Overriding maximum register limit 256 for 'spill' with  24 of "
    "maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
    "ptxas info    : Function properties for other\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 2.352 ms\n"
    "ptxas info    : Compiling entry function 'spill' for 'sm_90'\n"
    "ptxas info    : Function properties for spill\n"
    "ptxas         .     992 bytes stack frame, 1920 bytes spill stores, 1968 bytes spill loads\n"
    "ptxas info    : Used 24 registers, used 0 barriers, 992 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 212.158 ms\n"
    "ptxas info    : Function properties for _Z6helperf\n"
    "ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n";

// NVRTC 13.0, sm_90: shared memory and a barrier.
constexpr const char* kShared =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
    "ptxas info    : Function properties for k\n"
    "ptxas         .     2048 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes cumulative stack size, "
    "1024 bytes smem\n"
    "ptxas info    : Compile time = 33.148 ms\n";

// The older format, with constant banks on the "Used" line.
constexpr const char* kOlderFormat =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'gemm' for 'sm_80'\n"
    "ptxas info    : Function properties for gemm\n"
    "    16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
    "ptxas info    : Used 128 registers, 8192 bytes smem, 400 bytes cmem[0], 8 bytes cmem[2]\n";

}  // namespace

TEST_CASE("ptxas report of a named kernel ignores the other functions", "[ptxas]") {
  const PtxasInfo spill = parse_ptxas_info(kTwoKernels, "spill");
  CHECK(spill.parsed);
  CHECK(spill.registers == 24);
  CHECK(spill.stack_frame_bytes == 992);
  CHECK(spill.spill_store_bytes == 1920);
  CHECK(spill.spill_load_bytes == 1968);
  CHECK(spill.spills());

  const PtxasInfo other = parse_ptxas_info(kTwoKernels, "other");
  CHECK(other.parsed);
  CHECK(other.registers == 8);
  CHECK(other.stack_frame_bytes == 0);
  CHECK_FALSE(other.spills());
}

TEST_CASE("ptxas report without a name takes the first entry function", "[ptxas]") {
  const PtxasInfo first = parse_ptxas_info(kTwoKernels);
  CHECK(first == parse_ptxas_info(kTwoKernels, "other"));
}

TEST_CASE("ptxas report gives shared memory, barriers and stack", "[ptxas]") {
  const PtxasInfo info = parse_ptxas_info(kShared, "k");
  CHECK(info.parsed);
  CHECK(info.registers == 32);
  CHECK(info.barriers == 1);
  CHECK(info.shared_bytes == 1024);
  CHECK(info.stack_frame_bytes == 2048);
  CHECK(info.constant_bytes == 0);
}

TEST_CASE("ptxas report in the older format sums constant banks", "[ptxas]") {
  const PtxasInfo info = parse_ptxas_info(kOlderFormat, "gemm");
  CHECK(info.parsed);
  CHECK(info.registers == 128);
  CHECK(info.shared_bytes == 8192);
  CHECK(info.constant_bytes == 408);
  CHECK(info.stack_frame_bytes == 16);
  CHECK(info.spill_store_bytes == 4);
  CHECK(info.spill_load_bytes == 12);
}

TEST_CASE("ptxas report that lacks the kernel is not parsed", "[ptxas]") {
  CHECK_FALSE(parse_ptxas_info(kTwoKernels, "missing").parsed);
  CHECK_FALSE(parse_ptxas_info("").parsed);
  CHECK(parse_ptxas_info("garbage\nUsed registers\n").registers == -1);
}
