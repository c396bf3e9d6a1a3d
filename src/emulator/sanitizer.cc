#include "src/emulator/sanitizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <sstream>

#include <fmt/format.h>

#include "src/base/int_math.h"
#include "src/emulator/emu_assert.h"
#include "src/emulator/postlude.h"

extern char** environ;

namespace cutune::emu {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kLineBit = 0x80000000u;
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

SanitizerRun g_run;
std::vector<GlobalRegion> g_regions;
std::vector<std::vector<std::byte>> g_before_unchecked;  // per region: its bytes, writable ones
uintptr_t g_lo = 0, g_span = 0;
thread_local BlockSanitizer* t_sanitizer = nullptr;

void hook(unsigned long address, unsigned bytes, unsigned flags, unsigned long where) {
  BlockSanitizer* s = t_sanitizer;
  if (s != nullptr) s->access(address, bytes, flags, where);
}

std::string where_text(uint32_t where) {
  if ((where & kLineBit) != 0) return fmt::format("line {}", where & ~kLineBit);
  return fmt::format("@pc:{:x}@", where);
}

std::string dim_text(const cutune_emu_abi::Dim3& d) {
  return fmt::format("({},{},{})", d.x, d.y, d.z);
}

cutune_emu_abi::Dim3 block_of(uint64_t linear) {
  const Dim3& g = g_run.launch.grid;
  return {static_cast<unsigned>(linear % g.x), static_cast<unsigned>(linear / g.x % g.y),
          static_cast<unsigned>(linear / (uint64_t{g.x} * g.y))};
}


// Strips a demangled local name ("gemm_nn::A_shared") to the variable's own.
std::string variable_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  if (size_t colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  if (name.rfind(kSharedStoragePrefix, 0) == 0)
    name = name.substr(std::strlen(kSharedStoragePrefix));
  return name;
}

}  // namespace

SharedLayout read_shared_layout(const fs::path& object,
                                const cutune_emu_abi::SharedArrayInfo* table) {
  SharedLayout layout;
  std::ifstream f(object, std::ios::binary);
  std::string image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (image.size() < sizeof(Elf64_Ehdr)) return layout;
  const char* base = image.data();
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
    return layout;
  }
  auto in_image = [&](uint64_t offset, uint64_t bytes) {
    return offset <= image.size() && bytes <= image.size() - offset;
  };
  if (!in_image(eh->e_phoff, uint64_t{eh->e_phnum} * sizeof(Elf64_Phdr)) ||
      !in_image(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    return layout;
  }
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_TLS) layout.tls_bytes = ph[i].p_memsz;
  }
  std::map<std::string, const cutune_emu_abi::SharedArrayInfo*> declared;
  for (const auto* t = table; t != nullptr && t->name != nullptr; ++t) declared[t->name] = t;

  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strtab = sh[sh[i].sh_link];
    if (!in_image(sh[i].sh_offset, sh[i].sh_size) || !in_image(strtab.sh_offset, strtab.sh_size)) {
      continue;
    }
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
    size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
    for (size_t s = 0; s < count; ++s) {
      if (ELF64_ST_TYPE(syms[s].st_info) != STT_TLS || syms[s].st_name >= strtab.sh_size) continue;
      std::string name = variable_name(base + strtab.sh_offset + syms[s].st_name);
      if (name.rfind("cutune_emu_redzone", 0) == 0) continue;
      auto it = declared.find(name);
      if (it == declared.end()) {
        layout.ignored.emplace_back(syms[s].st_value, syms[s].st_size);
        continue;
      }
      SharedLayout::Array a;
      a.name = name;
      a.offset = syms[s].st_value;
      a.bytes = it->second->bytes != 0 ? it->second->bytes : syms[s].st_size;
      a.dynamic = it->second->bytes != 0;
      a.element_bytes = std::max(1u, it->second->element_bytes);
      layout.arrays.push_back(std::move(a));
    }
    layout.known = true;
  }
  return layout;
}

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

cutune_emu_abi::AccessHook sanitizer_access_hook() { return &hook; }

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
      g_run.report(EmuStatus::race,
                   fmt::format("{}: data race on global memory {}[{}]: {} by {}, and written by "
                               "one of the blocks the sanitizer did not instrument (its value "
                               "changed after they ran), with no atomics",
                               g_run.kernel_name, g_run.buffers->name(r.index), e,
                               written ? "written" : "read", who)
                       .c_str());
    }
  }
}

