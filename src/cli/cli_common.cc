#include "src/cli/cli_common.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/base/output_file.h"
#include "src/runtime/device.h"
#include "src/measure/gpu_measurer.h"

namespace cutune::cli {

void TaskOptions::add_to(CLI::App& cmd, bool with_arch, bool or_spec) {
  cmd.add_option("op", op, or_spec ? "operator (see `cutune ops`), or --spec FILE"
                                   : "operator (see `cutune ops`)")
      ->required(!or_spec);
  cmd.add_option("--shape", shape, "problem shape, e.g. 1024,1024,1024 for gemm M,N,K")
      ->required(!or_spec);
  cmd.add_option("--template", template_name,
                 "schedule template (default: the one the task parameters name)");
  add_params_to(cmd);
  if (with_arch) {
    cmd.add_option("--arch", arch,
                   "target architecture, e.g. sm_90 (default: detected GPU, else sm_90)");
  }
  cmd.add_flag("--json", json, "machine-readable output");
}

void TaskOptions::add_params_to(CLI::App& cmd) {
  cmd.add_option("--dtype", dtype, "input element type: fp32, fp16 or bf16 (default: fp32)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  cmd.add_option("--out-dtype", out_dtype,
                 "output element type (default: fp32; fp16 or bf16 like the inputs)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  cmd.add_option("--layout", layout,
                 "nn or nt (GEMM: B stored [K,N] or [N,K]); nchw or nhwc (convolution input)")
      ->check(CLI::IsMember({"nn", "nt", "nchw", "nhwc"}));
  cmd.add_option("--family", family,
                 "instructions: simt (FMA), mma (mma.sync tensor cores) or wgmma (Hopper); "
                 "default: the target's best")
      ->check(CLI::IsMember({"simt", "mma", "wgmma"}));
  cmd.add_option("--epilogue", epilogue,
                 "fused epilogue, ops joined by commas: alpha, beta, bias, relu, gelu, "
                 "gelu_tanh, silu, residual; out = act(alpha*acc + beta*C + bias) + residual "
                 "(default: none)");
}

std::unique_ptr<Template> TaskOptions::make() const {
  // The parameters not given are the operator's default template's for the target (on Hopper
  // its wgmma one).
  const ResolvedTemplate r = resolve_template(request(), resolved_arch());
  std::unique_ptr<Template> t = make_template(r.params, parse_shape(shape));
  if (!arch.empty()) require_arch_supports(*t, arch);
  return t;
}

std::string TaskOptions::resolved_arch() const { return arch.empty() ? default_arch() : arch; }

ir::TargetLimits TaskOptions::limits() const {
  DeviceInfo d;
  try {
    d = target_limits(resolved_arch());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  for (const DeviceInfo& dev : list_devices()) {
    if (dev.arch() == resolved_arch()) {
      d = dev;
      break;
    }
  }
  ir::TargetLimits l = verifier_limits(d);
  l.arch = resolved_arch();
  return l;
}

CLI::Option* add_seed_option(CLI::App& cmd, uint64_t& seed, const std::string& description,
                             const std::string& name) {
  // CLI11 would wrap "-1" around to 2^64 - 1 on some versions; a seed is never negative.
  return cmd.add_option(name, seed, description)
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) {
            return text.starts_with('-') ? std::string("must be an integer >= 0") : std::string();
          },
          ""));
}

CLI::Validator number_in(double least, double most) {
  return CLI::Validator(
      [least, most](std::string& text) {
        const std::string range = std::isinf(most) ? fmt::format(">= {}", least)
                                                   : fmt::format("in [{}, {}]", least, most);
        double v = std::nan("");
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) v = std::nan("");
        } catch (const std::exception&) {
        }
        if (std::isfinite(v) && v >= least && v <= most) return std::string();
        return fmt::format("must be a number {} (got {})", range, text);
      },
      "");
}

void reject_given(const CLI::App& cmd, const std::vector<std::string>& names,
                  const std::string& why) {
  for (const std::string& name : names)
    if (cmd.count(name) > 0) throw UsageError(fmt::format("{} {}", name, why));
}

void require_readable_file(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(fmt::format("{}: no such file: {}", flag, path));
  if (fs::is_directory(path, ec)) {
    throw UsageError(fmt::format("{}: {} is a directory; expected a file", flag, path));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    throw UsageError(fmt::format("{}: cannot read {}: permission denied", flag, path));
  }
}

