#include "src/replay/python_expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace cutune::replay {
namespace {

enum class Tok : uint8_t { integer, name, punct, end };

struct Token {
  Tok kind = Tok::end;
  std::string_view text;
  size_t pos = 0;
  int64_t value = 0;
};

[[noreturn]] void fail(std::string_view text, size_t pos, std::string_view what) {
  throw ExprError(fmt::format("{} at position {} in '{}'", what, pos, text));
}

std::vector<Token> tokenize(std::string_view text) {
  static constexpr std::string_view kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.pos = i;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      int64_t v = 0;
      while (j < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '_')) {
        if (text[j] != '_') {
          if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
            fail(text, i, "integer too large");
          v = v * 10 + (text[j] - '0');
        }
        ++j;
      }
      if (j < text.size() && (text[j] == '.' || std::isalpha(static_cast<unsigned char>(text[j]))))
        fail(text, j, "only integer literals are supported");
      t.kind = Tok::integer;
      t.value = v;
      t.text = text.substr(i, j - i);
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
        ++j;
      t.kind = Tok::name;
      t.text = text.substr(i, j - i);
      i = j;
    } else {
      t.kind = Tok::punct;
      std::string_view two = text.substr(i, 2);
      if (std::find(std::begin(kTwoChar), std::end(kTwoChar), two) != std::end(kTwoChar)) {
        t.text = two;
      } else if (std::string_view("+-*/%<>()[],").find(c) != std::string_view::npos) {
        t.text = text.substr(i, 1);
      } else {
        fail(text, i, fmt::format("unexpected character '{}'", c));
      }
      i += t.text.size();
    }
    tokens.push_back(t);
  }
  Token end;
  end.pos = text.size();
  tokens.push_back(end);
  return tokens;
}

struct Value {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;

  static Value of_int(int64_t v) { return {false, v, 0}; }
  static Value of_float(double v) { return {true, 0, v}; }
  double as_double() const { return is_float ? f : static_cast<double>(i); }
  bool truthy() const { return is_float ? (f != 0 && !std::isnan(f)) : i != 0; }
};

int64_t int_pow(int64_t base, int64_t exp) {
  uint64_t result = 1;
  auto b = static_cast<uint64_t>(base);
  while (exp > 0) {
    if (exp & 1) result *= b;
    b *= b;
    exp >>= 1;
  }
  return static_cast<int64_t>(result);
}

using Op = PythonExpr::Op;
using Node = PythonExpr::Node;

Value arithmetic(Op op, Value a, Value b) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (!a.is_float && !b.is_float) {
    const int64_t x = a.i, y = b.i;
    switch (op) {
      case Op::add:
        return Value::of_int(
            static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)));
      case Op::sub:
        return Value::of_int(
            static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)));
      case Op::mul:
        return Value::of_int(
            static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
      case Op::truediv:
        return Value::of_float(y == 0 ? kNaN : static_cast<double>(x) / static_cast<double>(y));
      case Op::floordiv: {
        if (y == 0) return Value::of_float(kNaN);
        int64_t q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) --q;
        return Value::of_int(q);
      }
      case Op::mod: {
        if (y == 0) return Value::of_float(kNaN);
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value::of_int(r);
      }
      case Op::pow:
        if (y >= 0) return Value::of_int(int_pow(x, y));
        return Value::of_float(std::pow(static_cast<double>(x), static_cast<double>(y)));
      default:
        break;
    }
  }
  const double x = a.as_double(), y = b.as_double();
  switch (op) {
    case Op::add:
      return Value::of_float(x + y);
    case Op::sub:
      return Value::of_float(x - y);
    case Op::mul:
      return Value::of_float(x * y);
    case Op::truediv:
      return Value::of_float(y == 0 ? kNaN : x / y);
    case Op::floordiv:
      return Value::of_float(y == 0 ? kNaN : std::floor(x / y));
    case Op::mod: {
      if (y == 0) return Value::of_float(kNaN);
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::of_float(r);
    }
    case Op::pow:
      return Value::of_float(std::pow(x, y));
    default:
      break;
  }
  std::fprintf(stderr, "cutune internal error (python_expr): bad arithmetic op\n");
  std::abort();
}

bool compare(Op op, Value a, Value b) {
  if (!a.is_float && !b.is_float) {
    switch (op) {
      case Op::eq:
        return a.i == b.i;
      case Op::ne:
        return a.i != b.i;
      case Op::lt:
        return a.i < b.i;
      case Op::le:
        return a.i <= b.i;
      case Op::gt:
        return a.i > b.i;
      case Op::ge:
        return a.i >= b.i;
      default:
        break;
    }
  }
  const double x = a.as_double(), y = b.as_double();
  if (std::isnan(x) || std::isnan(y)) return false;
  switch (op) {
    case Op::eq:
      return x == y;
    case Op::ne:
      return x != y;
    case Op::lt:
      return x < y;
    case Op::le:
      return x <= y;
    case Op::gt:
      return x > y;
    case Op::ge:
      return x >= y;
    default:
      break;
  }
  std::fprintf(stderr, "cutune internal error (python_expr): bad comparison op\n");
  std::abort();
}

