// The warpgroup-MMA convolutions (kernels/conv2d_wgmma.h) in the CPU emulator, which emulates
// wgmma with its descriptors and swizzles and cp.async per thread: sampled configurations of
// every template match the CPU reference on odd shapes (stride 2, padding, dilation, C and K
// no tile divides, few output pixels) within the correctness rule's tolerance, and planted
// bugs (a wrong gather offset, copies that ignore the padding, a missing wait) are caught.
#include <catch2/catch.hpp>

#include <random>

#include "kernels/wgmma_blocks.h"
#include "src/measure/emulated_check.h"
#include "tests/conv_wgmma/conv_wgmma_samples.h"
#include "tests/tensor_core/tc_samples.h"

using namespace cutune;

namespace {

emu::Emulator& emulator() {
  static emu::Emulator e;
  return e;
}

std::string op_of(const std::string& name) { return name.substr(0, name.find("_wgmma")); }

void check(const Template& tmpl, const Config& c) {
  EmulatedCheck r = check_in_emulator(tmpl, c, ir::TargetLimits{}, emulator());
  INFO(test::describe(tmpl, c) << "\nstatus " << r.status << ": " << r.message << "\nmax rel error "
                               << r.max_rel_error);
  CHECK(r.passed);
}

// `count` sampled configurations, every one of which the verifier must accept, match.
void emulate_sample(const std::string& name, const std::vector<int64_t>& shape, int count,
                    uint64_t seed) {
  auto tmpl = make_template(op_of(name), shape, name);
  std::vector<Config> configs = test::sample_configs(*tmpl, count, seed);
  REQUIRE(int(configs.size()) == count);
  for (const Config& c : configs) {
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator());
    INFO(test::describe(*tmpl, c) << "\nstatus " << r.status << ": " << r.message
                                  << "\nmax rel error " << r.max_rel_error);
    CHECK(r.status != "rejected");
    CHECK(r.passed);
  }
}

// The source of a configuration with `from` replaced by `to` in the kernel (at least once).
CudaSource planted(const Template& t, const Config& c, const std::string& from,
                   const std::string& to) {
  CudaSource src = test::tc_source(t, c);
  const size_t body = src.code.find("extern \"C\"");
  REQUIRE(body != std::string::npos);
  size_t count = 0;
  for (size_t at = src.code.find(from, body); at != std::string::npos;
       at = src.code.find(from, at + to.size())) {
    src.code.replace(at, from.size(), to);
    ++count;
  }
  INFO(from);
  REQUIRE(count > 0);
  return src;
}

}  // namespace

TEST_CASE("the reference configurations of the wgmma convolutions match",
          "[wgmma][conv][emulator]") {
  // K = 64 output channels admit the 128x64 and 64x64 ones; 136 the 128x128 one as well.
  for (const auto& [name, shape] : {std::pair{"conv2d_fp16_wgmma_nhwc", test::kWgK64},
                                    std::pair{"conv2d_bf16_wgmma_nhwc_out16", test::kWgWide}}) {
    auto tmpl = make_template(op_of(name), shape, name);
    std::vector<Config> refs = tmpl->reference_configs();
    CHECK(refs.size() >= 3);
    for (const Config& c : refs) check(*tmpl, c);
  }
}

