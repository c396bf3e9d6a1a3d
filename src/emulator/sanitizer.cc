#include "src/emulator/sanitizer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "src/base/int_math.h"
#include "src/emulator/sanitizer_detail.h"

namespace cutune::emu {

namespace sanitizer_detail {

SanitizerRun g_run;
uintptr_t g_lo = 0, g_span = 0;

std::string where_text(uint32_t where) {
  if ((where & kLineBit) != 0) return fmt::format("line {}", where & ~kLineBit);
  return fmt::format("@pc:{:x}@", where);
}

std::string dim_text(const cutune_emu_abi::Dim3& d) {
  return fmt::format("({},{},{})", d.x, d.y, d.z);
}

thread_local std::string t_rerun_context;

void report_finding(EmuStatus status, const std::string& message) {
  const std::string head = g_run.kernel_name + ": ";
  if (t_rerun_context.empty() || !message.starts_with(head)) g_run.report(status, message.c_str());
  std::string text = head + t_rerun_context + ": " + message.substr(head.size());
  g_run.report(status, text.c_str());
}

}  // namespace sanitizer_detail

using namespace sanitizer_detail;

namespace {

constexpr uint64_t kSeveralBlocks = ~uint64_t{0};

// A writable or read-only global buffer as the hook sees it. The shadows (writable buffers
// only) hold per element (block linear index + 1) << 32 | location, 0 for none, and for readers
// kSeveralBlocks once two blocks have read the element.
struct GlobalRegion {
  uintptr_t map_begin = 0, map_end = 0, data = 0, data_end = 0;
  bool is_const = false;
  unsigned element_bytes = 1;
  int64_t elements = 0;
  size_t index = 0;
  std::atomic<uint64_t>* writer = nullptr;
  std::atomic<uint64_t>* reader = nullptr;
};

std::vector<GlobalRegion> g_regions;
std::vector<std::vector<std::byte>> g_before_unchecked;  // per region: its bytes, writable ones

cutune_emu_abi::Dim3 block_of(uint64_t linear) {
  const Dim3& g = g_run.launch.grid;
  return {static_cast<unsigned>(linear % g.x), static_cast<unsigned>(linear / g.x % g.y),
          static_cast<unsigned>(linear / (uint64_t{g.x} * g.y))};
}

}  // namespace

void begin_sanitized_run(const SanitizerRun& run) {
  g_run = run;
  g_regions.clear();
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < run.buffers->size(); ++i) {
    GuardedBuffers::Extent e = run.buffers->extent(i);
    GlobalRegion r;
    r.map_begin = reinterpret_cast<uintptr_t>(e.map_begin);
    r.map_end = r.map_begin + e.map_bytes;
    r.data = reinterpret_cast<uintptr_t>(run.buffers->data(i));
    r.elements = run.buffers->elements(i);
    r.element_bytes = static_cast<unsigned>(e.element_bytes);
    r.data_end = r.data + static_cast<uintptr_t>(r.elements) * r.element_bytes;
    r.is_const = e.is_const;
    r.index = i;
    if (run.racecheck && !r.is_const && r.elements > 0) {
      // Never freed: the child ends with _exit. Pages appear as the kernel touches them.
      size_t bytes = static_cast<size_t>(r.elements) * sizeof(std::atomic<uint64_t>);
      void* m = mmap(nullptr, 2 * bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      r.writer = static_cast<std::atomic<uint64_t>*>(m);
      r.reader = r.writer + r.elements;
    }
    lo = std::min(lo, r.map_begin);
    hi = std::max(hi, r.map_end);
    g_regions.push_back(r);
  }
  g_lo = lo;
  g_span = hi > lo ? hi - lo : 0;
}

std::vector<uint64_t> sampled_blocks(const Dim3& grid) {
  const uint64_t extent[3] = {grid.x, grid.y, grid.z};
  auto linear = [&](const uint64_t(&i)[3]) { return i[0] + extent[0] * (i[1] + extent[1] * i[2]); };
  std::vector<uint64_t> out;
  for (unsigned corner = 0; corner < 8; ++corner) {
    uint64_t i[3];
    for (int d = 0; d < 3; ++d) i[d] = (corner >> d & 1u) != 0 ? extent[d] - 1 : 0;
    out.push_back(linear(i));
  }
  for (int d = 0; d < 3; ++d) {
    if (extent[d] < 2) continue;
    uint64_t first[3] = {0, 0, 0};
    first[d] = 1;
    uint64_t last[3] = {extent[0] - 1, extent[1] - 1, extent[2] - 1};
    last[d] -= 1;
    out.push_back(linear(first));
    out.push_back(linear(last));
  }
  uint64_t middle[3] = {extent[0] / 2, extent[1] / 2, extent[2] / 2};
  out.push_back(linear(middle));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void begin_unchecked_blocks() {
  g_before_unchecked.assign(g_regions.size(), {});
  for (size_t i = 0; i < g_regions.size(); ++i) {
    const GlobalRegion& r = g_regions[i];
    if (r.writer == nullptr) continue;
    const auto* data = reinterpret_cast<const std::byte*>(r.data);
    g_before_unchecked[i].assign(data, data + (r.data_end - r.data));
  }
}

void end_unchecked_blocks() {
  for (size_t i = 0; i < g_regions.size(); ++i) {
    const GlobalRegion& r = g_regions[i];
    if (r.writer == nullptr || g_before_unchecked[i].empty()) continue;
    const std::byte* before = g_before_unchecked[i].data();
    const auto* now = reinterpret_cast<const std::byte*>(r.data);
    for (int64_t e = 0; e < r.elements; ++e) {
      const size_t at = static_cast<size_t>(e) * r.element_bytes;
      if (std::memcmp(before + at, now + at, r.element_bytes) == 0) continue;
      uint64_t wr = r.writer[e].load(), rd = r.reader[e].load();
      if (wr == 0 && rd == 0) continue;
      bool written = wr != 0;
      uint64_t them = written ? wr : rd;
      std::string who = them == kSeveralBlocks
                            ? std::string("several blocks")
                            : fmt::format("block {} at {}", dim_text(block_of((them >> 32) - 1)),
                                          where_text(static_cast<uint32_t>(them)));
      report_finding(EmuStatus::race,
                     fmt::format("{}: data race on global memory {}[{}]: {} by {}, and written by "
                                 "one of the blocks the sanitizer did not instrument (its value "
                                 "changed after they ran), with no atomics",
                                 g_run.kernel_name, g_run.buffers->name(r.index), e,
                                 written ? "written" : "read", who));
    }
  }
}

void BlockSanitizer::global_access(uintptr_t address, unsigned bytes, unsigned flags,
                                   uint32_t where) {
  for (const GlobalRegion& r : g_regions) {
    if (address < r.map_begin || address >= r.map_end) continue;
    const bool write = (flags & cutune_emu_abi::kAccessWrite) != 0;
    const std::string& name = g_run.buffers->name(r.index);
    if (g_run.memcheck && (address < r.data || address + bytes > r.data_end)) {
      int64_t element = floor_div(static_cast<int64_t>(address - r.data), r.element_bytes);
      if (element >= 0 && element < r.elements) {
        element = (static_cast<int64_t>(r.data_end - r.data) - 1) / r.element_bytes + 1;
      }
      report_finding(
          EmuStatus::out_of_bounds,
          fmt::format("{}: out-of-bounds {}{}[{}] ({} has {} elements) by block {} "
                      "thread {} at {}",
                      g_run.kernel_name, write ? "write to " : "read of ", name, element, name,
                      r.elements, block_text(), thread_text(current_), where_text(where)));
    }
    if (write && r.is_const) {
      report_finding(EmuStatus::out_of_bounds,
                     fmt::format("{}: write to the read-only buffer {} at element {} by block {} "
                                 "thread {} at {}",
                                 g_run.kernel_name, name, (address - r.data) / r.element_bytes,
                                 block_text(), thread_text(current_), where_text(where)));
    }
    if (address < r.data || address + bytes > r.data_end) return;
    if ((flags & cutune_emu_abi::kAccessAtomic) != 0) global_atomics_ = true;
    if (!r.is_const && !g_run.strict_uninitialised) {
      // The hook runs before the access: these are the bytes a store overwrites. Reads count
      // too: GCC checks a location read and then written in one basic block only once, as a
      // read, so a read-modify-write's store may never reach the hook.
      stores_.push_back({address, old_bytes_.size(), bytes});
      const auto* p = reinterpret_cast<const std::byte*>(address);
      old_bytes_.insert(old_bytes_.end(), p, p + bytes);
    }
    if (r.writer == nullptr || (flags & cutune_emu_abi::kAccessAtomic) != 0) return;
    const uint64_t me = (block_linear_ + 1) << 32 | where;
    auto block_id = [](uint64_t v) { return v >> 32; };
    auto race = [&](int64_t element, uint64_t other, bool other_write) {
      std::string them =
          other == kSeveralBlocks
              ? std::string("several other blocks")
              : fmt::format("block {} at {}", dim_text(block_of(block_id(other) - 1)),
                            where_text(static_cast<uint32_t>(other)));
      report_finding(EmuStatus::race,
                     fmt::format("{}: data race on global memory {}[{}]: {} by block {} thread {} "
                                 "at {}, and {} by {}, with no atomics",
                                 g_run.kernel_name, name, element, write ? "written" : "read",
                                 block_text(), thread_text(current_), where_text(where),
                                 other_write ? "written" : "read", them));
    };
    int64_t first = static_cast<int64_t>((address - r.data) / r.element_bytes);
    int64_t last = static_cast<int64_t>((address + bytes - 1 - r.data) / r.element_bytes);
    for (int64_t e = first; e <= last; ++e) {
      if (write) {
        uint64_t old = r.writer[e].exchange(me);
        if (old != 0 && block_id(old) != block_id(me)) race(e, old, true);
        uint64_t rd = r.reader[e].load();
        if (rd != 0 && (rd == kSeveralBlocks || block_id(rd) != block_id(me))) race(e, rd, false);
      } else {
        // The reader is noted before the writer is looked at, and a writer exchanges before
        // it looks at the readers, so of a concurrent read and write one sees the other.
        uint64_t rd = r.reader[e].load();
        if (rd == 0) {
          if (!r.reader[e].compare_exchange_strong(rd, me) && block_id(rd) != block_id(me)) {
            r.reader[e].store(kSeveralBlocks);
          }
        } else if (rd != kSeveralBlocks && block_id(rd) != block_id(me)) {
          r.reader[e].store(kSeveralBlocks);
        }
        uint64_t wr = r.writer[e].load();
        if (wr != 0 && block_id(wr) != block_id(me)) race(e, wr, true);
      }
    }
    return;
  }
}

BlockSanitizer::Outcome BlockSanitizer::outcome() const {
  Outcome out;
  out.trace = trace_;
  out.stores = stores_.size();
  out.stored.reserve(old_bytes_.size());
  for (const Store& s : stores_) {
    const auto* p = reinterpret_cast<const std::byte*>(s.address);
    out.stored.insert(out.stored.end(), p, p + s.bytes);
  }
  return out;
}

void BlockSanitizer::undo_global_stores() {
  for (auto s = stores_.rbegin(); s != stores_.rend(); ++s) {
    std::memcpy(reinterpret_cast<void*>(s->address), old_bytes_.data() + s->old, s->bytes);
  }
}

std::string BlockSanitizer::stored_element(size_t byte) const {
  for (const Store& s : stores_) {
    if (byte >= s.old + s.bytes) continue;
    const uintptr_t address = s.address + (byte - s.old);
    for (const GlobalRegion& r : g_regions) {
      if (address < r.data || address >= r.data_end) continue;
      return fmt::format("{}[{}]", g_run.buffers->name(r.index),
                         (address - r.data) / r.element_bytes);
    }
  }
  return "global memory";
}

void BlockSanitizer::report_tracked(const std::string& why) const {
  report_finding(
      EmuStatus::uninitialized_read,
      fmt::format("{}: read of uninitialised shared {} by block {} thread {} at {}: no thread of "
                  "the block wrote it before, and {} (the first of the block's {} uninitialised "
                  "shared reads; any of them may be the one)",
                  g_run.kernel_name, shared_element(suspect_offset_), block_text(),
                  thread_text(suspect_thread_), where_text(suspect_where_), why, uninit_reads_));
}

void BlockSanitizer::set_rerun_context(std::string context) {
  t_rerun_context = std::move(context);
}

}  // namespace cutune::emu
