#include "src/baselines/cudnn_conv.h"

#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/dynamic_library.h"

// The legacy convolution API is marked deprecated in cuDNN 9 but remains supported; it is the
// one the issue asks for (FindEx, math type), so the warnings say nothing new.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define CUTUNE_CUDNN_FUNCTIONS(X)                \
  X(cudnnGetVersion)                             \
  X(cudnnGetErrorString)                         \
  X(cudnnCreate)                                 \
  X(cudnnDestroy)                                \
  X(cudnnCreateTensorDescriptor)                 \
  X(cudnnSetTensor4dDescriptor)                  \
  X(cudnnDestroyTensorDescriptor)                \
  X(cudnnCreateFilterDescriptor)                 \
  X(cudnnSetFilter4dDescriptor)                  \
  X(cudnnDestroyFilterDescriptor)                \
  X(cudnnCreateConvolutionDescriptor)            \
  X(cudnnSetConvolution2dDescriptor)             \
  X(cudnnSetConvolutionGroupCount)               \
  X(cudnnSetConvolutionMathType)                 \
  X(cudnnGetConvolution2dForwardOutputDim)       \
  X(cudnnDestroyConvolutionDescriptor)           \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount) \
  X(cudnnFindConvolutionForwardAlgorithmEx)      \
  X(cudnnConvolutionForward)

namespace cutune {

namespace {

struct CudnnApi {
#define CUTUNE_CUDNN_ENTRY(name) decltype(&::name) name = nullptr;
  CUTUNE_CUDNN_FUNCTIONS(CUTUNE_CUDNN_ENTRY)
#undef CUTUNE_CUDNN_ENTRY
  bool usable = false;
  std::string reason;
};

const CudnnApi& api() {
  static CudnnApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = open_cuda_library(CudaLibrary::cudnn, &a.reason);
    if (library == nullptr) return;
    std::string missing;
#define CUTUNE_CUDNN_RESOLVE(name)                                    \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(library, #name)); \
  if (a.name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name);
    CUTUNE_CUDNN_FUNCTIONS(CUTUNE_CUDNN_RESOLVE)
#undef CUTUNE_CUDNN_RESOLVE
    if (!missing.empty()) {
      a.reason = "libcudnn lacks " + missing;
      return;
    }
    a.usable = true;
  });
  return a;
}

const CudnnApi& require_cudnn() {
  const CudnnApi& a = api();
  if (!a.usable) throw_cuda_error("cuDNN", -1, "dlopen(libcudnn)", a.reason, __FILE__, __LINE__);
  return a;
}

// CUTUNE_CUDNN_CHECK (cuda_check.h) calls cudnnGetErrorString by name, which needs libcudnn
// linked; here it is a loaded pointer, so the same CudaError is thrown through it.
void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw_cuda_error("cuDNN", static_cast<int>(status), call, api().cudnnGetErrorString(status), file,
                   line);
}

#define CUTUNE_CUDNN_CALL(call) check((call), #call, __FILE__, __LINE__)

int to_int(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw std::invalid_argument(fmt::format("cuDNN: {} = {} does not fit an int", what, v));
  return static_cast<int>(v);
}

const char* activation_name(CudnnActivationLayout l) {
  return l == CudnnActivationLayout::nchw ? "nchw" : "nhwc";
}
const char* filter_name(CudnnFilterLayout l) {
  return l == CudnnFilterLayout::kcrs ? "kcrs" : "rsck";
}

template <typename T>
T field(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    throw std::invalid_argument(fmt::format("cuDNN problem: missing '{}'", key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(fmt::format("cuDNN problem: '{}' has the wrong type", key));
  }
}

}  // namespace

nlohmann::json CudnnConvProblem::to_json() const {
  return {{"n", n},
          {"c", c},
          {"h", h},
          {"w", w},
          {"k", k},
          {"r", r},
          {"s", s},
          {"stride", stride},
          {"pad", pad},
          {"dilation", dilation},
          {"groups", groups},
          {"layout", activation_name(layout)},
          {"filter_layout", filter_name(filter_layout)},
          {"input", input},
          {"filter", filter},
          {"output", output},
          {"dtype", dtype}};
}

