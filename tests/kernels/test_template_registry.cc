// The registry of template families: the combinations each supports, their names, the alias
// table of the names logs hold, defaults by architecture, and the errors for what no family has.

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "kernels/template.h"
#include "src/lower/lower.h"

using namespace cutune;

namespace {

std::vector<int64_t> shape_for(const std::string& computation) {
  if (computation == "gemm") return {72, 136, 40};
  if (computation == "conv2d") return {2, 16, 9, 9, 32, 3, 3, 1, 1};
  return {1, 16, 9, 9, 3, 3, 1, 1};
}

// The CUDA of each reference configuration (empty where it does not lower), for sm_90.
std::vector<std::string> reference_sources(const Template& t) {
  ir::TargetLimits limits;
  limits.arch = "sm_90";
  std::vector<std::string> out;
  for (const Config& c : t.reference_configs()) {
    Lowered l = lower(t, c, limits);
    out.push_back(l.ok() ? l.source->code : "");
  }
  return out;
}

std::string error_of(const TaskRequest& r, const std::string& arch = "") {
  try {
    resolve_template(r, arch);
  } catch (const TaskError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every template name of before builds the template it named", "[template][task]") {
  std::set<std::string> names;
  for (const TemplateAlias& a : template_aliases()) {
    INFO(a.name);
    CHECK(names.insert(a.name).second);
    // What new records write for these parameters is the name and operator of before.
    CHECK(template_name(a.params) == a.name);
    CHECK(operator_name(a.params) == a.op);
    CHECK(template_params(a.name) == a.params);
    const std::vector<int64_t> shape = shape_for(a.params.computation);
    auto by_name = make_template(a.op, shape, a.name);
    CHECK(by_name->name() == a.name);
    CHECK(by_name->op() == a.op);
    // As a log names it, and as a computation with its parameters: the same template.
    TaskRequest r{a.params.computation, a.params.dtype,  a.params.out_dtype,
                  a.params.layout,      a.params.family, ""};
    const ResolvedTemplate resolved = resolve_template(r, "sm_80");
    CHECK(resolved.name == a.name);
    CHECK(resolved.op == a.op);
    auto by_params = make_template(resolved.params, shape);
    CHECK(by_params->space().size() == by_name->space().size());
    CHECK(by_params->flops() == by_name->flops());
    CHECK(reference_sources(*by_params) == reference_sources(*by_name));
  }
  CHECK(names.size() == 29);
}

TEST_CASE("a family's combinations have one name each, and build under it", "[template][task]") {
  std::set<std::string> names;
  for (const TemplateFamily* f : template_families()) {
    for (const TaskParams& p : f->supported) {
      const std::string name = template_name(p);
      INFO(f->computation << "/" << f->family << ": " << name);
      CHECK(p.computation == f->computation);
      CHECK(p.family == f->family);
      CHECK(names.insert(name).second);
      CHECK(template_params(name) == p);
      auto t = make_template(p, shape_for(p.computation));
      CHECK(t->name() == name);
      CHECK(t->op() == operator_name(p));
    }
  }
  // Every name a log may hold is a supported combination's.
  for (const TemplateAlias& a : template_aliases()) CHECK(names.count(a.name) == 1);
}

TEST_CASE("computations list their families, whose defaults follow the architecture",
          "[template]") {
  std::vector<std::string> listed;
  for (const TemplateFamily* f : template_families())
    listed.push_back(f->computation + "/" + f->family);
  CHECK(listed == std::vector<std::string>{"conv2d/simt", "conv2d/mma", "conv2d/wgmma",
                                           "depthwise_conv2d/simt", "gemm/simt", "gemm/mma",
                                           "gemm/wgmma"});
  CHECK(template_names("gemm", "simt") == std::vector<std::string>{"gemm_nn", "gemm_nt"});
  CHECK(template_names("gemm", "", "fp32") == std::vector<std::string>{"gemm_nn", "gemm_nt"});

  const TaskParams mma{"gemm", "fp16", "fp32", "nn", "mma"};
  CHECK(default_params("gemm", "fp16") == mma);
  CHECK(default_params("gemm", "fp16", "sm_80") == mma);
  for (const char* hopper : {"sm_90", "sm_90a"}) {
    CHECK(default_params("gemm", "bf16", hopper) ==
          TaskParams{"gemm", "bf16", "fp32", "nn", "wgmma"});
    CHECK(default_params("conv2d", "fp16", hopper) ==
          TaskParams{"conv2d", "fp16", "fp32", "nhwc", "wgmma"});
    CHECK(default_params("gemm", "fp32", hopper) ==
          TaskParams{"gemm", "fp32", "fp32", "nn", "simt"});
  }
  CHECK(default_params("conv2d", "fp32") == TaskParams{"conv2d", "fp32", "fp32", "nchw", "simt"});
  CHECK_THROWS_WITH(default_params("depthwise_conv2d", "bf16"),
                    Catch::Contains("depthwise_conv2d has no template for --dtype bf16"));
}

TEST_CASE("a request names a computation and parameters, or a template", "[template][task]") {
  TaskRequest r{"gemm", "fp16", "", "nt", "", ""};
  CHECK(resolve_template(r, "sm_90").name == "gemm_fp16_wgmma_nt");
  CHECK(resolve_template(r, "sm_86").name == "gemm_fp16_nt");
  CHECK(resolve_template(r, "sm_86").op == "gemm_fp16");
  // A computation takes any of its templates by name; an operator name of before only those of
  // its dtype.
  CHECK(resolve_template({"gemm", "", "", "", "", "gemm_fp16_nt"}, "").params ==
        TaskParams{"gemm", "fp16", "fp32", "nt", "mma"});
  CHECK(make_template("gemm", {8, 8, 8}, "gemm_bf16_wgmma_nt_out16")->op() == "gemm_bf16");
  CHECK_THAT(error_of({"gemm_fp16", "", "", "", "", "gemm_nt"}),
             Catch::StartsWith("unknown template 'gemm_nt' for gemm_fp16 (known: gemm_fp16_nn,"));
  CHECK_THAT(error_of({"gemm_fp16", "bf16", "", "", "", ""}),
             Catch::Contains("gemm_fp16 is fp16; for --dtype bf16 name the computation"));
  CHECK_THAT(error_of({"conv9", "", "", "", "", ""}),
             Catch::StartsWith("unknown operator 'conv9' (known: conv2d, depthwise_conv2d, gemm"));
}

TEST_CASE("a combination no family supports is one line naming those supported", "[template]") {
  const std::string layout = error_of({"gemm", "fp16", "", "nchw", "", ""}, "sm_80");
  CHECK(layout ==
        "gemm has no template with dtype fp16, layout nchw (dtype/out-dtype/layout/family: "
        "fp16/fp32/nn/mma, fp16/fp32/nt/mma, fp16/fp16/nn/mma, fp16/fp16/nt/mma, "
        "fp16/fp32/nn/wgmma, fp16/fp32/nt/wgmma, fp16/fp16/nn/wgmma, fp16/fp16/nt/wgmma)");
  CHECK_THAT(error_of({"conv2d", "", "", "", "wgmma", ""}),
             Catch::Equals("conv2d has no template with family wgmma (dtype/out-dtype/layout/"
                           "family: fp32/fp32/nchw/simt, fp32/fp32/nhwc/simt)"));
  CHECK_THAT(error_of({"gemm", "", "", "nn", "", "gemm_nt"}),
             Catch::Equals("template gemm_nt has layout nt; asked: layout nn"));
  CHECK_THAT(error_of({"gemm", "fp32", "", "", "", "gemm_fp16_nt"}),
             Catch::Equals("template gemm_fp16_nt has dtype fp16; asked: dtype fp32"));
  CHECK_THROWS_AS(make_template(TaskParams{"gemm", "fp16", "fp32", "nchw", "mma"}, {8, 8, 8}),
                  TaskError);
}