BlockSanitizer::BlockSanitizer(std::byte* tls_block, size_t tls_bytes, unsigned threads)
    : tls_block_(tls_block),
      tls_bytes_(tls_block == nullptr ? 0 : tls_bytes),
      threads_(threads),
      kind_(tls_bytes_, kIgnored),
      warp_epoch_((threads + 31) / 32, 0) {
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
}

void BlockSanitizer::end_block() {
  if (suspect_) report_uninitialised();
}

void BlockSanitizer::barrier() {
  if (suspect_) report_uninitialised();
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
    shared_access(offset, bytes, flags, where_of(flags, where));
    return;
  }
  if (address - g_lo < g_span) {
    global_access(address, bytes, flags, where_of(flags, where));
    return;
  }
  if ((flags & cutune_emu_abi::kAccessMustBeShared) != 0 && g_run.memcheck) {
    g_run.report(EmuStatus::shared_out_of_bounds,
                 fmt::format("{}: ldmatrix row address {:#x} is outside shared memory, by block "
                             "{} thread {} at {}",
                             g_run.kernel_name, address, block_text(), thread_text(current_),
                             where_text(where_of(flags, where)))
                     .c_str());
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
  auto conflicts = [&](uint32_t interval, uint16_t thread, uint32_t their_epoch) {
    return interval == now && thread != t && !(thread / 32 == warp && their_epoch != epoch);
  };
  const ArrayShadow& a = arrays_[kind_[offset] - 1];
  const size_t first = (offset - a.offset) >> a.shift;
  const size_t last = (offset + bytes - 1 - a.offset) >> a.shift;
  for (size_t g = first; g <= last; ++g) {
    ByteShadow& b = shadow_[a.base + g];
    const size_t i = a.offset + (g << a.shift);
    if (!write || atomic) {
      if (race && conflicts(b.w_interval, b.w_thread, b.w_epoch)) {
        report_race(i, false, where, b.w_thread, true, false, b.w_where);
      }
      if (g_run.memcheck && b.w_interval < block_start_ && !suspect_) {
        suspect_ = true;
        suspect_offset_ = i;
        suspect_thread_ = t;
        suspect_where_ = where;
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
      g_run.report(
          EmuStatus::out_of_bounds,
          fmt::format("{}: out-of-bounds {}{}[{}] ({} has {} elements) by block {} "
                      "thread {} at {}",
                      g_run.kernel_name, write ? "write to " : "read of ", name, element, name,
                      r.elements, block_text(), thread_text(current_), where_text(where))
              .c_str());
    }
    if (write && r.is_const) {
      g_run.report(EmuStatus::out_of_bounds,
                   fmt::format("{}: write to the read-only buffer {} at element {} by block {} "
                               "thread {} at {}",
                               g_run.kernel_name, name, (address - r.data) / r.element_bytes,
                               block_text(), thread_text(current_), where_text(where))
                       .c_str());
    }
    if (r.writer == nullptr || (flags & cutune_emu_abi::kAccessAtomic) != 0) return;
    if (address < r.data || address + bytes > r.data_end) return;
    const uint64_t me = (block_linear_ + 1) << 32 | where;
    auto block_id = [](uint64_t v) { return v >> 32; };
    auto race = [&](int64_t element, uint64_t other, bool other_write) {
      std::string them =
          other == kSeveralBlocks
              ? std::string("several other blocks")
              : fmt::format("block {} at {}", dim_text(block_of(block_id(other) - 1)),
                            where_text(static_cast<uint32_t>(other)));
      g_run.report(EmuStatus::race,
                   fmt::format("{}: data race on global memory {}[{}]: {} by block {} thread {} "
                               "at {}, and {} by {}, with no atomics",
                               g_run.kernel_name, name, element, write ? "written" : "read",
                               block_text(), thread_text(current_), where_text(where),
                               other_write ? "written" : "read", them)
                       .c_str());
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

uint32_t BlockSanitizer::async_issue(const void* dst, const void* src, int bytes, int src_bytes,
                                     int line) {
  auto d = reinterpret_cast<uintptr_t>(dst);
  uint32_t where = kLineBit | static_cast<uint32_t>(line);
  if (g_run.memcheck) {
    uintptr_t offset = d - reinterpret_cast<uintptr_t>(tls_block_);
    if (offset >= tls_bytes_) {
      g_run.report(
          EmuStatus::shared_out_of_bounds,
          fmt::format("{}: cp.async destination {:#x} is outside shared memory, by "
                      "block {} thread {} at {}",
                      g_run.kernel_name, d, block_text(), thread_text(current_), where_text(where))
              .c_str());
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
  g_run.report(EmuStatus::shared_out_of_bounds,
               fmt::format("{}: out-of-bounds {} shared {}{} by block {} thread {} at {}",
                           g_run.kernel_name, write ? "write to" : "read of", element, size,
                           block_text(), thread_text(current_), where_text(where))
                   .c_str());
}

void BlockSanitizer::report_race(size_t offset, bool write, uint32_t where, uint16_t other,
                                 bool other_write, bool several, uint32_t other_where, Async async,
                                 unsigned writer) const {
  std::string them = several
                         ? fmt::format("several threads, thread {} among them,", thread_text(other))
                         : fmt::format("thread {}", thread_text(other));
  g_run.report(
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
                  async == Async::tma ? "wait on its mbarrier" : "__syncthreads")
          .c_str());
}

void BlockSanitizer::report_wgmma_write(size_t offset, uint32_t where,
                                        const WgmmaReads::Pending& wgmma) const {
  g_run.report(EmuStatus::race,
               fmt::format("{}: data race on shared {} in block {}: written by thread {} at {} "
                           "while the wgmma on line {} (warpgroup {}) still reads it: no "
                           "wgmma.wait_group has completed that wgmma yet",
                           g_run.kernel_name, shared_element(offset), block_text(),
                           thread_text(static_cast<unsigned>(current_)), where_text(where),
                           wgmma.line, wgmma.warpgroup)
                   .c_str());
}

void BlockSanitizer::report_uninitialised() const {
  g_run.report(EmuStatus::uninitialized_read,
               fmt::format("{}: read of uninitialised shared {} by block {} thread {} at {}: no "
                           "thread of the block wrote it before",
                           g_run.kernel_name, shared_element(suspect_offset_), block_text(),
                           thread_text(suspect_thread_), where_text(suspect_where_))
                   .c_str());
}

namespace {

// Runs addr2line on `object` for `offsets`; returns its output, or "" if it cannot run.
std::string run_addr2line(const fs::path& object, const std::vector<std::string>& offsets) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  std::vector<std::string> argv = {"addr2line", "-e", object.string(), "-i", "-a"};
  argv.insert(argv.end(), offsets.begin(), offsets.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (err == 0) {
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(fds[0]);
  return out;
}

}  // namespace

std::string resolve_source_lines(const std::string& message, const fs::path& object) {
  const std::string open = "@pc:";
  std::vector<std::string> offsets;
  for (size_t at = message.find(open); at != std::string::npos; at = message.find(open, at + 1)) {
    size_t close = message.find('@', at + open.size());
    if (close == std::string::npos) break;
    offsets.push_back("0x" + message.substr(at + open.size(), close - at - open.size()));
  }
  if (offsets.empty()) return message;
  // With -i each address is followed by its inline chain, innermost first; the line wanted is
  // the first frame in the kernel's own file.
  std::map<uint64_t, std::string> lines;
  std::istringstream out(run_addr2line(object, offsets));
  uint64_t current = 0;
  bool have = false;
  for (std::string l; std::getline(out, l);) {
    if (l.rfind("0x", 0) == 0) {
      current = std::strtoull(l.c_str(), nullptr, 16);
      have = false;
      continue;
    }
    if (have) continue;
    size_t colon = l.rfind(':');
    if (colon == std::string::npos) continue;
    std::string file = l.substr(0, colon);
    int line = std::atoi(l.c_str() + colon + 1);
    if (line <= 0) continue;
    bool kernel = file.size() >= 9 && file.compare(file.size() - 9, 9, "kernel.cu") == 0;
    if (kernel || lines.count(current) == 0) lines[current] = fmt::format("line {}", line);
    have = kernel;
  }
  std::string result;
  size_t copied = 0;
  for (size_t at = message.find(open); at != std::string::npos; at = message.find(open, copied)) {
    size_t close = message.find('@', at + open.size());
    if (close == std::string::npos) break;
    result.append(message, copied, at - copied);
    uint64_t pc = std::strtoull(message.c_str() + at + open.size(), nullptr, 16);
    auto it = lines.find(pc);
    result += it != lines.end() ? it->second : fmt::format("an unknown line (offset {:#x})", pc);
    copied = close + 1;
  }
  result.append(message, copied, std::string::npos);
  return result;
}

}  // namespace cutune::emu