Value eval(const std::vector<Node>& nodes, int32_t index, std::span<const int64_t> values) {
  const Node& n = nodes[static_cast<size_t>(index)];
  switch (n.op) {
    case Op::constant:
      return Value::of_int(n.value);
    case Op::name:
      return Value::of_int(values[static_cast<size_t>(n.value)]);
    case Op::neg: {
      Value v = eval(nodes, n.lhs, values);
      return v.is_float ? Value::of_float(-v.f) : Value::of_int(-v.i);
    }
    case Op::pos:
      return eval(nodes, n.lhs, values);
    case Op::not_:
      return Value::of_int(eval(nodes, n.lhs, values).truthy() ? 0 : 1);
    case Op::and_: {
      Value l = eval(nodes, n.lhs, values);
      return l.truthy() ? eval(nodes, n.rhs, values) : l;
    }
    case Op::or_: {
      Value l = eval(nodes, n.lhs, values);
      return l.truthy() ? l : eval(nodes, n.rhs, values);
    }
    case Op::min_:
    case Op::max_: {
      Value l = eval(nodes, n.lhs, values), r = eval(nodes, n.rhs, values);
      const bool less = compare(Op::lt, r, l);
      return (n.op == Op::min_) == less ? r : l;  // Python returns the first of equals
    }
    case Op::int_:
    case Op::ceil_:
    case Op::floor_: {
      Value v = eval(nodes, n.lhs, values);
      if (!v.is_float) return v;
      if (std::isnan(v.f) || std::isinf(v.f)) return v;  // Python raises; NaN rejects
      const double r = n.op == Op::int_    ? std::trunc(v.f)
                       : n.op == Op::ceil_ ? std::ceil(v.f)
                                           : std::floor(v.f);
      return Value::of_int(static_cast<int64_t>(r));
    }
    case Op::eq:
    case Op::ne:
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
      return Value::of_int(
          compare(n.op, eval(nodes, n.lhs, values), eval(nodes, n.rhs, values)) ? 1 : 0);
    default:
      return arithmetic(n.op, eval(nodes, n.lhs, values), eval(nodes, n.rhs, values));
  }
}

}  // namespace

// Recursive descent over Python's precedence levels, from `or` down to atoms.
class ExprParser {
 public:
  ExprParser(std::string_view text, std::vector<Token> tokens)
      : text_(text), tokens_(std::move(tokens)) {}