void require_writable_file(const std::string& path, const std::string& flag) {
  check_output({.path = path, .flag = flag}, OutputMode::append);
  const std::string parent = std::filesystem::path(path).parent_path().string();
  if (::access(path.c_str(), F_OK) == 0 ? ::access(path.c_str(), W_OK) != 0
                                        : ::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) {
    throw UsageError(fmt::format("{}: cannot write {}: permission denied", flag, path));
  }
}

void require_arch_supports(const Template& tmpl, const std::string& arch) {
  bool tensor_cores = false;
  for (const TensorSpec& t : tmpl.tensors()) {
    tensor_cores =
        tensor_cores || t.type.dtype == ir::DType::Float16 || t.type.dtype == ir::DType::BFloat16;
  }
  if (!tensor_cores) return;
  int sm = 0;
  if (arch.starts_with("sm_")) {
    std::from_chars(arch.data() + 3, arch.data() + arch.size(), sm);
  }
  if (sm < 80) {
    throw UsageError(
        fmt::format("{} cannot run on {}: its tensor-core mma.sync m16n8k16 on "
                    "16-bit inputs needs sm_80 or newer",
                    tmpl.name(), arch));
  }
}

namespace {

std::atomic<bool> g_interrupted{false};
struct sigaction g_previous_sigint {};
std::vector<std::string> g_command_line;

std::atomic<int64_t> g_first_interrupt_ns{0};

int64_t monotonic_ns() {  // clock_gettime is async-signal-safe
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

extern "C" void on_sigint(int) {
  const int64_t now = monotonic_ns();
  if (g_interrupted.exchange(true)) {
    // One interrupt can arrive twice: `kill` of the process and of its group (as `timeout`
    // and process managers send it). Only a second Ctrl-C, later, stops at once.
    if (now - g_first_interrupt_ns.load() < 250'000'000) return;
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);  // delivered when this handler returns
    return;
  }
  g_first_interrupt_ns = now;
  static const char kMessage[] =
      "\ncutune: interrupted; finishing the batch in flight (Ctrl-C again to stop at once)\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
}

// Quoted for a POSIX shell where it needs to be.
std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=,:+@%") == std::string::npos) {
    return w;
  }
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_interrupted = false;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_sigint);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &g_previous_sigint, nullptr); }

const std::atomic<bool>* InterruptGuard::flag() const { return &g_interrupted; }

void set_command_line(int argc, char** argv) { g_command_line.assign(argv, argv + argc); }

std::string resume_command(const std::string& log) {
  std::string out = "cutune";
  bool has_resume = false;
  for (size_t i = 1; i < g_command_line.size(); ++i) {
    has_resume = has_resume || g_command_line[i] == "--resume";
    out += " " + shell_word(g_command_line[i]);
  }
  if (!log.empty()) out += " --log " + shell_word(log);
  if (!has_resume) out += " --resume";
  return out;
}

Config parse_config(const ConfigSpace& space, const std::string& text) {
  uint64_t index = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (ec == std::errc() && p == text.data() + text.size()) return space.get(index);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    throw UsageError(
        fmt::format("bad --config '{}': expected a configuration index or a JSON object", text));
  }
  return space.from_json(j);
}

std::string values_text(const std::vector<int64_t>& values, size_t shown) {
  if (values.size() <= shown) return fmt::format("{}", fmt::join(values, ", "));
  return fmt::format("{}, ... ({} values)",
                     fmt::join(values.begin(), values.begin() + static_cast<ptrdiff_t>(shown), ", "),
                     values.size());
}

std::string compile_log_for_people(const std::string& log) {
  std::string text;
  text.reserve(log.size());
  for (char c : log)
    if (c != '\0') text += c;
  // "file.cu(12): error: ...", "error: ...", "catastrophic error: ..."; not a warning that
  // merely mentions the word.
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line(text.data() + start, end - start);
    if (line.starts_with("error") || line.find(": error") != std::string_view::npos ||
        line.find("catastrophic error") != std::string_view::npos) {
      if (start == 0) return text;
      std::string first(line);
      text.erase(start, end - start + (end < text.size() ? 1 : 0));
      return first + "\n" + text;
    }
    start = end + 1;
  }
  return text;
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << std::endl; }

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t i = static_cast<size_t>(p * double(values.size() - 1) + 0.5);
  return values[std::min(i, values.size() - 1)];
}

}  // namespace cutune::cli