CudnnConvProblem CudnnConvProblem::from_json(const nlohmann::json& j) {
  CudnnConvProblem p;
  p.n = field<int64_t>(j, "n");
  p.c = field<int64_t>(j, "c");
  p.h = field<int64_t>(j, "h");
  p.w = field<int64_t>(j, "w");
  p.k = field<int64_t>(j, "k");
  p.r = field<int64_t>(j, "r");
  p.s = field<int64_t>(j, "s");
  p.stride = field<int64_t>(j, "stride");
  p.pad = field<int64_t>(j, "pad");
  p.dilation = field<int64_t>(j, "dilation");
  p.groups = field<int64_t>(j, "groups");
  p.dtype = j.contains("dtype") ? field<std::string>(j, "dtype") : std::string("float32");
  if (p.dtype != "float32" && p.dtype != "float16" && p.dtype != "bfloat16")
    throw std::invalid_argument(
        fmt::format("cuDNN problem: dtype '{}' (known: float32, float16, bfloat16)", p.dtype));
  const std::string layout = field<std::string>(j, "layout");
  const std::string filter = field<std::string>(j, "filter_layout");
  if (layout != "nchw" && layout != "nhwc")
    throw std::invalid_argument(
        fmt::format("cuDNN problem: layout '{}' (known: nchw, nhwc)", layout));
  if (filter != "kcrs" && filter != "rsck")
    throw std::invalid_argument(
        fmt::format("cuDNN problem: filter_layout '{}' (known: kcrs, rsck)", filter));
  p.layout = layout == "nchw" ? CudnnActivationLayout::nchw : CudnnActivationLayout::nhwc;
  p.filter_layout = filter == "kcrs" ? CudnnFilterLayout::kcrs : CudnnFilterLayout::rsck;
  p.input = field<int>(j, "input");
  p.filter = field<int>(j, "filter");
  p.output = field<int>(j, "output");
  return p;
}

CudnnConvDescriptors cudnn_descriptors(const CudnnConvProblem& p) {
  if (p.groups < 1 || p.c % p.groups != 0 || p.k % p.groups != 0)
    throw std::invalid_argument(
        fmt::format("cuDNN: {} groups do not divide C = {} and K = {}", p.groups, p.c, p.k));
  if (p.filter_layout == CudnnFilterLayout::rsck && p.groups != 1)
    throw std::invalid_argument("cuDNN: an RSCK filter with groups is not supported");
  const auto extent = [&](int64_t in, int64_t f) {
    return (in + 2 * p.pad - p.dilation * (f - 1) - 1) / p.stride + 1;
  };
  const int64_t out_h = extent(p.h, p.r), out_w = extent(p.w, p.s);
  if (p.stride < 1 || p.dilation < 1 || p.pad < 0 || out_h < 1 || out_w < 1)
    throw std::invalid_argument("cuDNN: the convolution has an empty output");
  CudnnConvDescriptors d;
  d.format_nhwc = p.layout == CudnnActivationLayout::nhwc;
  const int64_t x[4] = {p.n, p.c, p.h, p.w}, w[4] = {p.k, p.c / p.groups, p.r, p.s},
                y[4] = {p.n, p.k, out_h, out_w};
  for (int i = 0; i < 4; ++i) {
    d.x_dims[i] = to_int(x[i], "an input size");
    d.w_dims[i] = to_int(w[i], "a filter size");
    d.y_dims[i] = to_int(y[i], "an output size");
  }
  d.pad_h = d.pad_w = to_int(p.pad, "pad");
  d.stride_h = d.stride_w = to_int(p.stride, "stride");
  d.dilation_h = d.dilation_w = to_int(p.dilation, "dilation");
  d.groups = to_int(p.groups, "groups");
  d.filter_needs_transpose = p.filter_layout == CudnnFilterLayout::rsck;
  return d;
}

std::vector<float> rsck_to_krsc(const std::vector<float>& rsck, int64_t r, int64_t s, int64_t c,
                                int64_t k) {
  if (int64_t(rsck.size()) != r * s * c * k)
    throw std::invalid_argument("rsck_to_krsc: the filter has the wrong number of elements");
  std::vector<float> krsc(rsck.size());
  for (int64_t ri = 0; ri < r; ++ri)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t ki = 0; ki < k; ++ki)
          krsc[size_t(((ki * r + ri) * s + si) * c + ci)] =
              rsck[size_t(((ri * s + si) * c + ci) * k + ki)];
  return krsc;
}

