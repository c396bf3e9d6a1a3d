// `cutune bench gemm --shape M=lo..hi,N,K --table TABLE.json`: a dispatch table (tune --shape
// M=lo..hi --table) against cuBLAS at M spread over the range, the tuned points and the M
// between them alike: at each M the table's kernel for it and cuBLAS in the same harness,
// interleaved (Measurer::versus_baseline), with their ratio and the geometric mean of the
// ratios. GPU only: without one it ends in one line, as bench does.

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "src/cli/cmd_bench_range.h"
#include "src/measure/gpu_measurer.h"
#include "src/runtime/device.h"
#include "src/runtime/driver_api.h"
#include "src/tune/dispatch_table.h"

namespace cutune::cli {

void run_bench_range(const TaskOptions& task, const std::string& table_path, int points, int rounds,
                     double seconds, bool no_flush, int device_index) {
  if (table_path.empty())
    throw UsageError("bench on a range of M times a dispatch table: add --table TABLE.json");
  require_readable_file(table_path, "--table");
  nlohmann::json t;
  try {
    std::ifstream in(table_path);
    t = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("--table {}: not JSON: {}", table_path, e.what()));
  }
  const MRange range = parse_m_range(task.shape, 3, points);
  std::vector<MInterval> intervals;
  std::vector<nlohmann::json> knobs;
  std::string template_name, op;
  try {
    template_name = t.at("template");
    op = t.at("op");
    if (t.at("n") != range.rest[0] || t.at("k") != range.rest[1])
      throw UsageError(fmt::format("--table {} is for N={} K={}, not the --shape's", table_path,
                                   t.at("n").dump(), t.at("k").dump()));
    for (const nlohmann::json& row : t.at("table")) {
      intervals.push_back({row.at("m_lo").get<int64_t>(), row.at("m_hi").get<int64_t>()});
      knobs.push_back(row.at("knobs"));
    }
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(
        fmt::format("--table {}: not a dispatch table of tune --table: {}", table_path, e.what()));
  }
  // Every M of the range's points and the M between them, each inside the table.
  std::vector<int64_t> ms = range.points;
  for (int64_t m : check_points(range.points)) ms.push_back(m);
  std::sort(ms.begin(), ms.end());
  for (int64_t m : ms) {
    if (!interval_of(intervals, m))
      throw UsageError(fmt::format("--shape {}: M={} is outside the table's M", task.shape, m));
  }

  require_driver();
  const std::vector<DeviceInfo> devices = list_devices();
  if (device_index < 0 || size_t(device_index) >= devices.size())
    throw UsageError(
        fmt::format("--device {}: {} device(s) present", device_index, devices.size()));
  const DeviceInfo& device = devices[size_t(device_index)];
  GpuMeasureOptions options;
  options.device = device_index;
  options.flush_l2 = !no_flush;
  options.min_repeats = std::max(20 / std::max(rounds, 1), 5);
  options.max_repeats = 1000;
  options.max_measure_seconds = seconds / std::max(rounds, 1);
  options.timeout_seconds = 30;
  options.early_stop_factor = 0;
  options.compile_jobs = 1;

  nlohmann::json rows = nlohmann::json::array();
  double log_sum = 0;
  int ratios = 0;
  for (int64_t m : ms) {
    const size_t kernel = *interval_of(intervals, m);
    auto tmpl = make_template(op, {m, range.rest[0], range.rest[1]}, template_name);
    const Config config = tmpl->space().from_json({{"knobs", knobs[kernel]}});
    std::unique_ptr<Measurer> measurer = make_gpu_measurer(*tmpl, options, device);
    const std::vector<MeasureResult> r = measurer->versus_baseline({config}, rounds);
    nlohmann::json row = {{"m", m}, {"kernel", kernel}, {"status", to_string(r[1].status)}};
    if (r[0].ok()) row["cublas_ms"] = r[0].median_s() * 1e3;
    if (r[1].ok()) row["table_ms"] = r[1].median_s() * 1e3;
    if (r[0].ok() && r[1].ok() && r[0].timer == r[1].timer) {
      const double ratio = r[0].median_s() / r[1].median_s();
      row["ratio_to_cublas"] = ratio;
      log_sum += std::log(ratio);
      ++ratios;
    }
    fmt::print(stderr, "[bench {}/{}] M={}\n", rows.size() + 1, ms.size(), m);
    rows.push_back(std::move(row));
  }
  nlohmann::json out = {{"device", device.name},
                        {"template", template_name},
                        {"n", range.rest[0]},
                        {"k", range.rest[1]},
                        {"rows", rows}};
  if (ratios > 0) out["geomean_ratio_to_cublas"] = std::exp(log_sum / ratios);
  if (task.json) {
    print_json(out);
    return;
  }
  fmt::print("{} N={} K={} on {}: the dispatch table against cuBLAS\n", template_name,
             range.rest[0], range.rest[1], device.name);
  fmt::print("  {:>6} {:>7} {:>10} {:>10} {:>7}\n", "M", "kernel", "table ms", "cuBLAS ms",
             "ratio");
  auto num = [](const nlohmann::json& r, const char* key) {
    return r.contains(key) ? fmt::format("{:.4g}", r[key].get<double>()) : std::string("-");
  };
  for (const nlohmann::json& r : rows) {
    fmt::print("  {:>6} {:>7} {:>10} {:>10} {:>7}\n", r["m"].get<int64_t>(),
               fmt::format("#{}", r["kernel"].get<size_t>()), num(r, "table_ms"),
               num(r, "cublas_ms"), num(r, "ratio_to_cublas"));
  }
  if (out.contains("geomean_ratio_to_cublas"))
    fmt::print("geometric mean, cuBLAS time / table time: {:.3f}\n",
               out["geomean_ratio_to_cublas"].get<double>());
}

}  // namespace cutune::cli
