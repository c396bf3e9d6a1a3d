// Fused epilogues (kernels/epilogue.h, output_epilogue.h): the text, the one scalar semantics,
// the names of templates with one, and every GEMM family applying every op in the emulator
// against the reference (sanitizer on) on odd shapes: simt, mma.sync, and wgmma through its
// scalar, staged, TMA-store and persistent paths; and the space keeping a non-linear epilogue
// off split-K and stream-K.
#include <catch2/catch.hpp>

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/epilogue.h"
#include "kernels/template.h"
#include "src/lower/lower.h"
#include "src/measure/emulated_check.h"

using namespace cutune;

namespace {

// `knobs` (a JSON object's text) as a configuration of `t`, required valid.
Config config_of(const Template& t, const std::string& knobs) {
  Config c = t.space().from_json(nlohmann::json::parse("{\"knobs\":" + knobs + "}"));
  INFO(t.name() << ": " << t.space().violation(c).value_or(""));
  REQUIRE(t.space().is_valid(c));
  return c;
}

// The template `name` (with its epilogue in the name) at `shape`.
std::unique_ptr<Template> epilogue_template(const std::string& name,
                                            const std::vector<int64_t>& shape) {
  TaskParams p = template_params(name);
  return make_template(p, shape);
}

void check_matches(const Template& t, const Config& c, int persistent_grid = 0) {
  emu::EmulatorOptions options;
  options.persistent_grid = persistent_grid;
  emu::Emulator emulator(options);
  EmulatedCheck r = check_in_emulator(t, c, ir::TargetLimits{}, emulator);
  INFO(t.name() << " " << c.to_string() << "\nstatus " << r.status << ": " << r.message
                << "\nmax rel error " << r.max_rel_error);
  CHECK(r.passed);
}

// An mma.sync configuration for odd K: synchronous element copies (copy_bytes 2).
const char* kMmaOdd =
    R"({"block_m":64,"block_n":64,"block_k":32,"warp_m":32,"warp_n":32,"stages":2,)"
    R"("copy_bytes":2,"smem_layout":0,"ldmatrix":1,"raster_group":1,"split_k":1,)"
    R"("epilogue_vec":1,"min_blocks":1})";

// A TMA wgmma configuration with a producer: 64 x 64 x 32 tiles, a 3-slot ring, persistent
// unless `persistent` is 0.
std::string wgmma_persistent(int warpgroups, int pingpong, int split, int epilogue, int tma_store,
                             int persistent = 1) {
  return fmt::format(
      R"({{"block_m":64,"block_n":64,"block_k":32,"stages":3,"warpgroups":{},)"
      R"("swizzle":64,"copy_bytes":16,"raster_group":4,"split_k":1,"epilogue":{},)"
      R"("loads":1,"producer":1,"mma_pipe":1,"pingpong":{},"persistent":{},)"
      R"("last_wave_split":{},"tma_store":{}}})",
      warpgroups, epilogue, pingpong, persistent, split, tma_store);
}

}  // namespace

TEST_CASE("epilogue text: canonical order, bad ops, one activation", "[epilogue]") {
  CHECK(canonical_epilogue("gelu,bias") == "bias,gelu");
  CHECK(canonical_epilogue("residual,silu,beta,alpha,bias") == "alpha,beta,bias,silu,residual");
  CHECK(canonical_epilogue("") == "");
  CHECK(parse_epilogue("bias,gelu_tanh").name_suffix() == "_ep_bias_gelu_tanh");
  CHECK(parse_epilogue("alpha").linear());
  CHECK_FALSE(parse_epilogue("alpha,relu").linear());
  CHECK_THROWS_WITH(parse_epilogue("bias,gleu"),
                    "unknown epilogue op 'gleu' in 'bias,gleu' (known: alpha, beta, bias, relu, "
                    "gelu, gelu_tanh, silu, residual)");
  CHECK_THROWS_WITH(parse_epilogue("bias,bias"), "epilogue 'bias,bias' lists bias twice");
  CHECK_THROWS_WITH(parse_epilogue("relu,silu"),
                    "epilogue 'relu,silu' has two activations (relu and silu): at most one");
  CHECK_THROWS_AS(parse_epilogue("bias,"), TaskError);
}

