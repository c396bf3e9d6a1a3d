#include "src/export/export_manifest.h"

#include <algorithm>

#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "src/base/output_file.h"

namespace cutune {

namespace {

// The export's own names in its folder: a previous export's files are replaced, anything
// else of that name (a FIFO, a folder) is refused.
void write_file(const std::filesystem::path& path, const char* data, size_t size) {
  write_output_file({.path = path, .flag = "--out", .force = true}, std::string_view(data, size));
}

std::string dtype_name(const ir::Type& type) { return ir::dtype_name(type.dtype); }

}  // namespace

std::string export_name(const std::string& template_name, const std::vector<int64_t>& shape,
                        const std::string& arch) {
  std::string name = template_name + "_";
  for (size_t i = 0; i < shape.size(); ++i) name += (i ? "x" : "") + std::to_string(shape[i]);
  name += "_" + arch;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return name;
}

nlohmann::json manifest_entry(const ExportedKernel& k) {
  nlohmann::json params = nlohmann::json::array();
  for (const KernelParam& p : k.source.params) {
    if (p.tensor_map) {
      // A TMA tensor map passed by value (`const __grid_constant__ CUtensorMap`, 128 bytes),
      // encoded by the caller with cuTensorMapEncodeTiled over the buffer it names; the loader
      // (cubin_loader.h) does it from this description.
      const ir::TensorMapDesc& m = *p.tensor_map;
      const int l2_bytes[] = {0, 64, 128, 256};
      params.push_back(
          {{"name", p.name},
           {"type", "tensor_map"},
           {"pointer", false},
           {"const", true},
           {"elements", 0},
           {"bytes", 128},
           {"tensor_map",
            {{"buffer", m.buffer},
             {"dtype", ir::dtype_name(m.dtype)},
             {"dims", {m.dims[0], m.dims[1]}},
             {"row_stride_bytes", m.row_stride_bytes},
             {"box", {m.box[0], m.box[1]}},
             {"element_strides", {m.element_strides[0], m.element_strides[1]}},
             {"swizzle_bytes", ir::swizzle_span_bytes(m.swizzle)},
             {"l2_promotion_bytes", l2_bytes[static_cast<int>(m.l2_promotion)]}}}});
      if (p.m_row_elements != 0) params.back()["m_row_elements"] = p.m_row_elements;
      continue;
    }
    const int64_t bytes =
        p.is_pointer ? p.elements * p.type.element_bytes() : p.type.element_bytes();
    const bool zero = p.is_pointer && std::find(k.zero_init.begin(), k.zero_init.end(),
                                                p.name) != k.zero_init.end();
    params.push_back({{"name", p.name},
                      {"type", dtype_name(p.type)},
                      {"pointer", p.is_pointer},
                      {"const", p.is_const},
                      {"elements", p.elements},
                      {"bytes", bytes},
                      {"zero_init", zero}});
    if (p.m_row_elements != 0) params.back()["m_row_elements"] = p.m_row_elements;
    if (p.is_pointer &&
        std::find(k.initial.begin(), k.initial.end(), p.name) != k.initial.end())
      params.back()["initial"] = true;
  }
  const LaunchSpec& l = k.source.launch;
  nlohmann::json entry = {{"name", k.name},
          {"kernel", k.symbol.empty() ? k.source.kernel_name : k.symbol},
          {"cubin", k.name + ".cubin"},
          {"source", k.name + ".cu"},
          {"task", k.task},
          {"config", k.config},
          {"grid", {l.grid.x, l.grid.y, l.grid.z}},
          {"block", {l.block.x, l.block.y, l.block.z}},
          {"shared_bytes", {{"static", l.static_smem_bytes}, {"dynamic", l.dynamic_smem_bytes}}},
          {"registers", k.registers},
          {"params", params},
          {"flops", k.flops},
          {"time_s", k.time_s},
          {"gflops", k.time_s > 0 ? k.flops / k.time_s * 1e-9 : 0.0},
          {"baseline", k.baseline ? nlohmann::json(*k.baseline) : nullptr},
          {"baseline_s", k.baseline_s ? nlohmann::json(*k.baseline_s) : nullptr}};
  if (!k.constants.empty()) entry["constants"] = k.constants;
  // A persistent kernel: "grid" is the most blocks it can use; the loader launches
  // min(grid[0], SMs x this) on the user's GPU (launch_grid.h's rule).
  if (l.persistent_blocks_per_sm != 0)
    entry["persistent_blocks_per_sm"] = l.persistent_blocks_per_sm;
  // Thread-block clusters: compiled into the cubin (__cluster_dims__), so a plain launch makes
  // them; the loader keeps a persistent grid.x a multiple of the cluster.
  if (l.cluster_x > 1) entry["cluster"] = {l.cluster_x, 1, 1};
  // A kernel of run-time M: "grid" is for the task's M; the loader launches any M with
  // grid[axis] = ceil(M / rows) x row_blocks (launch_grid.h's rule) and M as the scalar "M".
  if (l.m_rows != 0)
    entry["runtime_m"] = {{"rows", l.m_rows}, {"row_blocks", l.m_row_blocks}, {"axis", l.m_axis}};
  return entry;
}

void write_export(const std::filesystem::path& dir,
                  const std::vector<std::pair<ExportedKernel, Cubin>>& kernels,
                  const nlohmann::json& dispatch) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [kernel, cubin] : kernels) {
    write_file(dir / (kernel.name + ".cubin"), cubin.image.data(), cubin.image.size());
    write_file(dir / (kernel.name + ".cu"), kernel.source.code.data(), kernel.source.code.size());
    entries.push_back(manifest_entry(kernel));
  }
  nlohmann::json j = {{"version", 1}, {"kernels", entries}};
  if (!dispatch.is_null()) j["dispatch"] = dispatch;
  const std::string manifest = j.dump(2) + "\n";
  write_file(dir / "manifest.json", manifest.data(), manifest.size());
}

}  // namespace cutune
