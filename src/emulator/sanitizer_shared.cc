// BlockSanitizer's checks of a block's shared memory (sanitizer.h), and the access hook that
// sends every access to them or to the global ones (sanitizer.cc).
#include "src/emulator/sanitizer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>

#include <fmt/format.h>

#include "src/base/int_math.h"
#include "src/emulator/sanitizer_detail.h"

namespace cutune::emu {

using namespace sanitizer_detail;

namespace {

thread_local BlockSanitizer* t_sanitizer = nullptr;

void hook(unsigned long address, unsigned bytes, unsigned flags, unsigned long where) {
  BlockSanitizer* s = t_sanitizer;
  if (s != nullptr) s->access(address, bytes, flags, where);
}

}  // namespace

cutune_emu_abi::AccessHook sanitizer_access_hook() { return &hook; }

BlockSanitizer::BlockSanitizer(std::byte* tls_block, size_t tls_bytes, unsigned threads)
    : tls_block_(tls_block),
      tls_bytes_(tls_block == nullptr ? 0 : tls_bytes),
      threads_(threads),
      kind_(tls_bytes_, kIgnored),
      warp_epoch_((threads + 31) / 32, 0),
      fence_seq_(threads, 0) {
  const SharedLayout* layout = g_run.layout;
  if (layout != nullptr && layout->known) {
    std::fill(kind_.begin(), kind_.end(), 0);
    for (size_t a = 0; a < layout->arrays.size(); ++a) {
      const SharedLayout::Array& arr = layout->arrays[a];
      size_t end = std::min(tls_bytes_, arr.offset + arr.bytes);
      for (size_t i = arr.offset; i < end; ++i) kind_[i] = static_cast<uint16_t>(a + 1);
    }
    for (auto [offset, bytes] : layout->ignored) {
      for (size_t i = offset; i < std::min(tls_bytes_, offset + bytes); ++i) kind_[i] = kIgnored;
    }
  }
  size_t entries = 1;
  if (layout != nullptr && layout->known) {
    for (const SharedLayout::Array& arr : layout->arrays) {
      ArrayShadow a;
      a.offset = arr.offset;
      a.bytes = arr.bytes;
      unsigned granule = std::min(arr.element_bytes, 16u);
      bool natural = (granule & (granule - 1)) == 0 && arr.offset % granule == 0;
      if (natural && !arr.dynamic) {
        while ((1u << a.shift) < granule) ++a.shift;
      }
      a.base = entries;
      entries += (arr.bytes >> a.shift) + 1;
      arrays_.push_back(a);
    }
  }
  shadow_bytes_ = entries * sizeof(ByteShadow);
  void* m = mmap(nullptr, shadow_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  shadow_ = static_cast<ByteShadow*>(m);
  t_sanitizer = this;
}

void BlockSanitizer::make_current() { t_sanitizer = this; }

BlockSanitizer::~BlockSanitizer() {
  if (t_sanitizer == this) t_sanitizer = nullptr;
  munmap(shadow_, shadow_bytes_);
}

void BlockSanitizer::begin_block(cutune_emu_abi::Dim3 block_idx) {
  block_idx_ = block_idx;
  const Dim3& g = g_run.launch.grid;
  block_linear_ = block_idx.x + uint64_t{g.x} * (block_idx.y + uint64_t{g.y} * block_idx.z);
  block_start_ = ++interval_;
  suspect_ = false;
  uninit_reads_ = 0;
  trace_ = 0;
  global_atomics_ = false;
  stores_.clear();
  old_bytes_.clear();
  std::fill(fence_seq_.begin(), fence_seq_.end(), 0);
}

void BlockSanitizer::end_block() {
  if (suspect_ && g_run.strict_uninitialised) report_uninitialised();
}

bool BlockSanitizer::tracks_uninitialised() const {
  return uninit_reads_ > 0 && g_run.memcheck && !g_run.strict_uninitialised;
}

void BlockSanitizer::barrier() {
  if (suspect_ && g_run.strict_uninitialised) report_uninitialised();
  ++interval_;
}

uint32_t BlockSanitizer::where_of(unsigned flags, uintptr_t where) const {
  if ((flags & cutune_emu_abi::kAccessWhereIsLine) != 0) {
    return kLineBit | static_cast<uint32_t>(where);
  }
  return static_cast<uint32_t>(where - g_run.object_base - 1) & ~kLineBit;
}

void BlockSanitizer::access(uintptr_t address, unsigned bytes, unsigned flags, uintptr_t where) {
  if (current_ < 0 || bytes == 0) return;
  uintptr_t offset = address - reinterpret_cast<uintptr_t>(tls_block_);
  if (offset < tls_bytes_) {
    if (kind_[offset] == kIgnored) return;
    if (!g_run.strict_uninitialised) trace(offset, bytes, flags);
    shared_access(offset, bytes, flags, where_of(flags, where));
    return;
  }
  if (address - g_lo < g_span) {
    if (!g_run.strict_uninitialised) trace(address, bytes, flags);
    global_access(address, bytes, flags, where_of(flags, where));
    return;
  }
  if ((flags & cutune_emu_abi::kAccessMustBeShared) != 0 && g_run.memcheck) {
    report_finding(EmuStatus::shared_out_of_bounds,
                   fmt::format("{}: ldmatrix row address {:#x} is outside shared memory, by block "
                               "{} thread {} at {}",
                               g_run.kernel_name, address, block_text(), thread_text(current_),
                               where_text(where_of(flags, where))));
  }
}

bool BlockSanitizer::shared_in_bounds(size_t offset, unsigned bytes) const {
  if (offset + bytes > tls_bytes_) return false;
  uint16_t k = kind_[offset];
  return k != 0 && k != kIgnored && kind_[offset + bytes - 1] == k;
}

void BlockSanitizer::shared_access(size_t offset, unsigned bytes, unsigned flags, uint32_t where) {
  const bool write = (flags & cutune_emu_abi::kAccessWrite) != 0;
  const bool atomic = (flags & cutune_emu_abi::kAccessAtomic) != 0;
  if (!shared_in_bounds(offset, bytes)) {
    if (g_run.memcheck) report_shared_bounds(offset, bytes, flags, where);
    return;
  }
  const auto t = static_cast<uint16_t>(current_);
  const uint16_t warp = t / 32;
  const uint32_t epoch = warp_epoch_[warp];
  const uint32_t now = interval_;
  const bool race = g_run.racecheck && !atomic;
  if (write && g_run.racecheck && wgmma_reads_ != nullptr && !wgmma_reads_->empty()) {
    if (const WgmmaReads::Pending* p = wgmma_reads_->find(offset, bytes)) {
      report_wgmma_write(offset, where, *p);
    }
  }
  if (write && g_run.racecheck && bulk_reads_ != nullptr && !bulk_reads_->empty()) {
    if (const WgmmaReads::Pending* p = bulk_reads_->find(offset, bytes)) {
      report_bulk_write(offset, where, *p);
    }
  }
  auto conflicts = [&](uint32_t interval, uint16_t thread, uint32_t their_epoch) {
    return interval == now && thread != t && !(thread / 32 == warp && their_epoch != epoch);
  };
  const uint32_t seq = write && !atomic ? ++write_seq_ : 0;
  const ArrayShadow& a = arrays_[kind_[offset] - 1];
  const size_t first = (offset - a.offset) >> a.shift;
  const size_t last = (offset + bytes - 1 - a.offset) >> a.shift;
  bool uninitialised = false;
  for (size_t g = first; g <= last; ++g) {
    ByteShadow& b = shadow_[a.base + g];
    const size_t i = a.offset + (g << a.shift);
    if (!write || atomic) {
      if (race && conflicts(b.w_interval, b.w_thread, b.w_epoch)) {
        report_race(i, false, where, b.w_thread, true, false, b.w_where);
      }
      if (g_run.memcheck && b.w_interval < block_start_) {
        if (!uninitialised) uninit_reads_ += 1;
        uninitialised = true;
        if (!suspect_) {
          suspect_ = true;
          suspect_offset_ = i;
          suspect_thread_ = t;
          suspect_where_ = where;
        }
      }
    }
    if (!write && race) {
      if (b.r_interval != now || (b.r_warp == warp && b.r_epoch != epoch)) {
        // The first reader of this interval, or the first since a __syncwarp ordered all the
        // earlier ones (of this same warp) before this one.
        b.r_interval = now;
        b.r_thread = t;
        b.r_first = t;
        b.r_warp = warp;
        b.r_epoch = epoch;
        b.r_where = where;
      } else if (b.r_thread != t) {
        b.r_thread = kSeveral;
        if (b.r_warp != warp) b.r_warp = kSeveral;
      }
    }
    if (!write) continue;
    if (race) {
      if (conflicts(b.w_interval, b.w_thread, b.w_epoch)) {
        report_race(i, true, where, b.w_thread, true, false, b.w_where);
      }
      if (b.r_interval == now) {
        bool several = b.r_thread == kSeveral;
        bool clash = several ? (b.r_warp != warp || b.r_epoch == epoch)
                             : conflicts(b.r_interval, b.r_thread, b.r_epoch);
        if (clash) report_race(i, true, where, b.r_first, false, several, b.r_where);
      }
    }
    b.w_interval = now;
    b.w_thread = t;
    b.w_epoch = epoch;
    b.w_where = where;
    b.w_seq = seq;
  }
}

void BlockSanitizer::proxy_fence(unsigned linear) {
  if (linear < fence_seq_.size()) fence_seq_[linear] = write_seq_;
}

void BlockSanitizer::tma_store_read(const void* src, unsigned bytes, int line) {
  const uint32_t where = kLineBit | static_cast<uint32_t>(line);
  const uintptr_t offset =
      reinterpret_cast<uintptr_t>(src) - reinterpret_cast<uintptr_t>(tls_block_);
  if (current_ < 0 || offset >= tls_bytes_ || kind_[offset] == kIgnored) return;
  // Bounds and races: the read of the current thread.
  access(reinterpret_cast<uintptr_t>(src), bytes, cutune_emu_abi::kAccessWhereIsLine, line);
  if (!g_run.racecheck || !shared_in_bounds(offset, bytes)) return;
  const ArrayShadow& a = arrays_[kind_[offset] - 1];
  const size_t first = (offset - a.offset) >> a.shift;
  const size_t last = (offset + bytes - 1 - a.offset) >> a.shift;
  for (size_t g = first; g <= last; ++g) {
    const ByteShadow& b = shadow_[a.base + g];
    if (b.w_interval < block_start_ || b.w_seq == 0 || b.w_thread >= fence_seq_.size() ||
        b.w_seq <= fence_seq_[b.w_thread]) {
      continue;
    }
    report_finding(
        EmuStatus::race,
        fmt::format("{}: proxy race on shared {} in block {}: written by thread {} at {} and "
                    "read by the TMA store of thread {} at {}, with no fence.proxy.async by the "
                    "writer between them (the async proxy may not see the write)",
                    g_run.kernel_name, shared_element(a.offset + (g << a.shift)), block_text(),
                    thread_text(b.w_thread), where_text(b.w_where),
                    thread_text(static_cast<unsigned>(current_)), where_text(where)));
  }
}

uint32_t BlockSanitizer::async_issue(const void* dst, const void* src, int bytes, int src_bytes,
                                     int line) {
  auto d = reinterpret_cast<uintptr_t>(dst);
  uint32_t where = kLineBit | static_cast<uint32_t>(line);
  if (!g_run.strict_uninitialised) {
    trace(d - reinterpret_cast<uintptr_t>(tls_block_), static_cast<unsigned>(bytes),
          cutune_emu_abi::kAccessWrite);
    trace(reinterpret_cast<uintptr_t>(src), static_cast<unsigned>(src_bytes), 0);
  }
  if (g_run.memcheck) {
    uintptr_t offset = d - reinterpret_cast<uintptr_t>(tls_block_);
    if (offset >= tls_bytes_) {
      report_finding(EmuStatus::shared_out_of_bounds,
                     fmt::format("{}: cp.async destination {:#x} is outside shared memory, by "
                                 "block {} thread {} at {}",
                                 g_run.kernel_name, d, block_text(), thread_text(current_),
                                 where_text(where)));
    }
    if (!shared_in_bounds(offset, static_cast<unsigned>(bytes))) {
      report_shared_bounds(offset, static_cast<unsigned>(bytes), cutune_emu_abi::kAccessWrite,
                           where);
    }
  }
  auto s = reinterpret_cast<uintptr_t>(src);
  if (src_bytes > 0 && s - g_lo < g_span) {
    global_access(s, static_cast<unsigned>(src_bytes), 0, where);
  }
  return interval_;
}

void BlockSanitizer::async_write(unsigned thread, const void* dst, int bytes, uint32_t issued,
                                 int line, bool tma) {
  const Async kind = tma ? Async::tma : Async::cp_async;
  uintptr_t offset = reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(tls_block_);
  if (!g_run.strict_uninitialised) trace(offset, static_cast<unsigned>(bytes), thread);
  if (offset >= tls_bytes_ || offset + bytes > tls_bytes_ || kind_[offset] == kIgnored) return;
  const auto t = static_cast<uint16_t>(thread);
  const uint16_t warp = t / 32;
  const uint32_t epoch = warp_epoch_[warp];
  const uint32_t now = interval_;
  const uint32_t where = kLineBit | static_cast<uint32_t>(line);
  // Between its issue and this wait the copy may land at any moment: any access by another
  // thread in that time, not ordered by a __syncwarp of this interval, races with it.
  auto since = [&](uint32_t interval, uint16_t other, uint32_t their_epoch) {
    if (interval < issued || interval > now || other == t) return false;
    return !(interval == now && other / 32 == warp && their_epoch != epoch);
  };
  if (!shared_in_bounds(offset, static_cast<unsigned>(bytes))) return;
  const ArrayShadow& a = arrays_[kind_[offset] - 1];
  const size_t first = (offset - a.offset) >> a.shift;
  const size_t last = (offset + bytes - 1 - a.offset) >> a.shift;
  for (size_t g = first; g <= last; ++g) {
    ByteShadow& b = shadow_[a.base + g];
    const size_t i = a.offset + (g << a.shift);
    if (g_run.racecheck) {
      if (since(b.w_interval, b.w_thread, b.w_epoch)) {
        report_race(i, true, where, b.w_thread, true, false, b.w_where, kind, thread);
      }
      if (b.r_interval >= issued && b.r_interval <= now) {
        bool several = b.r_thread == kSeveral;
        bool clash = several ? !(b.r_interval == now && b.r_warp == warp && b.r_epoch != epoch)
                             : since(b.r_interval, b.r_thread, b.r_epoch);
        if (clash) report_race(i, true, where, b.r_first, false, several, b.r_where, kind, thread);
      }
    }
    b.w_interval = now;
    b.w_thread = t;
    b.w_epoch = epoch;
    b.w_where = where;
    b.w_seq = 0;
  }
}

std::string BlockSanitizer::thread_text(unsigned linear) const {
  const Dim3& b = g_run.launch.block;
  return fmt::format("({},{},{})", linear % b.x, linear / b.x % b.y, linear / (b.x * b.y));
}

std::string BlockSanitizer::block_text() const { return dim_text(block_idx_); }

// "A_shared[37]" for a byte of an array; for a byte outside every array, the nearest array
// and the (out-of-range) index the byte would have in it.
std::string BlockSanitizer::shared_element(size_t offset) const {
  const SharedLayout* layout = g_run.layout;
  const SharedLayout::Array* best = nullptr;
  size_t best_distance = SIZE_MAX;
  for (const SharedLayout::Array& a : layout->arrays) {
    size_t distance = offset < a.offset              ? a.offset - offset
                      : offset >= a.offset + a.bytes ? offset - (a.offset + a.bytes) + 1
                                                     : 0;
    if (distance < best_distance) {
      best_distance = distance;
      best = &a;
    }
  }
  if (best == nullptr) return fmt::format("shared memory at offset {}", offset);
  int64_t element = floor_div(static_cast<int64_t>(offset) - static_cast<int64_t>(best->offset),
                              best->element_bytes);
  return fmt::format("{}[{}]", best->name, element);
}

void BlockSanitizer::report_shared_bounds(size_t offset, unsigned bytes, unsigned flags,
                                          uint32_t where) const {
  // Name the first byte outside the array the access starts in (or the start, when that is
  // outside every array).
  size_t bad = offset;
  if (offset < tls_bytes_ && kind_[offset] != 0 && kind_[offset] != kIgnored) {
    while (bad < offset + bytes && bad < tls_bytes_ && kind_[bad] == kind_[offset]) ++bad;
  }
  std::string element = shared_element(bad);
  std::string array = element.substr(0, element.find('['));
  std::string size;
  for (const SharedLayout::Array& a : g_run.layout->arrays) {
    if (a.name == array)
      size = fmt::format(" ({} has {} elements)", a.name, a.bytes / a.element_bytes);
  }
  bool write = (flags & cutune_emu_abi::kAccessWrite) != 0;
  report_finding(EmuStatus::shared_out_of_bounds,
                 fmt::format("{}: out-of-bounds {} shared {}{} by block {} thread {} at {}",
                             g_run.kernel_name, write ? "write to" : "read of", element, size,
                             block_text(), thread_text(current_), where_text(where)));
}

void BlockSanitizer::report_race(size_t offset, bool write, uint32_t where, uint16_t other,
                                 bool other_write, bool several, uint32_t other_where, Async async,
                                 unsigned writer) const {
  std::string them = several
                         ? fmt::format("several threads, thread {} among them,", thread_text(other))
                         : fmt::format("thread {}", thread_text(other));
  report_finding(
      EmuStatus::race,
      fmt::format("{}: data race on shared {} in block {}: {} by thread {} at {}{}, and {} by {} "
                  "at {}, with no {} between them",
                  g_run.kernel_name, shared_element(offset), block_text(),
                  !write                     ? "read"
                  : async == Async::cp_async ? "written by the cp.async"
                  : async == Async::tma      ? "written by the TMA load"
                                             : "written",
                  thread_text(async == Async::no ? static_cast<unsigned>(current_) : writer),
                  where_text(where),
                  async == Async::cp_async ? " (completed at its wait)"
                  : async == Async::tma    ? " (in flight from its issue until it landed)"
                                           : "",
                  other_write ? "written" : "read", them, where_text(other_where),
                  async == Async::tma ? "wait on its mbarrier" : "__syncthreads"));
}

void BlockSanitizer::report_wgmma_write(size_t offset, uint32_t where,
                                        const WgmmaReads::Pending& wgmma) const {
  report_finding(EmuStatus::race,
                 fmt::format("{}: data race on shared {} in block {}: written by thread {} at {} "
                             "while the wgmma on line {} (warpgroup {}) still reads it: no "
                             "wgmma.wait_group has completed that wgmma yet",
                             g_run.kernel_name, shared_element(offset), block_text(),
                             thread_text(static_cast<unsigned>(current_)), where_text(where),
                             wgmma.line, wgmma.warpgroup));
}

void BlockSanitizer::report_bulk_write(size_t offset, uint32_t where,
                                       const WgmmaReads::Pending& store) const {
  report_finding(EmuStatus::race,
                 fmt::format("{}: data race on shared {} in block {}: written by thread {} at {} "
                             "while the TMA store on line {} (thread {}) still reads it: that "
                             "thread has not waited for it (cp.async.bulk.wait_group.read)",
                             g_run.kernel_name, shared_element(offset), block_text(),
                             thread_text(static_cast<unsigned>(current_)), where_text(where),
                             store.line, thread_text(store.warpgroup)));
}

void BlockSanitizer::report_uninitialised() const {
  report_finding(EmuStatus::uninitialized_read,
                 fmt::format("{}: read of uninitialised shared {} by block {} thread {} at {}: no "
                             "thread of the block wrote it before",
                             g_run.kernel_name, shared_element(suspect_offset_), block_text(),
                             thread_text(suspect_thread_), where_text(suspect_where_)));
}

}  // namespace cutune::emu