TEST_CASE("epilogue semantics: act(alpha*acc + beta*C + bias) + residual", "[epilogue]") {
  const EpilogueOperands<double> in{0.5, -1.25, 2.0, 0.25, 3.0};
  auto value = [&](const char* text, double acc) {
    return apply_epilogue<double>(parse_epilogue(text), acc, in);
  };
  CHECK(value("", 1.5) == 1.5);
  CHECK(value("alpha,beta,bias", 1.5) == Approx(0.75 - 2.5 + 0.25));
  CHECK(value("bias,relu,residual", -1.0) == 3.0);
  CHECK(value("bias,relu,residual", 1.0) == 4.25);
  // Φ(1) = 0.841344746; the tanh form is within 2e-4 of it; σ(1) = 0.731058579.
  CHECK(value("gelu", 1.0) == Approx(0.8413447461).epsilon(1e-9));
  CHECK(value("gelu_tanh", 1.0) == Approx(0.8411919906).epsilon(1e-9));
  CHECK(value("silu", 1.0) == Approx(0.7310585786).epsilon(1e-9));
  CHECK(value("gelu", -3.0) == Approx(-0.0040495).epsilon(1e-3));
}

TEST_CASE("epilogue names: a suffix with one, every old name without", "[epilogue][names]") {
  TaskRequest r;
  r.op = "gemm";
  r.dtype = "fp16";
  r.family = "wgmma";
  r.layout = "nt";
  r.epilogue = "gelu_tanh,bias";
  const ResolvedTemplate t = resolve_template(r, "sm_90");
  CHECK(t.op == "gemm_fp16");
  CHECK(t.name == "gemm_fp16_wgmma_nt_ep_bias_gelu_tanh");
  CHECK(t.params.epilogue == "bias,gelu_tanh");
  CHECK(template_params(t.name) == t.params);
  // A template of before named with --epilogue takes it; without, the names are as before.
  r = TaskRequest{};
  r.op = "gemm";
  r.template_name = "gemm_nt";
  r.epilogue = "alpha";
  CHECK(resolve_template(r, "").name == "gemm_nt_ep_alpha");
  r.epilogue.clear();
  CHECK(resolve_template(r, "").name == "gemm_nt");
  for (const std::string& name : template_names("gemm"))
    CHECK(name.find("_ep_") == std::string::npos);
  // A name in another order than the canonical one is no template; a convolution takes none.
  CHECK_THROWS_AS(template_params("gemm_nt_ep_gelu_bias"), TaskError);
  CHECK_THROWS_AS(template_params("gemm_nt_ep_bogus"), TaskError);
  r = TaskRequest{};
  r.op = "conv2d";
  r.epilogue = "relu";
  CHECK_THROWS_WITH(resolve_template(r, ""),
                    "conv2d on simt takes no fused epilogue (--epilogue relu)");
  // The tensors after A and B, C read with beta, the scalars alpha and beta.
  auto tmpl = epilogue_template("gemm_fp16_nt_ep_alpha_beta_bias_residual", {67, 45, 33});
  const std::vector<TensorSpec> ts = tmpl->tensors();
  REQUIRE(ts.size() == 5);
  CHECK(ts[0].initial);
  CHECK_FALSE(ts[0].zero_init);
  CHECK(ts[3].name == "bias");
  CHECK(ts[3].elements == 45);
  CHECK(ts[3].type == ir::Type::f16());
  CHECK(ts[4].name == "residual");
  CHECK(ts[4].elements == 67 * 45);
  REQUIRE(tmpl->scalars().size() == 2);
  CHECK(tmpl->scalars()[0].name == "alpha");
  CHECK(tmpl->scalars()[1].value == kCheckBeta);
  CHECK(tmpl->baseline().gemm.epilogue == "alpha,beta,bias,residual");
  CHECK(tmpl->baseline().gemm.bias == 3);
}

