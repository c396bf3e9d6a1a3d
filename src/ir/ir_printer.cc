#include "src/ir/ir_printer.h"

#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "src/ir/expr_text.h"
#include "src/ir/ir_operators.h"
#include "src/ir/ir_visitor.h"
#include "src/ir/simplify.h"

namespace cutune::ir {

namespace {

class StmtPrinter : public IRVisitor {
 public:
  std::string take() { return std::move(out_); }

  using IRVisitor::visit_node;

  void visit_node(const For* op) override {
    line(fmt::format("for {} in [{}, {}) {} {{", op->var, text(op->min),
                     text(simplify(op->min + op->extent)), for_kind_name(op->kind)));
    nested(op->body);
    line("}");
  }
  void visit_node(const Allocate* op) override {
    line(fmt::format("allocate {}: {}[{}] {}", op->buffer->name, cuda_type_name(op->buffer->type),
                     op->buffer->elements, scope_name(op->buffer->scope)));
    visit(op->body);
  }
  void visit_node(const Store* op) override {
    std::string lanes = op->lanes() > 1 ? fmt::format("x{}", op->lanes()) : "";
    line(fmt::format("{}[{}]{} = {}", op->buffer->name, text(op->index), lanes, text(op->value)));
  }
  void visit_node(const Sync*) override { line("sync"); }
  void visit_node(const IfThenElse* op) override {
    line(fmt::format("if ({}) {{", text(op->condition)));
    nested(op->then_case);
    if (op->else_case.defined()) {
      line("} else {");
      nested(op->else_case);
    }
    line("}");
  }
  void visit_node(const Block* op) override {
    for (const Stmt& s : op->stmts) visit(s);
  }
  void visit_node(const LetStmt* op) override {
    line(fmt::format("let {} = {}", op->var, text(op->value)));
    visit(op->body);
  }
  void visit_node(const Evaluate* op) override { line(text(op->value)); }

 private:
  static std::string text(const Expr& e) { return expr_text(e, ExprTextStyle{}); }
  void line(const std::string& s) {
    out_.append(indent_ * 2, ' ');
    out_ += s;
    out_ += '\n';
  }
  void nested(const Stmt& s) {
    ++indent_;
    visit(s);
    --indent_;
  }

  std::string out_;
  int indent_ = 0;
};

}  // namespace

std::string to_string(const Expr& e) { return expr_text(e, ExprTextStyle{}); }

std::string to_string(const Stmt& s) {
  StmtPrinter p;
  p.visit(s);
  return p.take();
}

std::string to_string(const Kernel& k) {
  std::string params;
  for (const Buffer& b : k.buffers) {
    if (!params.empty()) params += ", ";
    params += fmt::format("{}{}: {}[{}]", b->read_only ? "const " : "", b->name,
                          cuda_type_name(b->type), b->elements);
  }
  for (const Expr& v : k.scalars) {
    if (!params.empty()) params += ", ";
    params += fmt::format("{}: {}", to_string(v), cuda_type_name(v.type()));
  }
  for (const TensorMapParam& m : k.tensor_maps) {
    if (!params.empty()) params += ", ";
    params += fmt::format("{}: tensor_map({}, {}x{} box {}x{}, swizzle {})", m.name, m.desc.buffer,
                          m.desc.dims[0], m.desc.dims[1], m.desc.box[0], m.desc.box[1],
                          swizzle_name(m.desc.swizzle));
  }
  std::string body = to_string(k.body);
  std::string indented;
  std::istringstream in(body);
  for (std::string l; std::getline(in, l);) indented += "  " + l + "\n";
  return fmt::format("kernel {}({}) {{\n{}}}\n", k.name, params, indented);
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }
std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

Expr all_of(const std::vector<Expr>& conditions) {
  Expr result;
  for (const Expr& c : conditions) {
    if (!c.defined()) continue;
    result = result.defined() ? (result && c) : c;
  }
  return result;
}

}  // namespace cutune::ir
