#include "src/target/device_info.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

namespace cutune {

namespace {

constexpr int kKiB = 1024;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// Limits from the CUDA C++ Programming Guide's compute capability tables; whole-device
// numbers from the named part's data sheet.
struct ArchRow {
  const char* arch;
  const char* part;
  int cc_major, cc_minor;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int max_shared_per_sm;
  int max_shared_per_block_optin;
  int reserved_shared_per_block;
  int sm_count;
  int l2_bytes;
  int clock_khz;
  int mem_clock_khz;
  int mem_bus_width;
  uint64_t total_mem;
};

constexpr std::array kArchRows = {
    ArchRow{"sm_70", "Tesla V100-SXM2-16GB", 7, 0, 2048, 32, 96 * kKiB, 96 * kKiB, 0, 80,
            6 * kKiB* kKiB, 1530000, 877000, 4096, 16 * kGiB},
    ArchRow{"sm_75", "Tesla T4", 7, 5, 1024, 16, 64 * kKiB, 64 * kKiB, 0, 40, 4 * kKiB* kKiB,
            1590000, 5001000, 256, 16 * kGiB},
    ArchRow{"sm_80", "A100-SXM4-40GB", 8, 0, 2048, 32, 164 * kKiB, 163 * kKiB, kKiB, 108,
            40 * kKiB* kKiB, 1410000, 1215000, 5120, 40 * kGiB},
    ArchRow{"sm_86", "GeForce RTX 3090", 8, 6, 1536, 16, 100 * kKiB, 99 * kKiB, kKiB, 82,
            6 * kKiB* kKiB, 1695000, 9751000, 384, 24 * kGiB},
    ArchRow{"sm_89", "GeForce RTX 4090", 8, 9, 1536, 24, 100 * kKiB, 99 * kKiB, kKiB, 128,
            72 * kKiB* kKiB, 2520000, 10501000, 384, 24 * kGiB},
    ArchRow{"sm_90", "H100 SXM5 80GB", 9, 0, 2048, 32, 228 * kKiB, 227 * kKiB, kKiB, 132,
            50 * kKiB* kKiB, 1980000, 2619000, 5120, 80 * kGiB},
    ArchRow{"sm_100", "B200", 10, 0, 2048, 32, 228 * kKiB, 227 * kKiB, kKiB, 148, 126 * kKiB* kKiB,
            1965000, 3996000, 8192, 180 * kGiB},
    ArchRow{"sm_120", "GeForce RTX 5090", 12, 0, 1536, 32, 100 * kKiB, 99 * kKiB, kKiB, 170,
            96 * kKiB* kKiB, 2407000, 14001000, 512, 32 * kGiB},
};

std::string known_list() {
  std::string out;
  for (const ArchRow& row : kArchRows) out += (out.empty() ? "" : ", ") + std::string(row.arch);
  return out;
}

// "sm_90a" and "sm_100f" name feature sets of sm_90 and sm_100; their limits are the same.
std::string base_arch(const std::string& arch) {
  if (arch.size() > 3 && (arch.back() == 'a' || arch.back() == 'f'))
    return arch.substr(0, arch.size() - 1);
  return arch;
}

}  // namespace

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

DeviceInfo target_limits(const std::string& arch) {
  const std::string base = base_arch(arch);
  for (const ArchRow& row : kArchRows) {
    if (base != row.arch) continue;
    DeviceInfo info;
    info.name = fmt::format("{} (limits of {})", row.arch, row.part);
    info.cc_major = row.cc_major;
    info.cc_minor = row.cc_minor;
    info.sm_count = row.sm_count;
    info.max_threads_per_block = 1024;
    info.max_shared_per_block = 48 * kKiB;
    info.max_shared_per_block_optin = row.max_shared_per_block_optin;
    info.max_shared_per_sm = row.max_shared_per_sm;
    info.reserved_shared_per_block = row.reserved_shared_per_block;
    info.regs_per_block = 64 * kKiB;
    info.regs_per_sm = 64 * kKiB;
    info.max_regs_per_thread = 255;
    info.max_threads_per_sm = row.max_threads_per_sm;
    info.max_blocks_per_sm = row.max_blocks_per_sm;
    info.warp_size = 32;
    info.l2_bytes = row.l2_bytes;
    info.clock_khz = row.clock_khz;
    info.mem_clock_khz = row.mem_clock_khz;
    info.mem_bus_width = row.mem_bus_width;
    info.total_mem = row.total_mem;
    return info;
  }
  throw std::invalid_argument(
      fmt::format("unknown GPU architecture '{}' (known: {})", arch, known_list()));
}

std::vector<std::string> known_archs() {
  std::vector<std::string> out;
  for (const ArchRow& row : kArchRows) out.emplace_back(row.arch);
  return out;
}

ir::TargetLimits verifier_limits(const DeviceInfo& d) {
  ir::TargetLimits l;
  l.arch = d.arch();
  l.max_threads_per_block = d.max_threads_per_block;
  l.max_static_shared_bytes = std::min(d.max_shared_per_block, 48 * 1024);
  l.max_shared_bytes_optin = d.max_shared_per_block_optin;
  return l;
}

ir::TargetLimits verifier_limits(const std::string& arch) {
  ir::TargetLimits l = verifier_limits(target_limits(arch));
  l.arch = arch;  // keeps a feature-set suffix such as sm_90a
  return l;
}

}  // namespace cutune