TEST_CASE("split-K and stream-K take no epilogue but alpha", "[epilogue][space]") {
  auto bias = epilogue_template("gemm_fp16_nt_ep_bias", {67, 45, 33});
  std::string knobs = kMmaOdd;
  knobs.replace(knobs.find("\"split_k\":1"), 11, "\"split_k\":2");
  Config c = bias->space().from_json(nlohmann::json::parse("{\"knobs\":" + knobs + "}"));
  CHECK(bias->space().violation(c).value_or("") ==
        "epilogue bias needs whole sums: no split-K or stream-K (alpha alone can)");
  auto alpha = epilogue_template("gemm_fp16_nt_ep_alpha", {67, 45, 33});
  CHECK(alpha->space().is_valid(alpha->space().from_json(c.to_json())));

  auto wg = epilogue_template("gemm_fp16_wgmma_nn_ep_alpha_relu", {127, 200, 72});
  c = wg->space().from_json(
      nlohmann::json::parse("{\"knobs\":" + wgmma_persistent(1, 0, 1, 1, 0) + "}"));
  CHECK(wg->space().violation(c).value_or("") ==
        "epilogue alpha,relu needs whole sums: no split-K or stream-K (alpha alone can)");
}

TEST_CASE("every epilogue op matches on simt and mma.sync at 67x45x33",
          "[epilogue][emulator]") {
  auto simt = epilogue_template("gemm_nn_ep_alpha_beta_bias_gelu_residual", {67, 45, 33});
  const char* simt_knobs =
      R"({"block_m":32,"block_n":32,"block_k":8,"thread_m":4,"thread_n":4,"warp_n":8,)"
      R"("frag_m":4,"frag_n":4,"vec_load":1,"smem_pad":0,"double_buffer":1,"unroll_k":1,)"
      R"("min_blocks":1})";
  check_matches(*simt, config_of(*simt, simt_knobs));
  auto simt_silu = epilogue_template("gemm_nt_ep_bias_silu", {67, 45, 33});
  check_matches(*simt_silu, config_of(*simt_silu, simt_knobs));

  auto mma = epilogue_template("gemm_fp16_nt_ep_alpha_beta_bias_gelu_tanh_residual", {67, 45, 33});
  check_matches(*mma, config_of(*mma, kMmaOdd));
  auto mma16 = epilogue_template("gemm_bf16_nn_out16_ep_bias_relu", {67, 45, 33});
  check_matches(*mma16, config_of(*mma16, kMmaOdd));
}

TEST_CASE("every epilogue op matches on wgmma: scalar, staged, TMA-store and persistent paths",
          "[epilogue][wgmma][emulator]") {
  // cp.async loads and scalar stores at 67x45x33 (odd K: element copies).
  auto odd = epilogue_template("gemm_fp16_wgmma_nt_ep_alpha_beta_bias_silu_residual", {67, 45, 33});
  check_matches(*odd, config_of(*odd,
                                R"({"block_m":64,"block_n":64,"block_k":32,"stages":2,)"
                                R"("warpgroups":1,"swizzle":64,"copy_bytes":2,"raster_group":1,)"
                                R"("split_k":1,"epilogue":0})"));
  // 127 x 200 x 72 in 64 x 64 tiles (8): the staged epilogue (one tile a block), then
  // persistent tiles on a grid of 3 with the TMA store, fp32 C a column at a time and 16-bit C by stmatrix (ping-pong).
  auto staged = epilogue_template("gemm_bf16_wgmma_nn_out16_ep_beta_bias_gelu", {127, 200, 72});
  check_matches(*staged, config_of(*staged, wgmma_persistent(1, 0, 0, 2, 0, 0)));
  auto store32 =
      epilogue_template("gemm_fp16_wgmma_nn_ep_alpha_beta_bias_gelu_tanh_residual", {127, 200, 72});
  check_matches(*store32, config_of(*store32, wgmma_persistent(1, 0, 0, 2, 2)), 3);
  auto store16 = epilogue_template("gemm_bf16_wgmma_nt_out16_ep_alpha_bias_relu_residual",
                                   {127, 200, 72});
  check_matches(*store16, config_of(*store16, wgmma_persistent(2, 1, 0, 2, 1)), 3);
  // alpha alone on stream-K: the pieces of the last wave scale before they add.
  auto alpha = epilogue_template("gemm_fp16_wgmma_nt_ep_alpha", {127, 200, 72});
  check_matches(*alpha, config_of(*alpha, wgmma_persistent(1, 0, 1, 1, 0)), 3);
}
