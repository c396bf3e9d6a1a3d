#include "src/measure/cupti_timer.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/dynamic_library.h"

#define CUTUNE_CUPTI_FUNCTIONS(X)   \
  X(cuptiGetResultString)           \
  X(cuptiActivityRegisterCallbacks) \
  X(cuptiActivityEnable)            \
  X(cuptiActivityFlushAll)          \
  X(cuptiActivityGetNextRecord)

namespace cutune {

namespace {

struct CuptiApi {
#define CUTUNE_CUPTI_ENTRY(name) decltype(&::name) name = nullptr;
  CUTUNE_CUPTI_FUNCTIONS(CUTUNE_CUPTI_ENTRY)
#undef CUTUNE_CUPTI_ENTRY
};

struct KernelSpan {
  uint64_t start = 0, end = 0;
};

// CUPTI hands completed buffers to a plain callback, so the spans live in a global.
std::mutex g_spans_mutex;
std::vector<KernelSpan> g_spans;
const CuptiApi* g_api = nullptr;

constexpr size_t kBufferBytes = 4 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<KernelSpan> spans;
  while (g_api->cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
        record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      // kind, start and end sit at the same offsets in every CUpti_ActivityKernelN.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      spans.push_back({k->start, k->end});
    }
  }
  std::free(buffer);
  std::lock_guard lock(g_spans_mutex);
  g_spans.insert(g_spans.end(), spans.begin(), spans.end());
}

std::string cupti_text(const CuptiApi& api, CUptiResult r) {
  const char* text = nullptr;
  if (api.cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr)
    return fmt::format("CUptiResult {}", static_cast<int>(r));
  return text;
}

struct CuptiState {
  CuptiApi api;
  bool usable = false;
  std::string reason;
};

void load_into(CuptiState& s) {
  void* library = open_cuda_library(CudaLibrary::cupti, &s.reason);
  if (library == nullptr) return;
  std::string missing;
#define CUTUNE_CUPTI_RESOLVE(name) resolve_symbol(library, #name, s.api.name, missing);
  CUTUNE_CUPTI_FUNCTIONS(CUTUNE_CUPTI_RESOLVE)
#undef CUTUNE_CUPTI_RESOLVE
  if (!missing.empty()) {
    s.reason = "libcupti lacks " + missing;
    return;
  }
  g_api = &s.api;
  if (CUptiResult r = s.api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      r != CUPTI_SUCCESS) {
    s.reason = "cuptiActivityRegisterCallbacks: " + cupti_text(s.api, r);
    return;
  }
  if (CUptiResult r = s.api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      r != CUPTI_SUCCESS) {
    s.reason = "cuptiActivityEnable(CONCURRENT_KERNEL): " + cupti_text(s.api, r);
    return;
  }
  s.usable = true;
}

const CuptiState& state() {
  static CuptiState s;
  static std::once_flag once;
  std::call_once(once, [] { load_into(s); });
  return s;
}

std::vector<KernelSpan> take_spans() {
  std::lock_guard lock(g_spans_mutex);
  return std::exchange(g_spans, {});
}

class CuptiTimer final : public KernelTimer {
 public:
  TimerKind kind() const override { return TimerKind::cupti; }

  std::vector<double> time(const std::function<void()>& before_each,
                           const std::function<void()>& launch, int repeats,
                           int kernels_per_run) override {
    const DriverApi& driver = require_driver();
    const CuptiApi& api = state().api;
    CUTUNE_CU_CHECK(driver.cuCtxSynchronize());
    flush_all(api);
    take_spans();  // earlier kernels (checks, warm-up, the reference) are not ours to time
    for (int r = 0; r < repeats; ++r) {
      before_each();
      launch();
    }
    CUTUNE_CU_CHECK(driver.cuCtxSynchronize());
    flush_all(api);
    std::vector<KernelSpan> spans = take_spans();
    if (std::optional<std::string> why = cupti_record_problem(spans.size(), repeats, kernels_per_run))
      throw std::runtime_error(*why);
    std::sort(spans.begin(), spans.end(),
              [](const KernelSpan& a, const KernelSpan& b) { return a.start < b.start; });
    const size_t per_run = spans.size() / size_t(repeats);
    std::vector<double> times(repeats);
    for (int r = 0; r < repeats; ++r) {
      const KernelSpan* first = &spans[size_t(r) * per_run];
      uint64_t end = 0;
      for (size_t i = 0; i < per_run; ++i) end = std::max(end, first[i].end);
      times[r] = double(end - first->start) * 1e-9;
    }
    return times;
  }

 private:
  static void flush_all(const CuptiApi& api) {
    if (CUptiResult r = api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        r != CUPTI_SUCCESS)
      throw_cuda_error("CUPTI", static_cast<int>(r), "cuptiActivityFlushAll", cupti_text(api, r),
                       __FILE__, __LINE__);
  }
};

}  // namespace

std::optional<std::string> cupti_record_problem(size_t records, int repeats, int kernels_per_run) {
  if (repeats <= 0) return fmt::format("no runs to time ({} repeats)", repeats);
  const bool exact = kernels_per_run > 0 ? records == size_t(repeats) * size_t(kernels_per_run)
                                         : records > 0 && records % size_t(repeats) == 0;
  if (exact) return std::nullopt;
  return kernels_per_run > 0
             ? fmt::format("CUPTI returned {} kernel record(s) for {} run(s) of {} kernel(s)",
                           records, repeats, kernels_per_run)
             : fmt::format("CUPTI returned {} kernel record(s) for {} run(s)", records, repeats);
}

std::unique_ptr<KernelTimer> make_cupti_timer(std::string* why_not) {
  const CuptiState& s = state();
  if (!s.usable) {
    if (why_not) *why_not = s.reason;
    return nullptr;
  }
  return std::make_unique<CuptiTimer>();
}

}  // namespace cutune
