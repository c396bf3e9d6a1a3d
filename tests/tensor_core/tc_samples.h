#pragma once
// Shared helpers for the tensor-core tests: fixed configurations and sampling.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/template.h"
#include "tests/kernels/gemm_samples.h"

namespace cutune::test {

// A configuration of the tensor-core GEMM from its knobs as JSON.
inline Config tc_config(const Template& t, const char* knobs) {
  return t.space().from_json(nlohmann::json::parse(knobs));
}

// The generated source of a configuration that must lower.
inline CudaSource tc_source(const Template& t, const Config& c) {
  Lowered l = lower(t, c, ir::TargetLimits{});
  INFO(describe(t, c) << "\n" << l.build_error);
  for (const std::string& e : l.verify.errors) INFO(e);
  REQUIRE(l.ok());
  return *l.source;
}

// Every knob, with the scalar (no cp.async, no ldmatrix) and the full-featured choices.
inline const char* kTcScalar =
    R"({"knobs":{"block_m":32,"block_n":32,"block_k":16,"warp_m":16,"warp_n":16,"stages":2,)"
    R"("smem_layout":0,"copy_bytes":2,"ldmatrix":0,"raster_group":1,"split_k":1,)"
    R"("epilogue_vec":1}})";
inline const char* kTcFull =
    R"({"knobs":{"block_m":64,"block_n":64,"block_k":32,"warp_m":32,"warp_n":32,"stages":3,)"
    R"("smem_layout":2,"copy_bytes":16,"ldmatrix":1,"raster_group":4,"split_k":1,)"
    R"("epilogue_vec":2}})";

}  // namespace cutune::test
