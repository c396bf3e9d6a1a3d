#include "src/sass/main_loop.h"

#include <algorithm>

namespace cutune::sass {

std::vector<Loop> find_loops(const Function& function) {
  const std::vector<Instruction>& code = function.instructions;
  std::vector<Loop> loops;
  for (size_t i = 0; i < code.size(); ++i) {
    if (!code[i].branches_backward()) continue;
    // Addresses ascend, so the target's index is found by binary search.
    auto it = std::lower_bound(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                               *code[i].target,
                               [](const Instruction& ins, uint32_t a) { return ins.address < a; });
    loops.push_back(Loop{static_cast<size_t>(it - code.begin()), i});
  }
  return loops;
}

std::optional<Loop> main_loop(const Function& function) {
  const std::vector<Loop> loops = find_loops(function);
  std::optional<Loop> best;
  for (const Loop& loop : loops) {
    const bool innermost = std::none_of(loops.begin(), loops.end(), [&](const Loop& other) {
      return !(other == loop) && loop.contains(other);
    });
    if (innermost && (!best || loop.size() > best->size())) best = loop;
  }
  return best;
}

}  // namespace cutune::sass
