#include "src/sass/sass_listing.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace cutune::sass {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_dots(std::string_view s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = std::min(s.find('.', start), s.size());
    parts.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool is_branch_opcode(std::string_view op) {
  return op == "BRA" || op == "BRX" || op == "JMP" || op == "JMX" || op == "CALL" || op == "BSSY" ||
         op == "BREAK" || op == "BPT";
}

// "/*01f0*/ BAR.SYNC 0x0 ;" -> address 0x1f0 and the rest; nullopt for other lines.
std::optional<Instruction> parse_instruction_line(std::string_view line, std::string* label_use) {
  line = trim(line);
  if (line.rfind("/*", 0) != 0) return std::nullopt;
  const size_t close = line.find("*/");
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view hex = line.substr(2, close - 2);
  Instruction ins;
  auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), ins.address, 16);
  if (ec != std::errc() || ptr != hex.data() + hex.size()) return std::nullopt;
  std::string_view rest = trim(line.substr(close + 2));
  // The instruction ends at ';'; an encoding comment (/* 0x... */) may follow.
  if (size_t semi = rest.find(';'); semi != std::string_view::npos) rest = rest.substr(0, semi);
  rest = trim(rest);
  if (rest.empty()) return std::nullopt;
  if (rest.front() == '@') {
    const size_t space = rest.find_first_of(" \t");
    if (space == std::string_view::npos) return std::nullopt;
    ins.predicate = std::string(rest.substr(1, space - 1));
    rest = trim(rest.substr(space));
  }
  const size_t space = rest.find_first_of(" \t");
  std::string_view mnemonic = rest.substr(0, space);
  ins.operands = space == std::string_view::npos ? "" : std::string(trim(rest.substr(space)));
  std::vector<std::string> parts = split_dots(mnemonic);
  ins.opcode = parts.front();
  ins.modifiers.assign(parts.begin() + 1, parts.end());
  // Branch targets print as `(.L_x_2) (backquote, parenthesised label).
  if (is_branch_opcode(ins.opcode)) {
    const size_t open = ins.operands.find("`(");
    if (open != std::string::npos) {
      const size_t end = ins.operands.find(')', open);
      if (end != std::string::npos) *label_use = ins.operands.substr(open + 2, end - open - 2);
    }
  }
  return ins;
}

// "name:" at the start of a line (labels and the function's own symbol).
std::optional<std::string_view> parse_label(std::string_view line) {
  line = trim(line);
  if (line.size() < 2 || line.back() != ':' || line.find_first_of(" \t") != std::string_view::npos)
    return std::nullopt;
  return line.substr(0, line.size() - 1);
}

struct PendingFunction {
  Function function;
  // A label names the instruction that follows it: its index here.
  std::map<std::string, size_t> labels;
  std::vector<std::pair<size_t, std::string>> uses;  // instruction index, label
};

void finish(PendingFunction& p, std::vector<Function>& out) {
  std::vector<Instruction>& code = p.function.instructions;
  if (code.empty()) return;
  for (const auto& [index, label] : p.uses) {
    auto it = p.labels.find(label);
    if (it == p.labels.end()) continue;
    // A label after the last instruction points one instruction past it.
    code[index].target =
        it->second < code.size() ? code[it->second].address : code.back().address + 16;
  }
  out.push_back(std::move(p.function));
}

}  // namespace

std::string Instruction::mnemonic() const {
  std::string m = opcode;
  for (const std::string& mod : modifiers) m += "." + mod;
  return m;
}

bool Instruction::has_modifier(std::string_view m) const {
  return std::find(modifiers.begin(), modifiers.end(), m) != modifiers.end();
}

std::vector<Function> parse_nvdisasm(std::string_view text) {
  std::vector<Function> out;
  PendingFunction current;
  bool in_code = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    std::string_view t = trim(line);
    // A code section: ".section .text.NAME,...". Any other section ends the function.
    if (t.rfind(".section", 0) == 0) {
      finish(current, out);
      current = PendingFunction{};
      std::string_view rest = trim(t.substr(8));
      in_code = rest.rfind(".text.", 0) == 0;
      if (in_code) {
        std::string_view name = rest.substr(6);
        current.function.name = std::string(name.substr(0, name.find(',')));
      }
      continue;
    }
    if (!in_code) continue;
    if (auto label = parse_label(t)) {
      current.labels[std::string(*label)] = current.function.instructions.size();
      continue;
    }
    std::string label_use;
    if (auto ins = parse_instruction_line(t, &label_use)) {
      if (!label_use.empty())
        current.uses.emplace_back(current.function.instructions.size(), label_use);
      current.function.instructions.push_back(std::move(*ins));
    }
  }
  finish(current, out);
  return out;
}

}  // namespace cutune::sass
