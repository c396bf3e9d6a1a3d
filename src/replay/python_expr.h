#pragma once
// Python-syntax expressions over integer parameters, as the T1 search-space format writes its
// conditions ("MWG % (MDIMC * VWM) == 0", "32 <= block_size_x * block_size_y <= 1024") and
// its parameter values ("[1, 2] + list(range(32, 1024+1, 32))").
//
// Semantics follow Python for int operands: `/` is true division (a float), `//` floors, `%`
// takes the divisor's sign, `**` of ints with a non-negative exponent is an int, `and`/`or`
// short-circuit and yield an operand, comparisons chain (`a < b < c` is `a < b and b < c`).
// Python would raise on division by zero; here it yields NaN, which compares false everywhere
// and is falsy, so a condition that divides by zero rejects the configuration.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/space/config_space.h"

namespace cutune::replay {

// Malformed expression text: the message names the 0-based character position and what was
// expected, on one line.
class ExprError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A parsed expression: a flat array of nodes, names bound to positions in a value vector at
// parse time, so evaluation does no lookup and no allocation.
class PythonExpr {
 public:
  // `names[i]` is the parameter read from values[i] at evaluation. Unknown names, stray
  // characters and unbalanced brackets are ExprErrors.
  //
  // Besides plain names, a name may be written as a subscript `NAME[INT]` or as a call with one
  // name `max(NAME)` / `min(NAME)`; either is looked up in `names` as that exact text with no
  // spaces ("ProblemSize[0]", "max(filter_width)"), so a caller binds them like any other
  // value. Calls with two or more arguments `min(a, b, ...)`, `max(a, b, ...)` and the one-
  // argument `int(x)` (truncation), `ceil(x)`, `floor(x)` (ints) are computed.
  static PythonExpr parse(std::string_view text, std::span<const std::string> names);

  // Python truthiness of the value. `values` must hold one entry per name given to parse.
  bool test(std::span<const int64_t> values) const;
  // The numeric value (ints converted to double).
  double evaluate(std::span<const int64_t> values) const;
  // The value as an integer; ExprError if it is a float (e.g. the result of `/`).
  int64_t evaluate_int(std::span<const int64_t> values) const;

  const std::string& text() const { return text_; }
  // Positions of the names the expression reads, ascending, without repeats.
  const std::vector<int>& used_positions() const { return used_; }

  enum class Op : uint8_t {
    constant,
    name,
    neg,
    pos,
    not_,
    add,
    sub,
    mul,
    truediv,
    floordiv,
    mod,
    pow,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    and_,
    or_,
    min_,
    max_,
    int_,
    ceil_,
    floor_
  };
  struct Node {
    Op op = Op::constant;
    int32_t lhs = -1;  // child node index (unary ops use lhs)
    int32_t rhs = -1;
    int64_t value = 0;  // constant value, or the position of a name
  };

 private:
  friend class ExprParser;
  std::string text_;
  std::vector<Node> nodes_;
  int32_t root_ = -1;
  std::vector<int> used_;
};

// Evaluates a T1 `Values` string to the list of integers it denotes: list literals of integer
// expressions, `list(range(a[, b[, c]]))`, `+` between lists, and one-variable comprehensions
// `[expr for i in range(...)]`. ExprError on anything else.
std::vector<int64_t> parse_values(std::string_view text);

}  // namespace cutune::replay