  const Token& peek() const { return tokens_[at_]; }
  bool peek_is(std::string_view s) const {
    return peek().kind != Tok::end && peek().kind != Tok::integer && peek().text == s;
  }
  const Token& next() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }
  void expect(std::string_view s) {
    if (!peek_is(s)) fail_here(fmt::format("expected '{}'", s));
    next();
  }
  [[noreturn]] void fail_here(std::string_view what) const {
    const Token& t = peek();
    if (t.kind == Tok::end) fail(text_, t.pos, fmt::format("{}, found the end", what));
    fail(text_, t.pos, fmt::format("{}, found '{}'", what, t.text));
  }
  size_t cursor() const { return at_; }
  const Token& token(size_t i) const { return tokens_[std::min(i, tokens_.size() - 1)]; }

  // Parses one expression starting at the current token; it ends at the first token that
  // cannot continue it.
  PythonExpr expression(std::span<const std::string> names) {
    PythonExpr expr;
    names_ = names;
    out_ = &expr;
    const size_t start = peek().pos;
    expr.root_ = or_test();
    const size_t end = at_ > 0 ? tokens_[at_ - 1].pos + tokens_[at_ - 1].text.size() : start;
    expr.text_ = std::string(text_.substr(start, end - start));
    std::sort(expr.used_.begin(), expr.used_.end());
    expr.used_.erase(std::unique(expr.used_.begin(), expr.used_.end()), expr.used_.end());
    out_ = nullptr;
    return expr;
  }

 private:
  int32_t add(Op op, int32_t lhs = -1, int32_t rhs = -1, int64_t value = 0) {
    out_->nodes_.push_back(Node{op, lhs, rhs, value});
    return static_cast<int32_t>(out_->nodes_.size() - 1);
  }

  int32_t or_test() {
    int32_t lhs = and_test();
    while (peek_is("or")) {
      next();
      lhs = add(Op::or_, lhs, and_test());
    }
    return lhs;
  }

  int32_t and_test() {
    int32_t lhs = not_test();
    while (peek_is("and")) {
      next();
      lhs = add(Op::and_, lhs, not_test());
    }
    return lhs;
  }

  int32_t not_test() {
    if (peek_is("not")) {
      next();
      return add(Op::not_, not_test());
    }
    return comparison();
  }

  std::optional<Op> comparison_op() const {
    static constexpr std::pair<std::string_view, Op> kOps[] = {{"==", Op::eq}, {"!=", Op::ne},
                                                               {"<", Op::lt},  {"<=", Op::le},
                                                               {">", Op::gt},  {">=", Op::ge}};
    if (peek().kind != Tok::punct) return std::nullopt;
    for (const auto& [s, op] : kOps)
      if (peek().text == s) return op;
    return std::nullopt;
  }

  int32_t comparison() {
    int32_t lhs = arith();
    int32_t result = -1;
    while (auto op = comparison_op()) {
      next();
      int32_t rhs = arith();
      // A chain `a < b < c` is `a < b and b < c`, with `b` shared.
      int32_t link = add(*op, lhs, rhs);
      result = result < 0 ? link : add(Op::and_, result, link);
      lhs = rhs;
    }
    return result < 0 ? lhs : result;
  }

  int32_t arith() {
    int32_t lhs = term();
    while (peek().kind == Tok::punct && (peek().text == "+" || peek().text == "-")) {
      Op op = next().text == "+" ? Op::add : Op::sub;
      lhs = add(op, lhs, term());
    }
    return lhs;
  }

  int32_t term() {
    int32_t lhs = factor();
    for (;;) {
      if (peek().kind != Tok::punct) return lhs;
      std::string_view t = peek().text;
      Op op;
      if (t == "*")
        op = Op::mul;
      else if (t == "/")
        op = Op::truediv;
      else if (t == "//")
        op = Op::floordiv;
      else if (t == "%")
        op = Op::mod;
      else
        return lhs;
      next();
      lhs = add(op, lhs, factor());
    }
  }

  int32_t factor() {
    if (peek().kind == Tok::punct && (peek().text == "-" || peek().text == "+")) {
      Op op = next().text == "-" ? Op::neg : Op::pos;
      return add(op, factor());
    }
    int32_t base = atom();
    if (peek_is("**")) {
      next();
      return add(Op::pow, base,
                 factor());  // right-associative; binds tighter than unary on its left
    }
    return base;
  }

  int32_t atom() {
    const Token& t = peek();
    if (t.kind == Tok::integer) {
      next();
      return add(Op::constant, -1, -1, t.value);
    }
    if (t.kind == Tok::name) {
      if (t.text == "True" || t.text == "False") {
        next();
        return add(Op::constant, -1, -1, t.text == "True" ? 1 : 0);
      }
      static constexpr std::string_view kKeywords[] = {"and", "or", "not", "for",
                                                       "in",  "if", "else"};
      if (std::find(std::begin(kKeywords), std::end(kKeywords), t.text) == std::end(kKeywords)) {
        const Token& after = token(at_ + 1);
        const bool call = after.kind == Tok::punct && after.text == "(";
        const bool subscript = after.kind == Tok::punct && after.text == "[";
        if (call && (t.text == "min" || t.text == "max") && token(at_ + 2).kind == Tok::name &&
            token(at_ + 3).kind == Tok::punct && token(at_ + 3).text == ")") {
          // `max(NAME)`: a value the caller binds (e.g. the largest of a parameter's values).
          return bound_name(t, fmt::format("{}({})", t.text, token(at_ + 2).text), 4);
        }
        if (call && is_function(t.text)) return call_of(t);
        if (subscript && token(at_ + 2).kind == Tok::integer && token(at_ + 3).kind == Tok::punct &&
            token(at_ + 3).text == "]") {
          return bound_name(t, fmt::format("{}[{}]", t.text, token(at_ + 2).value), 4);
        }
        return bound_name(t, std::string(t.text), 1);
      }
    }
    if (peek_is("(")) {
      next();
      int32_t inner = or_test();
      expect(")");
      return inner;
    }
    fail_here("expected a number, a name or '('");
  }

  static bool is_function(std::string_view name) {
    return name == "min" || name == "max" || name == "int" || name == "ceil" || name == "floor";
  }

  // The name `spelled` (its tokens start at `t` and span `tokens` tokens), bound to its
  // position in names_.
  int32_t bound_name(const Token& t, const std::string& spelled, size_t tokens) {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == spelled) {
        for (size_t k = 0; k < tokens; ++k) next();
        out_->used_.push_back(static_cast<int>(i));
        return add(Op::name, -1, -1, static_cast<int64_t>(i));
      }
    }
    fail(text_, t.pos, fmt::format("unknown name '{}'", spelled));
  }

  int32_t call_of(const Token& t) {
    const std::string_view fn = t.text;
    next();
    expect("(");
    std::vector<int32_t> args{or_test()};
    while (peek_is(",")) {
      next();
      args.push_back(or_test());
    }
    expect(")");
    if (fn == "min" || fn == "max") {
      if (args.size() < 2) fail(text_, t.pos, fmt::format("{}() of one value needs a name", fn));
      int32_t folded = args[0];
      for (size_t i = 1; i < args.size(); ++i)
        folded = add(fn == "min" ? Op::min_ : Op::max_, folded, args[i]);
      return folded;
    }
    if (args.size() != 1) fail(text_, t.pos, fmt::format("{}() takes one argument", fn));
    return add(fn == "int" ? Op::int_ : fn == "ceil" ? Op::ceil_ : Op::floor_, args[0]);
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t at_ = 0;
  std::span<const std::string> names_;
  PythonExpr* out_ = nullptr;
};

