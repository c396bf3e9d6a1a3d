// The fp32 GEMM's shared-memory layout and bank conflicts: for the padding rule
// (smem_pad = -1, gemm.h), every shared access of one warp computed from the template's
// row lengths and its thread -> element mappings (schedule_helpers: vector v of a tile holds
// row v / (cols / vec), columns v % (cols / vec) · vec ...; fragments by thread_row/col),
// checked for two distinct words in one bank of one access phase.

#include <algorithm>
#include <map>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kernels/gemm.h"

using namespace cutune;

namespace {

// Words one instruction of a warp touches, per lane (-1: the lane is idle), and the access
// width in words; the banks are checked per phase (32 / width lanes together, as the hardware
// serves 128-byte transactions). Returns the worst number of distinct words in one bank.
int worst_conflict(const std::vector<std::vector<int64_t>>& words_per_lane, int width) {
  const int lanes_per_phase = 32 / width;
  int worst = 1;
  for (int phase = 0; phase < width; ++phase) {
    std::map<int64_t, std::set<int64_t>> by_bank;
    for (int lane = phase * lanes_per_phase; lane < (phase + 1) * lanes_per_phase; ++lane)
      for (int64_t w : words_per_lane[size_t(lane)])
        if (w >= 0) by_bank[w % 32].insert(w);  // equal words are one broadcast
    for (const auto& [bank, words] : by_bank) worst = std::max(worst, int(words.size()));
  }
  return worst;
}

// The worst conflict of a transposed tile's stores ([k][rows], row length ld): one scalar
// store per element e of each lane's vector, for every 32 consecutive vectors (one warp's, as
// the block's threads take vectors r · threads + tx with threads a multiple of 32).
int transposed_store_conflict(int64_t rows, int64_t bk, int64_t vec, int64_t ld) {
  const int64_t per_row = bk / vec, vectors = rows * bk / vec;
  int worst = 1;
  for (int64_t first = 0; first < vectors; first += 32) {
    for (int64_t e = 0; e < vec; ++e) {
      std::vector<std::vector<int64_t>> words(32);
      for (int lane = 0; lane < 32; ++lane) {
        const int64_t v = first + lane;
        if (v >= vectors) continue;
        const int64_t row = v / per_row, col = v % per_row * vec;
        words[size_t(lane)] = {(col + e) * ld + row};
      }
      worst = std::max(worst, worst_conflict(words, 1));
    }
  }
  return worst;
}

// The worst conflict of the A fragment reads at one k row: lane -> thread_row by the warp
// layout, fm consecutive words at tile_row(i) for each chunk i.
int fragment_read_conflict(int64_t tm, int64_t fm, int64_t warp_n, int64_t threads_m, int64_t ld,
                           int64_t k) {
  int worst = 1;
  for (int64_t chunk = 0; chunk < tm / fm; ++chunk) {
    std::vector<std::vector<int64_t>> words(32);
    for (int lane = 0; lane < 32; ++lane) {
      const int64_t thread_row = lane / warp_n;  // warp 0
      const int64_t row0 = chunk * threads_m * fm + thread_row * fm;
      for (int64_t x = 0; x < fm; ++x) words[size_t(lane)].push_back(k * ld + row0 + x);
    }
    worst = std::max(worst, worst_conflict(words, int(fm)));
  }
  return worst;
}

Config gemm_config(const GemmTemplate& t, int64_t bk, int64_t fm, int64_t vec, int64_t pad) {
  nlohmann::json knobs = {{"block_m", 128},  {"block_n", 128},     {"block_k", bk},
                          {"thread_m", 8},   {"thread_n", 8},      {"warp_n", 8},
                          {"frag_m", fm},    {"frag_n", fm},       {"vec_load", vec},
                          {"smem_pad", pad}, {"double_buffer", 1}, {"unroll_k", 1}};
  return t.space().from_json({{"knobs", knobs}});
}

}  // namespace

TEST_CASE("the rule's row length is the smallest L >= rows with L = 32/block_k (mod 32)",
          "[gemm][smem]") {
  CHECK(conflict_free_row_length(128, 8) == 132);  // the hand-tuned SGEMM's pad of 4
  CHECK(conflict_free_row_length(128, 4) == 136);
  CHECK(conflict_free_row_length(128, 16) == 130);
  CHECK(conflict_free_row_length(128, 32) == 129);
  CHECK(conflict_free_row_length(16, 8) == 36);
  CHECK(conflict_free_row_length(100, 8) == 100);
}

TEST_CASE("the padding rule makes every transposed store conflict-free for every block_k",
          "[gemm][smem]") {
  for (GemmLayout layout : {GemmLayout::nn, GemmLayout::nt}) {
    GemmTemplate t(1024, 1024, 1024, layout);
    for (int64_t bk : {4, 8, 16, 32})
      for (int64_t vec : {1, 2, 4}) {
        if (bk % vec != 0) continue;
        const int64_t fm = std::min<int64_t>(4, 32 / bk);  // the rule's rows align to 32 / bk
        Config c = gemm_config(t, bk, fm, vec, kSmemPadConflictFree);
        INFO(t.name() << " " << c.to_string());
        REQUIRE(t.space().is_valid(c));
        GemmSharedRows rows = gemm_shared_rows(c, layout);
        CHECK(transposed_store_conflict(128, bk, vec, rows.a) == 1);
        if (layout == GemmLayout::nt) CHECK(transposed_store_conflict(128, bk, vec, rows.b) == 1);
        for (int64_t k = 0; k < bk; ++k)
          CHECK(fragment_read_conflict(8, fm, 8, 16, rows.a, k) == 1);
      }
  }
}

TEST_CASE("a fixed pad of 4 conflicts where block_k > 8: what the rule is for", "[gemm][smem]") {
  GemmTemplate t(1024, 1024, 1024, GemmLayout::nn);
  // The hand-tuned SGEMM (block_k 8, pad 4) coincides with the rule.
  Config classic = gemm_config(t, 8, 4, 4, 4);
  CHECK(gemm_shared_rows(classic, GemmLayout::nn).a ==
        gemm_shared_rows(gemm_config(t, 8, 4, 4, kSmemPadConflictFree), GemmLayout::nn).a);
  CHECK(transposed_store_conflict(128, 8, 4, 132) == 1);
  CHECK(transposed_store_conflict(128, 16, 4, 132) == 2);
  CHECK(transposed_store_conflict(128, 32, 4, 132) == 4);
  CHECK(transposed_store_conflict(128, 16, 4, 128) == 4);  // unpadded
  // The rule's price at block_k 16: rows of 130 words do not keep float4 fragments aligned.
  CHECK_FALSE(t.space().is_valid(gemm_config(t, 16, 4, 4, kSmemPadConflictFree)));
}