TEST_CASE("split-K and TMA reference configurations where the layer calls for them",
          "[wgmma][conv][emulator]") {
  // (A configuration points into its template's space: the template is kept.)
  auto splits = [](const std::vector<int64_t>& shape, const char* name) {
    auto t = make_template(op_of(name), shape, name);
    std::vector<int64_t> out;
    for (const Config& c : t->reference_configs())
      if (wg::split_k_of(c) > 1) out.push_back(wg::split_k_of(c));
    return out;
  };
  // ResNet-18's last 3x3 layer (7x7, 512 channels) at batch 1: 4 tiles of 64x128 and 72
  // slices of 64, 16 splits (64 blocks); at batch 16 (28 tiles of 128x128) 8; 16-bit output,
  // none.
  const std::vector<int64_t> c8 = {1, 512, 7, 7, 512, 3, 3, 1, 1};
  CHECK(splits(c8, "conv2d_fp16_wgmma_nhwc") == std::vector<int64_t>{16});
  CHECK(splits({16, 512, 7, 7, 512, 3, 3, 1, 1}, "conv2d_fp16_wgmma_nhwc") ==
        std::vector<int64_t>{8});
  CHECK(splits(c8, "conv2d_fp16_wgmma_nhwc_out16").empty());
  // The filter by TMA where its rows are 16-byte multiples (K = 512), not for K = 33.
  auto tma_refs = [](const std::vector<int64_t>& shape, const char* name) {
    auto t = make_template(op_of(name), shape, name);
    size_t n = 0;
    for (const Config& c : t->reference_configs()) n += c.get("loads") == 1;
    return n;
  };
  CHECK(tma_refs(c8, "conv2d_fp16_wgmma_nhwc") == 1);
  CHECK(tma_refs(test::kWgOddK, "conv2d_fp16_wgmma_nhwc") == 0);
  // A small layer of the same kind, computed: 16 pixels, 256 channels, R·S·C = 576 (9
  // slices): 2 tiles of 64x128, 2 splits.
  auto tmpl =
      make_template("conv2d_bf16", {1, 64, 4, 4, 256, 3, 3, 1, 1}, "conv2d_bf16_wgmma_nhwc");
  size_t split_refs = 0;
  for (const Config& c : tmpl->reference_configs()) {
    if (wg::split_k_of(c) == 1) continue;
    ++split_refs;
    CHECK(wg::split_k_of(c) == 2);
    check(*tmpl, c);
  }
  CHECK(split_refs == 1);
}

TEST_CASE("the wgmma convolutions' less common knobs match", "[wgmma][conv][emulator]") {
  struct Case {
    const char* name;
    std::vector<int64_t> shape;
    const char* knobs;
  };
  for (const Case& c :
       {// Two consumer warpgroups, split-K into fp32 with atomics, 32-byte swizzle.
        Case{"conv2d_fp16_wgmma_nhwc", test::kWgStrided,
             R"({"knobs":{"block_m":128,"block_n":64,"block_k":32,"stages":2,"warpgroups":2,)"
             R"("swizzle":32,"copy_bytes":16,"raster_group":4,"split_k":4,"epilogue":0}})"},
        // The interleaved layout with 8-byte copies, 6 stages, the staged epilogue.
        Case{"conv2d_bf16_wgmma_nhwc", test::kWgDilated,
             R"({"knobs":{"block_m":64,"block_n":64,"block_k":32,"stages":6,"warpgroups":1,)"
             R"("swizzle":0,"copy_bytes":4,"raster_group":1,"split_k":1,"epilogue":2}})"},
        // 192-row tiles of three strips, 64-byte swizzle, element copies (K = 33).
        Case{"conv2d_fp16_wgmma_nhwc_out16", test::kWgOddK,
             R"({"knobs":{"block_m":192,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
             R"("swizzle":64,"copy_bytes":2,"raster_group":8,"split_k":1,"epilogue":0}})"},
        // A 256x128 tile of two warpgroups (128 accumulators a thread) on 300 pixels and 136
        // channels, paired 16-bit stores.
        Case{"conv2d_bf16_wgmma_nhwc_out16", test::kWgWide,
             R"({"knobs":{"block_m":256,"block_n":128,"block_k":64,"stages":2,"warpgroups":2,)"
             R"("swizzle":128,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":1}})"},
        // The filter by TMA (zero-filled past R·S·C = 144 and K = 40), the input by cp.async,
        // wgmmas in flight across slices.
        Case{"conv2d_fp16_wgmma_nhwc", test::kWgStrided,
             R"({"knobs":{"block_m":64,"block_n":64,"block_k":64,"stages":3,"warpgroups":1,)"
             R"("swizzle":128,"copy_bytes":16,"raster_group":1,"split_k":1,"epilogue":1,)"
             R"("loads":1,"mma_pipe":1}})"},
        // Wide split-K: 8 splits of 9 slices of 32 (R·S·C = 288), the last three without one.
        Case{"conv2d_bf16_wgmma_nhwc", test::kWgFewPixels,
             R"({"knobs":{"block_m":64,"block_n":128,"block_k":32,"stages":3,"warpgroups":1,)"
             R"("swizzle":64,"copy_bytes":16,"raster_group":1,"split_k":2,"epilogue":0,)"
             R"("split_k_wide":1}})"}}) {
    auto tmpl = make_template(op_of(c.name), c.shape, c.name);
    Config config = test::tc_config(*tmpl, c.knobs);
    REQUIRE(tmpl->space().is_valid(config));
    check(*tmpl, config);
  }
}

