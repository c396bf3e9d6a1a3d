#include "kernels/emulated_check.h"

#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

namespace cutune {

EmulatedCheck check_source_in_emulator(const Template& tmpl, const CudaSource& source,
                                       emu::Emulator& emulator, double tolerance, uint64_t seed) {
  std::vector<TensorSpec> specs = tmpl.tensors();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> host(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    host[i].resize(size_t(specs[i].elements));
    if (specs[i].is_output) {
      std::fill(host[i].begin(), host[i].end(), std::numeric_limits<float>::quiet_NaN());
    } else {
      for (float& v : host[i]) v = dist(rng);
    }
  }
  std::vector<emu::HostBuffer> buffers;
  for (const auto& h : host) buffers.push_back(emu::HostBuffer::from_floats(h));

  EmulatedCheck out;
  emu::EmuResult r = emulator.run(source, buffers);
  out.compile_seconds = r.compile_seconds;
  out.run_seconds = r.run_seconds;
  out.status = emu::to_string(r.status);
  if (r.status != emu::EmuStatus::ok) {
    out.max_rel_error = std::numeric_limits<double>::infinity();
    std::string msg = r.message;
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl);
    out.message = msg;
    return out;
  }

  std::vector<std::vector<float>> expected = host;
  tmpl.reference(expected);
  double worst = 0;
  std::string where;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].is_output) continue;
    double sum_sq = 0;
    for (float v : expected[i]) sum_sq += double(v) * v;
    double rms = std::sqrt(sum_sq / double(std::max<size_t>(expected[i].size(), 1)));
    double floor = std::max(rms, 1e-6);
    std::vector<float> got = buffers[i].to_floats();
    for (size_t e = 0; e < got.size(); ++e) {
      double ref = expected[i][e];
      double err = std::isfinite(got[e])
                       ? std::abs(double(got[e]) - ref) / std::max(std::abs(ref), floor)
                       : std::numeric_limits<double>::infinity();
      if (err > worst) {
        worst = err;
        where = fmt::format("{}[{}] = {} but the reference is {}", specs[i].name, e, got[e], ref);
      }
    }
  }
  out.max_rel_error = worst;
  out.passed = worst < tolerance;
  if (!out.passed) {
    out.status = "wrong_answer";
    out.message = fmt::format("max error {:.3g} at {}", worst, where);
  }
  return out;
}

EmulatedCheck check_in_emulator(const Template& tmpl, const Config& config,
                                const ir::TargetLimits& limits, emu::Emulator& emulator,
                                double tolerance, uint64_t seed) {
  Lowered l = lower(tmpl, config, limits);
  if (!l.ok()) {
    EmulatedCheck out;
    out.status = "rejected";
    out.max_rel_error = std::numeric_limits<double>::infinity();
    out.message = l.verify.errors.empty() ? "rejected" : l.verify.errors.front();
    return out;
  }
  return check_source_in_emulator(tmpl, *l.source, emulator, tolerance, seed);
}

}  // namespace cutune
