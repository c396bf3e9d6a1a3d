#include "src/emulator/guarded_buffers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "src/emulator/emu_assert.h"

namespace cutune::emu {

namespace {

constexpr std::byte kCanary{0xa5};

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

GuardedBuffers::GuardedBuffers(const CudaSource& src, const std::vector<HostBuffer>& buffers) {
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t next = 0;
  for (const KernelParam& p : src.params) {
    if (!p.is_pointer) continue;
    CUTUNE_EMU_ASSERT(next < buffers.size(), "fewer buffers than pointer parameters");
    const HostBuffer& host = buffers[next++];
    CUTUNE_EMU_ASSERT(host.type == p.type, "buffer type differs from its parameter's");
    CUTUNE_EMU_ASSERT(host.elements() == p.elements &&
                          host.bytes.size() == static_cast<size_t>(p.elements) * p.type.bytes(),
                      "buffer size differs from its parameter's element count");
    Region r;
    r.name = p.name;
    r.is_const = p.is_const;
    r.element_bytes = p.type.bytes();
    r.elements = p.elements;
    size_t bytes = host.bytes.size();
    r.padded_bytes = round_up(bytes == 0 ? 1 : bytes, 16);
    size_t data_pages = round_up(r.padded_bytes, page_);
    r.map_bytes = data_pages + 2 * page_;
    void* base = mmap(nullptr, r.map_bytes, PROT_NONE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    r.base = static_cast<std::byte*>(base);
    if (mprotect(r.base + page_, data_pages, PROT_READ | PROT_WRITE) != 0) {
      munmap(base, r.map_bytes);
      throw std::bad_alloc();
    }
    r.data = r.base + page_ + data_pages - r.padded_bytes;
    std::memset(r.base + page_, static_cast<int>(kCanary), data_pages);
    if (bytes != 0) std::memcpy(r.data, host.bytes.data(), bytes);
    regions_.push_back(std::move(r));
  }
  CUTUNE_EMU_ASSERT(next == buffers.size(), "more buffers than pointer parameters");
}

GuardedBuffers::~GuardedBuffers() {
  for (const Region& r : regions_) munmap(r.base, r.map_bytes);
}

void GuardedBuffers::protect_read_only() const {
  for (const Region& r : regions_) {
    if (r.is_const) mprotect(r.base + page_, r.map_bytes - 2 * page_, PROT_READ);
  }
}

std::optional<GuardedBuffers::Location> GuardedBuffers::locate(const void* address) const noexcept {
  auto a = reinterpret_cast<uintptr_t>(address);
  for (size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    auto begin = reinterpret_cast<uintptr_t>(r.base);
    if (a < begin || a >= begin + r.map_bytes) continue;
    auto offset = static_cast<int64_t>(a - reinterpret_cast<uintptr_t>(r.data));
    int64_t element = offset >= 0 ? offset / r.element_bytes
                                  : -((-offset + r.element_bytes - 1) / r.element_bytes);
    return Location{i, element};
  }
  return std::nullopt;
}

std::optional<GuardedBuffers::Location> GuardedBuffers::overwritten_canary() const {
  for (const Region& r : regions_) {
    size_t bytes = static_cast<size_t>(r.elements) * r.element_bytes;
    for (std::byte* p = r.base + page_; p < r.data; ++p) {
      if (*p != kCanary) return locate(p);
    }
    for (std::byte* p = r.data + bytes; p < r.data + r.padded_bytes; ++p) {
      if (*p != kCanary) return locate(p);
    }
  }
  return std::nullopt;
}

void GuardedBuffers::copy_out(std::vector<HostBuffer>& buffers) const {
  CUTUNE_EMU_ASSERT(buffers.size() == regions_.size(), "buffer count changed during the run");
  for (size_t i = 0; i < regions_.size(); ++i) {
    if (regions_[i].is_const) continue;
    std::vector<std::byte>& out = buffers[i].bytes;
    if (!out.empty()) std::memcpy(out.data(), regions_[i].data, out.size());
  }
}

}  // namespace cutune::emu
