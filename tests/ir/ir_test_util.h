#pragma once
// Helpers for tests that compare IR: structural equality, with the input, the actual and the
// expected IR printed (by the IR printer) when they differ.

#include <catch2/catch.hpp>

#include "src/ir/ir.h"
#include "src/ir/ir_equality.h"
#include "src/ir/ir_operators.h"
#include "src/ir/ir_printer.h"

namespace cutune::test {

inline ir::Expr v(const char* name) { return ir::int_var(name); }
inline ir::Expr yes() { return ir::IntImm::make(ir::Type::boolean(), 1); }
inline ir::Expr no() { return ir::IntImm::make(ir::Type::boolean(), 0); }

inline ir::Buffer global_f32(const char* name, int64_t elements, bool read_only = false) {
  return ir::Buffer::make(name, ir::Type::f32(), ir::MemoryScope::global, elements, read_only);
}

template <typename T>
std::string show(const T& ir) {
  return ir.defined() ? ir::to_string(ir) : std::string("<undefined>\n");
}

}  // namespace cutune::test

// Checks that `actual` (computed from `input`) is structurally equal to `expected`.
#define CHECK_IR(input, actual, expected)                  \
  do {                                                     \
    INFO("input:\n" << ::cutune::test::show(input));       \
    INFO("actual:\n" << ::cutune::test::show(actual));     \
    INFO("expected:\n" << ::cutune::test::show(expected)); \
    CHECK(::cutune::ir::equal((actual), (expected)));      \
  } while (0)
