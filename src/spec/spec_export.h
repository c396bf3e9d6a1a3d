#pragma once
// `cutune export LOG --spec SPEC.json --out DIR`: the best configuration of a spec task's log
// compiled for its architecture and written as the templates' kernels are
// (src/export/export_manifest.h): DIR/NAME.cubin, DIR/NAME.cu (the translation unit NVRTC
// compiled: defines, then the user's file) and DIR/manifest.json (the symbol to load, the
// configuration's parameters, the launch geometry, the parameters, the __constant__ arguments,
// the time), so that a program can load and launch it without cutune. Compiling only: no GPU
// needed.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/records/record.h"
#include "src/spec/spec_task.h"

namespace cutune::spec {

struct SpecExport {
  std::filesystem::path cubin, source, manifest;
  nlohmann::json entry;  // the kernel's manifest entry
};

// The fastest ok record of `records` whose knobs are the spec's parameters (a log of `tune
// --spec`, or of `tune --spec --replay` over the same space). `arch` empty: the record's
// architecture, or sm_90 for a replayed one. SpecError (one line) when no record fits the
// spec, the configuration does not compile, or a file cannot be written.
SpecExport export_spec_best(const SpecTask& task, const std::vector<Record>& records,
                            const std::filesystem::path& out_dir, const std::string& arch = {});

}  // namespace cutune::spec