TEST_CASE("20 conv2d_fp16_wgmma_nhwc configurations match", "[wgmma][conv][emulator]") {
  emulate_sample("conv2d_fp16_wgmma_nhwc", test::kWgStrided, 10, 2201);
  emulate_sample("conv2d_fp16_wgmma_nhwc", test::kWgWide, 10, 2202);
}

TEST_CASE("20 conv2d_bf16_wgmma_nhwc configurations match", "[wgmma][conv][emulator]") {
  emulate_sample("conv2d_bf16_wgmma_nhwc", test::kWgDilated, 10, 2203);
  emulate_sample("conv2d_bf16_wgmma_nhwc", test::kWg1x1, 10, 2204);
}

TEST_CASE("20 conv2d_fp16_wgmma_nhwc_out16 configurations match", "[wgmma][conv][emulator]") {
  emulate_sample("conv2d_fp16_wgmma_nhwc_out16", test::kWgOddK, 10, 2205);
  emulate_sample("conv2d_fp16_wgmma_nhwc_out16", test::kWg3x3, 10, 2206);
}

TEST_CASE("20 conv2d_bf16_wgmma_nhwc_out16 configurations match", "[wgmma][conv][emulator]") {
  emulate_sample("conv2d_bf16_wgmma_nhwc_out16", test::kWg7x7, 10, 2207);
  emulate_sample("conv2d_bf16_wgmma_nhwc_out16", test::kWgFewPixels, 10, 2208);
}

TEST_CASE("planted bugs in the wgmma convolution are caught", "[wgmma][conv][emulator][planted]") {
  // kWgStrided: W·C = 176 elements an input row, 3·C = 48 a filter row's (r) columns.
  auto tmpl = make_template("conv2d_fp16", test::kWgStrided, "conv2d_fp16_wgmma_nhwc");
  Config c = test::tc_config(*tmpl, test::kWgSmall);
  REQUIRE(check_in_emulator(*tmpl, c, ir::TargetLimits{}, emulator()).passed);
  // The gather steps filter row r by one input row less one pixel: it reads the wrong pixel.
  EmulatedCheck offset =
      check_source_in_emulator(*tmpl, planted(*tmpl, c, "/ 48 * 176", "/ 48 * 160"), emulator());
  INFO("offset: " << offset.status << ": " << offset.message);
  CHECK_FALSE(offset.passed);
  CHECK(offset.status == "wrong_answer");
  // Copies of the padding read real bytes instead of filling zeros.
  EmulatedCheck padding =
      check_source_in_emulator(*tmpl, planted(*tmpl, c, "? 16 : 0)", "? 16 : 16)"), emulator());
  INFO("padding: " << padding.status << ": " << padding.message);
  CHECK_FALSE(padding.passed);
  // Without wait_group the accumulators are read (and the slot refilled) before the wgmmas
  // finish; the emulator reports the unfinished wgmma.
  EmulatedCheck no_wait = check_source_in_emulator(
      *tmpl, planted(*tmpl, c, "cutune_wgmma_wait_group_0();", ""), emulator());
  INFO("no wait: " << no_wait.message);
  CHECK_FALSE(no_wait.passed);
  CHECK(no_wait.message.find("wgmma") != std::string::npos);
  // Without the cp.async wait the wgmmas read slots whose copies have not landed.
  EmulatedCheck no_copy_wait = check_source_in_emulator(
      *tmpl, planted(*tmpl, c, "cutune_cp_async_wait_1();", ""), emulator());
  INFO("no cp.async wait: " << no_copy_wait.status << ": " << no_copy_wait.message);
  CHECK_FALSE(no_copy_wait.passed);
}