PythonExpr PythonExpr::parse(std::string_view text, std::span<const std::string> names) {
  ExprParser parser(text, tokenize(text));
  if (parser.peek().kind == Tok::end) fail(text, 0, "empty expression");
  PythonExpr expr = parser.expression(names);
  if (parser.peek().kind != Tok::end) parser.fail_here("expected an operator or the end");
  return expr;
}

bool PythonExpr::test(std::span<const int64_t> values) const {
  return eval(nodes_, root_, values).truthy();
}

double PythonExpr::evaluate(std::span<const int64_t> values) const {
  return eval(nodes_, root_, values).as_double();
}

int64_t PythonExpr::evaluate_int(std::span<const int64_t> values) const {
  Value v = eval(nodes_, root_, values);
  if (v.is_float) throw ExprError(fmt::format("'{}' is not an integer", text_));
  return v.i;
}

namespace {

std::vector<int64_t> range_values(ExprParser& p) {
  p.expect("range");
  p.expect("(");
  std::vector<int64_t> args;
  for (;;) {
    args.push_back(p.expression({}).evaluate_int({}));
    if (!p.peek_is(",")) break;
    p.next();
  }
  const size_t close = p.peek().pos;
  p.expect(")");
  if (args.size() > 3) p.fail_here("range takes at most 3 arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (args.size() == 1)
    stop = args[0];
  else {
    start = args[0];
    stop = args[1];
    if (args.size() == 3) step = args[2];
  }
  if (step == 0) throw ExprError(fmt::format("range step is zero before position {}", close));
  std::vector<int64_t> out;
  for (int64_t v = start; step > 0 ? v < stop : v > stop; v += step) out.push_back(v);
  return out;
}

std::vector<int64_t> list_term(ExprParser& p) {
  if (p.peek_is("list")) {
    p.next();
    p.expect("(");
    auto values = range_values(p);
    p.expect(")");
    return values;
  }
  p.expect("[");
  std::vector<int64_t> out;
  if (p.peek_is("]")) {
    p.next();
    return out;
  }
  // A comprehension has `for` at this bracket's depth; find its variable before parsing the
  // element expression that uses it.
  std::string variable;
  int depth = 0;
  for (size_t i = p.cursor(); p.token(i).kind != Tok::end; ++i) {
    const Token& t = p.token(i);
    if (t.kind == Tok::punct && (t.text == "(" || t.text == "[")) ++depth;
    if (t.kind == Tok::punct && (t.text == ")" || t.text == "]") && depth-- == 0) break;
    if (depth == 0 && t.kind == Tok::name && t.text == "for") {
      if (p.token(i + 1).kind == Tok::name) variable = std::string(p.token(i + 1).text);
      break;
    }
  }
  if (!variable.empty()) {
    const std::string names[] = {variable};
    PythonExpr element = p.expression(names);
    p.expect("for");
    p.next();
    p.expect("in");
    for (int64_t v : range_values(p)) out.push_back(element.evaluate_int(std::span(&v, 1)));
    p.expect("]");
    return out;
  }
  for (;;) {
    out.push_back(p.expression({}).evaluate_int({}));
    if (p.peek_is(",")) {
      p.next();
      if (p.peek_is("]")) break;
      continue;
    }
    break;
  }
  p.expect("]");
  return out;
}

}  // namespace

std::vector<int64_t> parse_values(std::string_view text) {
  ExprParser parser(text, tokenize(text));
  std::vector<int64_t> out = list_term(parser);
  while (parser.peek_is("+")) {
    parser.next();
    auto more = list_term(parser);
    out.insert(out.end(), more.begin(), more.end());
  }
  if (parser.peek().kind != Tok::end) parser.fail_here("expected '+' or the end");
  return out;
}

}  // namespace cutune::replay
