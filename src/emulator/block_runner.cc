#include "src/emulator/block_runner.h"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include <fmt/format.h>

#include "src/emulator/emu_assert.h"

namespace cutune::emu {

namespace {

thread_local const cutune_emu_abi::Thread* t_current = nullptr;

// Hands Boost.Context a stack the runner already owns; fibers never free their stacks.
struct BorrowedStack {
  void* top;
  size_t bytes;
  boost::context::stack_context allocate() {
    boost::context::stack_context sc;
    sc.sp = top;
    sc.size = bytes;
    return sc;
  }
  void deallocate(boost::context::stack_context&) noexcept {}
};

struct TlsSearch {
  uintptr_t code_address;
  std::byte* block = nullptr;
  size_t bytes = 0;
};

// Finds the loaded object that contains `code_address` and the calling thread's instance of
// its thread-local segment.
int find_tls(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<TlsSearch*>(data);
  bool contains = false;
  size_t tls_bytes = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && search->code_address >= begin &&
        search->code_address < begin + ph.p_memsz) {
      contains = true;
    }
    if (ph.p_type == PT_TLS) tls_bytes = ph.p_memsz;
  }
  if (!contains) return 0;
  search->block = static_cast<std::byte*>(info->dlpi_tls_data);
  search->bytes = search->block == nullptr ? 0 : tls_bytes;
  return 1;
}

std::string dim(const cutune_emu_abi::Dim3& d) { return fmt::format("({},{},{})", d.x, d.y, d.z); }

}  // namespace

const cutune_emu_abi::Thread* current_emulated_thread() { return t_current; }

BlockRunner::BlockRunner(const LaunchSpec& launch, cutune_emu_abi::ThreadMain entry,
                         void* const* args, cutune_emu_abi::TlsTouch tls_touch)
    : launch_(launch), entry_(entry), args_(args), slots_(launch.block.volume()) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t per_thread = kStackBytes + page;
  stacks_bytes_ = per_thread * slots_.size();
  void* m = mmap(nullptr, stacks_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  stacks_ = static_cast<std::byte*>(m);
  for (size_t i = 0; i < slots_.size(); ++i) {
    // Stacks grow down: the guard page sits below each one.
    mprotect(stacks_ + i * per_thread, page, PROT_NONE);
  }
  for (Slot& s : slots_) {
    s.thread.block_dim = {launch.block.x, launch.block.y, launch.block.z};
    s.thread.grid_dim = {launch.grid.x, launch.grid.y, launch.grid.z};
    s.thread.barrier = &BlockRunner::barrier;
    s.thread.host = &s;
  }
  if (tls_touch != nullptr) {
    tls_touch();
    TlsSearch search{reinterpret_cast<uintptr_t>(tls_touch)};
    dl_iterate_phdr(find_tls, &search);
    tls_block_ = search.block;
    tls_bytes_ = search.bytes;
  }
}

BlockRunner::~BlockRunner() {
  for (Slot& s : slots_) CUTUNE_EMU_ASSERT(!s.fiber, "a block runner destroyed mid-block");
  munmap(stacks_, stacks_bytes_);
}

void BlockRunner::barrier(cutune_emu_abi::Thread* self, int line) {
  Slot* s = static_cast<Slot*>(self->host);
  s->state = State::at_barrier;
  s->barrier_line = line;
  s->scheduler = std::move(s->scheduler).resume();
}

std::string BlockRunner::divergence(const Slot& a, const Slot& b) const {
  auto what = [](const Slot& s) {
    return s.state == State::done
               ? std::string("has exited")
               : fmt::format("waits at the __syncthreads on line {}", s.barrier_line);
  };
  return fmt::format("barrier divergence in block {}: thread {} {} while thread {} {}",
                     dim(a.thread.block_idx), dim(a.thread.thread_idx), what(a),
                     dim(b.thread.thread_idx), what(b));
}

std::string BlockRunner::run(cutune_emu_abi::Dim3 block_idx) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t per_thread = kStackBytes + page;
  const Dim3& b = launch_.block;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    auto linear = static_cast<unsigned>(i);
    s.thread.thread_idx = {linear % b.x, linear / b.x % b.y, linear / (b.x * b.y)};
    s.thread.block_idx = block_idx;
    s.state = State::ready;
    void* top = stacks_ + (i + 1) * per_thread;
    s.fiber = boost::context::fiber(
        std::allocator_arg, BorrowedStack{top, kStackBytes},
        [this, &s](boost::context::fiber&& scheduler) {
          s.scheduler = std::move(scheduler);
          entry_(&s.thread, args_);
          s.state = State::done;
          return std::move(s.scheduler);
        });
  }
  if (tls_block_ != nullptr) std::memset(tls_block_, 0xff, tls_bytes_);

  for (;;) {
    const Slot* waiting = nullptr;
    const Slot* exited = nullptr;
    for (Slot& s : slots_) {
      if (s.state == State::done) continue;
      s.state = State::ready;
      t_current = &s.thread;
      s.fiber = std::move(s.fiber).resume();
      t_current = nullptr;
      if (s.state == State::done) {
        if (exited == nullptr) exited = &s;
      } else if (waiting == nullptr) {
        waiting = &s;
      } else if (s.barrier_line != waiting->barrier_line) {
        return divergence(*waiting, s);
      }
    }
    if (waiting == nullptr) return {};
    if (exited != nullptr) return divergence(*waiting, *exited);
  }
}

}  // namespace cutune::emu
