// The GEMM template's configuration space and its task checks.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "kernels/gemm.h"
#include "kernels/template.h"
#include "src/lower/lower.h"

using namespace cutune;

namespace {

// The constraints as gemm.h documents them, written out independently of the template.
bool valid_by_hand(bool nn, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk, int64_t tm,
                   int64_t tn, int64_t wn, int64_t fm, int64_t fn, int64_t vec, int64_t pad,
                   bool double_buffer, int64_t min_blocks) {
  if (bm % tm != 0 || bn % tn != 0) return false;
  int64_t threads_m = bm / tm, threads_n = bn / tn, threads = threads_m * threads_n;
  if (threads < 32 || threads > 1024 || threads % 32 != 0) return false;
  if (wn != 0 && (threads_n % wn != 0 || threads_m % (32 / wn) != 0)) return false;
  if (tm % fm != 0 || tn % fn != 0) return false;
  if (tm * tn > 128) return false;
  if (bk % vec != 0 || k % vec != 0) return false;
  if (nn && (bn % vec != 0 || n % vec != 0)) return false;
  int64_t b_align = nn ? std::max(fn, vec) : fn;
  // pad -1: rows padded to L ≡ 32 / block_k (mod 32); B of layout nn unpadded.
  auto rule = [bk](int64_t rows) {
    int64_t l = rows;
    while (l % 32 != 32 / bk % 32) ++l;
    return l;
  };
  int64_t lda = pad < 0 ? rule(bm) : bm + pad;
  int64_t ldb = pad < 0 ? (nn ? bn : rule(bn)) : bn + pad;
  if (lda % fm != 0 || ldb % b_align != 0) return false;
  if (min_blocks == 1) return true;
  int64_t shared = (double_buffer ? 2 : 1) * bk * (lda + ldb) * 4;
  int64_t cap = std::min<int64_t>(255, 65536 / (min_blocks * threads) / 8 * 8);
  return min_blocks * shared <= 227 * 1024 && tm * tn + 32 <= cap;
}

uint64_t brute_force_valid(bool nn, int64_t n, int64_t k) {
  const int64_t tiles[] = {16, 32, 64, 128, 256};
  const int64_t ks[] = {4, 8, 16, 32};
  const int64_t per_thread[] = {1, 2, 4, 8, 16};
  const int64_t warps[] = {0, 2, 4, 8, 16};
  const int64_t frags[] = {1, 2, 4};
  const int64_t vecs[] = {1, 2, 4};
  const int64_t pads[] = {0, 1, 4, -1};
  uint64_t count = 0;
  for (int64_t bm : tiles)
    for (int64_t bn : tiles)
      for (int64_t bk : ks)
        for (int64_t tm : per_thread)
          for (int64_t tn : per_thread)
            for (int64_t wn : warps)
              for (int64_t fm : frags)
                for (int64_t fn : frags)
                  for (int64_t vec : vecs)
                    for (int64_t pad : pads)
                      for (bool db : {false, true})
                        for (int64_t mb : {1, 2}) {
                          // unroll_k is free: 2 configurations each.
                          if (valid_by_hand(nn, n, k, bm, bn, bk, tm, tn, wn, fm, fn, vec, pad, db,
                                            mb)) {
                            count += 2;
                          }
                        }
  return count;
}

}  // namespace

TEST_CASE("the GEMM space's size is the product of its knobs' cardinalities", "[gemm][space]") {
  GemmTemplate t(127, 255, 63, GemmLayout::nn);
  const ConfigSpace& space = t.space();
  uint64_t product = 1;
  for (const Knob& k : space.knobs()) product *= uint64_t(k.cardinality());
  CHECK(space.size() == product);
  CHECK(space.size() == 5ull * 5 * 4 * 5 * 5 * 5 * 3 * 3 * 3 * 4 * 2 * 2 * 2);
  std::vector<std::string> names;
  for (const Knob& k : space.knobs()) names.push_back(k.name());
  CHECK(names == std::vector<std::string>{"block_m", "block_n", "block_k", "thread_m", "thread_n",
                                          "warp_n", "frag_m", "frag_n", "vec_load", "smem_pad",
                                          "double_buffer", "unroll_k", "min_blocks"});
}

TEST_CASE("the GEMM valid count equals a brute-force count (nn, aligned shape)", "[gemm][space]") {
  GemmTemplate t(1024, 1024, 1024, GemmLayout::nn);
  std::optional<uint64_t> valid = t.space().count_valid();
  REQUIRE(valid.has_value());
  CHECK(*valid == brute_force_valid(true, 1024, 1024));
  CHECK(*valid > 0);
}