std::vector<char> rsck_to_krsc_bytes(const std::vector<char>& rsck, int64_t r, int64_t s, int64_t c,
                                     int64_t k, int64_t width) {
  if (int64_t(rsck.size()) != r * s * c * k * width)
    throw std::invalid_argument("rsck_to_krsc: the filter has the wrong number of bytes");
  std::vector<char> krsc(rsck.size());
  for (int64_t ri = 0; ri < r; ++ri)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t ki = 0; ki < k; ++ki)
          std::memcpy(&krsc[size_t((((ki * r + ri) * s + si) * c + ci) * width)],
                      &rsck[size_t((((ri * s + si) * c + ci) * k + ki) * width)], size_t(width));
  return krsc;
}

std::string cudnn_algo_name(int algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return fmt::format("algo {}", algo);
  }
}

std::string cudnn_unavailable_reason() { return api().usable ? "" : api().reason; }

std::optional<int64_t> cudnn_version() {
  if (!api().usable) return std::nullopt;
  return int64_t(api().cudnnGetVersion());
}

CudnnConv::CudnnConv(const CudnnConvProblem& problem) : d_(cudnn_descriptors(problem)) {
  const CudnnApi& a = require_cudnn();
  try {
    cudnnHandle_t h = nullptr;
    CUTUNE_CUDNN_CALL(a.cudnnCreate(&h));
    handle_ = h;
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    CUTUNE_CUDNN_CALL(a.cudnnCreateTensorDescriptor(&x));
    x_desc_ = x;
    CUTUNE_CUDNN_CALL(a.cudnnCreateTensorDescriptor(&y));
    y_desc_ = y;
    cudnnFilterDescriptor_t w = nullptr;
    CUTUNE_CUDNN_CALL(a.cudnnCreateFilterDescriptor(&w));
    w_desc_ = w;
    cudnnConvolutionDescriptor_t conv = nullptr;
    CUTUNE_CUDNN_CALL(a.cudnnCreateConvolutionDescriptor(&conv));
    conv_desc_ = conv;

    const cudnnTensorFormat_t format = d_.format_nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    // 16-bit tensors compute in fp32 (cuDNN's pseudo-half configuration) on the tensor cores;
    // fp32 tensors on the FMA path, so that no TF32 algorithm is ever timed or trusted.
    const cudnnDataType_t data = problem.dtype == "float16"    ? CUDNN_DATA_HALF
                                 : problem.dtype == "bfloat16" ? CUDNN_DATA_BFLOAT16
                                                               : CUDNN_DATA_FLOAT;
    fp32_ = data == CUDNN_DATA_FLOAT;
    CUTUNE_CUDNN_CALL(a.cudnnSetTensor4dDescriptor(x, format, data, d_.x_dims[0], d_.x_dims[1],
                                                   d_.x_dims[2], d_.x_dims[3]));
    CUTUNE_CUDNN_CALL(a.cudnnSetFilter4dDescriptor(w, data, format, d_.w_dims[0], d_.w_dims[1],
                                                   d_.w_dims[2], d_.w_dims[3]));
    CUTUNE_CUDNN_CALL(a.cudnnSetConvolution2dDescriptor(conv, d_.pad_h, d_.pad_w, d_.stride_h,
                                                        d_.stride_w, d_.dilation_h, d_.dilation_w,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUTUNE_CUDNN_CALL(a.cudnnSetConvolutionGroupCount(conv, d_.groups));
    CUTUNE_CUDNN_CALL(
        a.cudnnSetConvolutionMathType(conv, fp32_ ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    int dims[4] = {};
    CUTUNE_CUDNN_CALL(a.cudnnGetConvolution2dForwardOutputDim(conv, x, w, &dims[0], &dims[1],
                                                              &dims[2], &dims[3]));
    if (!std::equal(dims, dims + 4, d_.y_dims))
      throw std::logic_error(fmt::format("cuDNN computes output {}x{}x{}x{}, cutune {}x{}x{}x{}",
                                         dims[0], dims[1], dims[2], dims[3], d_.y_dims[0],
                                         d_.y_dims[1], d_.y_dims[2], d_.y_dims[3]));
    CUTUNE_CUDNN_CALL(a.cudnnSetTensor4dDescriptor(y, format, data, d_.y_dims[0], d_.y_dims[1],
                                                   d_.y_dims[2], d_.y_dims[3]));
  } catch (...) {
    release();
    throw;
  }
}

CudnnConv::~CudnnConv() { release(); }

CudnnConv::CudnnConv(CudnnConv&& o) noexcept
    : d_(o.d_),
      fp32_(o.fp32_),
      handle_(std::exchange(o.handle_, nullptr)),
      x_desc_(std::exchange(o.x_desc_, nullptr)),
      y_desc_(std::exchange(o.y_desc_, nullptr)),
      w_desc_(std::exchange(o.w_desc_, nullptr)),
      conv_desc_(std::exchange(o.conv_desc_, nullptr)),
      workspace_(std::exchange(o.workspace_, 0)),
      workspace_bytes_(std::exchange(o.workspace_bytes_, 0)),
      chosen_(o.chosen_) {}

void CudnnConv::release() noexcept {
  const CudnnApi& a = api();
  if (workspace_ != 0) {
    if (const DriverApi* d = driver_api()) d->cuMemFree_v2(workspace_);
    workspace_ = 0;
    workspace_bytes_ = 0;
  }
  if (!a.usable) return;
  if (conv_desc_)
    a.cudnnDestroyConvolutionDescriptor(static_cast<cudnnConvolutionDescriptor_t>(conv_desc_));
  if (w_desc_) a.cudnnDestroyFilterDescriptor(static_cast<cudnnFilterDescriptor_t>(w_desc_));
  if (y_desc_) a.cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(y_desc_));
  if (x_desc_) a.cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(x_desc_));
  if (handle_) a.cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
  conv_desc_ = w_desc_ = y_desc_ = x_desc_ = handle_ = nullptr;
}

std::vector<CudnnAlgoPerf> CudnnConv::find(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y,
                                           size_t max_workspace_bytes) {
  const CudnnApi& a = require_cudnn();
  const DriverApi& driver = require_driver();
  // The largest workspace the device lets us have, up to the cap.
  CUdeviceptr scratch = 0;
  size_t scratch_bytes = max_workspace_bytes;
  while (scratch_bytes >= (size_t(1) << 20) &&
         driver.cuMemAlloc_v2(&scratch, scratch_bytes) != CUDA_SUCCESS)
    scratch_bytes /= 2;
  if (scratch == 0) scratch_bytes = 0;

  int max_count = 0;
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf;
  int returned = 0;
  try {
    CUTUNE_CUDNN_CALL(a.cudnnGetConvolutionForwardAlgorithmMaxCount(
        static_cast<cudnnHandle_t>(handle_), &max_count));
    perf.resize(size_t(std::max(max_count, 1)));
    CUTUNE_CUDNN_CALL(a.cudnnFindConvolutionForwardAlgorithmEx(
        static_cast<cudnnHandle_t>(handle_), static_cast<cudnnTensorDescriptor_t>(x_desc_),
        reinterpret_cast<const void*>(x), static_cast<cudnnFilterDescriptor_t>(w_desc_),
        reinterpret_cast<const void*>(w), static_cast<cudnnConvolutionDescriptor_t>(conv_desc_),
        static_cast<cudnnTensorDescriptor_t>(y_desc_), reinterpret_cast<void*>(y), int(perf.size()),
        &returned, perf.data(), reinterpret_cast<void*>(scratch), scratch_bytes));
  } catch (...) {
    if (scratch != 0) driver.cuMemFree_v2(scratch);
    throw;
  }
  if (scratch != 0) CUTUNE_CU_CHECK(driver.cuMemFree_v2(scratch));

  std::vector<CudnnAlgoPerf> out;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[size_t(i)];
    CudnnAlgoPerf r;
    r.algo = int(p.algo);
    r.name = cudnn_algo_name(r.algo);
    r.time_s = double(p.time) * 1e-3;
    r.workspace_bytes = p.memory;
    // For fp32, FMA math was asked for; an algorithm that reports another (tensor-op) math
    // type is not fp32. 16-bit inputs are meant for the tensor cores.
    r.ok =
        p.status == CUDNN_STATUS_SUCCESS && (!fp32_ || p.mathType == CUDNN_FMA_MATH) && p.time >= 0;
    out.push_back(r);
  }
  // FindEx times each algorithm about once, its first launches included (with lazy module
  // loading, a kernel's first launch loads its module): on an H200 it ranked a plain
  // IMPLICIT_GEMM first for fp16 layers where tensor-core algorithms run many times faster.
  // Every algorithm that ran is timed again here, warm, and ranked on that.
  for (CudnnAlgoPerf& r : out) {
    if (!r.ok) continue;
    try {
      r.time_s = time_warm(x, w, y, r);
    } catch (const CudaError&) {
      r.ok = false;  // it ran once for FindEx but not again: not a baseline to trust
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CudnnAlgoPerf& l, const CudnnAlgoPerf& r) {
    return l.ok != r.ok ? l.ok : l.time_s < r.time_s;
  });
  if (out.empty() || !out.front().ok)
    throw_cuda_error("cuDNN", -1, "cudnnFindConvolutionForwardAlgorithmEx",
                     fmt::format("no algorithm ran with CUDNN_FMA_MATH and a {} MiB workspace",
                                 scratch_bytes >> 20),
                     __FILE__, __LINE__);
  choose(out.front());
  return out;
}

double CudnnConv::time_warm(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, const CudnnAlgoPerf& algo) {
  const DriverApi& driver = require_driver();
  choose(algo);
  for (int i = 0; i < 3; ++i) forward(x, w, y);  // loads the modules, warms the clocks
  const auto event = [&driver] {  // destroyed on every path out
    CUevent e = nullptr;
    CUTUNE_CU_CHECK(driver.cuEventCreate(&e, 0));
    return std::unique_ptr<CUevent_st, decltype(driver.cuEventDestroy_v2)>(
        e, driver.cuEventDestroy_v2);
  };
  const auto start = event(), stop = event();
  constexpr int kRuns = 10;
  CUTUNE_CU_CHECK(driver.cuEventRecord(start.get(), nullptr));
  for (int i = 0; i < kRuns; ++i) forward(x, w, y);
  CUTUNE_CU_CHECK(driver.cuEventRecord(stop.get(), nullptr));
  CUTUNE_CU_CHECK(driver.cuEventSynchronize(stop.get()));
  float ms = 0;
  CUTUNE_CU_CHECK(driver.cuEventElapsedTime(&ms, start.get(), stop.get()));
  return double(ms) * 1e-3 / kRuns;
}

void CudnnConv::choose(const CudnnAlgoPerf& algo) {
  if (!algo.ok) throw std::invalid_argument("cuDNN: choosing an algorithm that did not run");
  const DriverApi& driver = require_driver();
  if (algo.workspace_bytes > workspace_bytes_) {
    if (workspace_ != 0) CUTUNE_CU_CHECK(driver.cuMemFree_v2(workspace_));
    workspace_ = 0;
    workspace_bytes_ = 0;
    CUTUNE_CU_CHECK(driver.cuMemAlloc_v2(&workspace_, algo.workspace_bytes));
    workspace_bytes_ = algo.workspace_bytes;
  }
  chosen_ = algo;
}

void CudnnConv::forward(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y) {
  if (chosen_.algo < 0) throw std::logic_error("CudnnConv::forward before find()");
  const CudnnApi& a = require_cudnn();
  const float alpha = 1.0f, beta = 0.0f;
  CUTUNE_CUDNN_CALL(a.cudnnConvolutionForward(
      static_cast<cudnnHandle_t>(handle_), &alpha, static_cast<cudnnTensorDescriptor_t>(x_desc_),
      reinterpret_cast<const void*>(x), static_cast<cudnnFilterDescriptor_t>(w_desc_),
      reinterpret_cast<const void*>(w), static_cast<cudnnConvolutionDescriptor_t>(conv_desc_),
      static_cast<cudnnConvolutionFwdAlgo_t>(chosen_.algo), reinterpret_cast<void*>(workspace_),
      workspace_bytes_, &beta, static_cast<cudnnTensorDescriptor_t>(y_desc_),
      reinterpret_cast<void*>(y)));
}

}  // namespace cutune
