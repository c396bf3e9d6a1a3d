#include "src/sass/main_loop.h"

#include <algorithm>

#include "src/sass/instruction_mix.h"

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
    const auto first = static_cast<size_t>(it - code.begin());
    // A block placed after the kernel's exit that jumps back into the code (ptxas's retry
    // blocks of an mbarrier wait) spans an unguarded EXIT: no loop's body holds one.
    bool exits = false;
    for (size_t k = first; k < i && !exits; ++k)
      exits = code[k].opcode == "EXIT" && code[k].predicate.empty();
    if (!exits) loops.push_back(Loop{first, i});
  }
  return loops;
}

std::optional<Loop> main_loop(const Function& function) {
  const std::vector<Loop> loops = find_loops(function);
  // Loops without math are set aside where some loop holds math (see the header).
  std::vector<char> math(loops.size(), 0);
  for (size_t i = 0; i < loops.size(); ++i) {
    for (size_t k = loops[i].first; k <= loops[i].last && !math[i]; ++k)
      math[i] = classify(function.instructions[k]) == InstructionClass::math;
  }
  const bool any_math = std::find(math.begin(), math.end(), 1) != math.end();
  auto counts = [&](size_t i) { return !any_math || math[i]; };
  std::optional<Loop> best;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (!counts(i)) continue;
    const Loop& loop = loops[i];
    bool innermost = true;
    for (size_t j = 0; j < loops.size() && innermost; ++j)
      innermost = !(counts(j) && !(loops[j] == loop) && loop.contains(loops[j]));
    if (innermost && (!best || loop.size() > best->size())) best = loop;
  }
  return best;
}

}  // namespace cutune::sass
