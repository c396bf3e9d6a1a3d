#include "cost_model/dominant_access.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "src/base/int_math.h"

namespace cutune::cost_model {

namespace {

constexpr int kWarp = 32;
constexpr int kSectorBytes = 32;
constexpr int kBanks = 32;
constexpr int kBankBytes = 4;

static_assert(kWarp <= kMaxLanes);

}  // namespace

void strides_and_warp(const DominantAccess& dom, BufferSlotStats& s) {
  s.lanes = dom.lanes;
  if (!dom.index.ok) return;
  int tx = dom.thread_x;
  int lanes_active = int(std::min<int64_t>(kWarp, tx < 0 ? 1 : dom.thread_x_extent));
  if (s.scope == ir::MemoryScope::local) lanes_active = std::min(lanes_active, 2);
  std::array<int64_t, kWarp> first;
  evaluate_lanes(dom.index, tx, std::max(lanes_active, 2), first.data());
  int64_t base = first[0];
  s.stride_thread_x = tx >= 0 ? double(std::llabs(first[1] - base)) : 0.0;
  if (dom.inner >= 0) {
    std::array<int64_t, 2> step;
    evaluate_lanes(dom.index, dom.inner, 2, step.data());
    s.stride_inner = double(std::llabs(step[1] - step[0]));
  }
  if (s.scope == ir::MemoryScope::local) return;

  // The distinct elements lanes [from, to) touch, sorted, in words[0, n).
  std::array<int64_t, kWarp * 4> words;
  auto gather = [&](int from, int to) {
    int n = 0;
    for (int lane = from; lane < to; ++lane) {
      for (int l = 0; l < dom.lanes && n < int(words.size()); ++l) words[n++] = first[lane] + l;
    }
    std::sort(words.begin(), words.begin() + n);
    return int(std::unique(words.begin(), words.begin() + n) - words.begin());
  };
  int n = gather(0, lanes_active);
  double distinct_bytes = double(n) * dom.element_bytes;
  s.warp_bytes = distinct_bytes;
  if (s.scope == ir::MemoryScope::shared) {
    s.warp_ideal = std::ceil(distinct_bytes / (kBanks * kBankBytes));
    // Lanes a phase serves: 128 bytes of requests (8-byte accesses by half-warps, 16-byte
    // ones by quarter-warps).
    const int access_bytes = dom.lanes * dom.element_bytes;
    const int phase = std::clamp(kBanks * kBankBytes / std::max(access_bytes, 1), 1, kWarp);
    double wavefronts = 0;
    for (int from = 0; from < lanes_active; from += phase) {
      const int m = gather(from, std::min(from + phase, lanes_active));
      std::array<int, kBanks> per_bank{};
      int worst = 0;
      int64_t last_word = std::numeric_limits<int64_t>::min();
      for (int w = 0; w < m; ++w) {
        // Elements narrower than a word share it: count each word once.
        const int64_t word = floor_div(words[w] * dom.element_bytes, kBankBytes);
        if (word == last_word) continue;
        last_word = word;
        worst = std::max(worst, ++per_bank[floor_mod(word, kBanks)]);
      }
      wavefronts +=
          std::max<double>(worst, std::ceil(double(m) * dom.element_bytes / (kBanks * kBankBytes)));
    }
    s.warp_transactions = std::max(wavefronts, s.warp_ideal);
  } else {
    for (int w = 0; w < n; ++w) words[w] = floor_div(words[w] * dom.element_bytes, kSectorBytes);
    s.warp_transactions = double(std::unique(words.begin(), words.begin() + n) - words.begin());
    s.warp_ideal = std::ceil(distinct_bytes / kSectorBytes);
  }
}

}  // namespace cutune::cost_model