TEST_CASE("the GEMM valid count equals a brute-force count (nt, odd shape)", "[gemm][space]") {
  // K = 63 allows only scalar loads.
  GemmTemplate t(127, 255, 63, GemmLayout::nt);
  std::optional<uint64_t> valid = t.space().count_valid();
  REQUIRE(valid.has_value());
  CHECK(*valid == brute_force_valid(false, 255, 63));
  CHECK(*valid < brute_force_valid(false, 255, 64));
}

TEST_CASE("the reference configurations are valid and include the hand-tuned SGEMM",
          "[gemm][space]") {
  for (GemmLayout layout : {GemmLayout::nn, GemmLayout::nt}) {
    GemmTemplate t(256, 256, 256, layout);
    std::vector<Config> refs = t.reference_configs();
    REQUIRE(refs.size() == 2);
    for (const Config& c : refs) {
      INFO(t.name() << " " << c.to_string());
      CHECK(t.space().is_valid(c));
      Lowered l = lower(t, c, ir::TargetLimits{});
      for (const std::string& e : l.verify.errors) INFO(e);
      CHECK(l.ok());
    }
    const Config& classic = refs[0];
    CHECK(classic.get("block_m") == 128);
    CHECK(classic.get("block_n") == 128);
    CHECK(classic.get("thread_m") == 8);
    CHECK(classic.get("warp_n") == 8);
    CHECK(classic.get("vec_load") == 4);
    CHECK(classic.get("double_buffer") == 1);
  }
}

TEST_CASE("bad GEMM shapes are TaskErrors", "[gemm][task]") {
  CHECK_THROWS_AS(GemmTemplate(0, 4, 4, GemmLayout::nn), TaskError);
  CHECK_THROWS_AS(GemmTemplate(4, -1, 4, GemmLayout::nn), TaskError);
  CHECK_THROWS_AS(GemmTemplate(4, 4, 0, GemmLayout::nt), TaskError);
  CHECK_THROWS_AS(GemmTemplate(1 << 21, 4, 4, GemmLayout::nn), TaskError);
  CHECK_THROWS_AS(GemmTemplate(65536, 65536, 4, GemmLayout::nn), TaskError);  // C too large
  CHECK_THROWS_AS(make_template("gemm", {4, 4}), TaskError);
  CHECK_THROWS_AS(make_template("gemm", {4, 4, 4, 4}), TaskError);
  CHECK_THROWS_AS(make_template("gemm", {4, 4, 4}, "gemm_tt"), TaskError);
  CHECK_THROWS_AS(make_template("gemmm", {4, 4, 4}), TaskError);
  CHECK_THROWS_WITH(make_template("gemm", {4, 4}), Catch::Contains("M,N,K"));
  CHECK_NOTHROW(make_template("gemm", {1, 1, 1}));
  CHECK(make_template("gemm", {4, 4, 4}, "gemm_nt")->name() == "gemm_nt");
}

TEST_CASE("shape strings: non-negative integers separated by commas", "[gemm][task]") {
  CHECK(parse_shape("127,255,63") == std::vector<int64_t>{127, 255, 63});
  CHECK(parse_shape("1") == std::vector<int64_t>{1});
  CHECK(parse_shape("1,3,8,8,4,3,3,1,0,1") == std::vector<int64_t>{1, 3, 8, 8, 4, 3, 3, 1, 0, 1});
  for (const char* bad : {"", "-1,4,4", "4,-4,4", "a,b,c", "4,,4", "4,4,", ",4,4", "1.5,2,3",
                          "4, 4,4", "99999999999999999999,1,1", "4;4;4"}) {
    INFO("shape '" << bad << "'");
    CHECK_THROWS_AS(parse_shape(bad), TaskError);
  }
  CHECK_THROWS_WITH(parse_shape("-1,4,4"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(make_template("gemm", parse_shape("0,4,4")), Catch::Contains(">= 1"));
}

TEST_CASE("an operator's default template follows the target architecture", "[gemm][space]") {
  // On Hopper (sm_90, sm_90a) the 16-bit operators default to their wgmma templates, which
  // compute the same thing with the same layouts and output type; elsewhere to mma.sync.
  for (const char* op : {"gemm_fp16", "gemm_bf16"}) {
    INFO(op);
    CHECK(default_template(op, "sm_90") == std::string(op) + "_wgmma_nn");
    CHECK(default_template(op, "sm_90a") == std::string(op) + "_wgmma_nn");
    CHECK(default_template(op, "sm_80") == std::string(op) + "_nn");
    CHECK(default_template(op) == std::string(op) + "_nn");
  }
  CHECK(default_template("conv2d_fp16", "sm_90") == "conv2d_fp16_wgmma_nhwc");
  CHECK(default_template("conv2d_bf16", "sm_89") == "conv2d_bf16_nhwc");
  CHECK(default_template("gemm", "sm_90") == "gemm_nn");
  CHECK_THROWS_AS(default_template("gemm_fp8", "sm_90"), TaskError);
}
