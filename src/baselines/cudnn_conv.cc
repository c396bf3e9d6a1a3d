#include "src/baselines/cudnn_conv.h"

#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "src/baselines/algorithm_search.h"
#include "src/runtime/cuda_check.h"
#include "src/runtime/driver_api.h"
#include "src/runtime/dynamic_library.h"

// The legacy convolution API is marked deprecated in cuDNN 9 but remains supported; it is the
// one the issue asks for (FindEx, math type), so the warnings say nothing new. So are the
// graph API's handle attributes of operation graphs and execution plans, which cuDNN 9.0 needs.
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
  X(cudnnConvolutionForward)                     \
  X(cudnnBackendCreateDescriptor)                \
  X(cudnnBackendDestroyDescriptor)               \
  X(cudnnBackendSetAttribute)                    \
  X(cudnnBackendGetAttribute)                    \
  X(cudnnBackendFinalize)                        \
  X(cudnnBackendExecute)

namespace cutune {

namespace {

CUTUNE_FUNCTION_TABLE(CudnnApi, CUTUNE_CUDNN_FUNCTIONS)

const CudnnApi& api() { return loaded_table<CudnnApi>(CudaLibrary::cudnn, "libcudnn"); }

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

// The graph (backend) API.

namespace {

// A backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    CUTUNE_CUDNN_CALL(require_cudnn().cudnnBackendCreateDescriptor(type, &d_));
  }
  ~Descriptor() {
    if (d_ != nullptr) api().cudnnBackendDestroyDescriptor(d_);
  }
  Descriptor(Descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const void* values,
           int64_t count = 1) {
    CUTUNE_CUDNN_CALL(api().cudnnBackendSetAttribute(d_, name, type, count, values));
  }
  void set(cudnnBackendAttributeName_t name, const Descriptor& value) {
    const cudnnBackendDescriptor_t d = value.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &d);
  }
  void finalize() { CUTUNE_CUDNN_CALL(api().cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// Gets `count` elements of an attribute; returns how many there were.
int64_t get_attribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                      cudnnBackendAttributeType_t type, int64_t count, void* values) {
  int64_t got = 0;
  CUTUNE_CUDNN_CALL(api().cudnnBackendGetAttribute(d, name, type, count, &got, values));
  return got;
}

enum : int64_t { kUidX = 'x', kUidW = 'w', kUidY = 'y' };

// dims in n, c, h, w order (k, c/groups, r, s for the filter), strides of NHWC (KRSC) or NCHW
// (KCRS), as the legacy descriptors lay them out.
Descriptor graph_tensor(int64_t uid, cudnnDataType_t type, const int dims[4], bool nhwc) {
  const int64_t n = dims[0], c = dims[1], h = dims[2], w = dims[3];
  const int64_t extents[4] = {n, c, h, w};
  const int64_t nhwc_strides[4] = {h * w * c, 1, w * c, c};
  const int64_t nchw_strides[4] = {c * h * w, h * w, w, 1};
  const int64_t alignment = 16;
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, extents, 4);
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nhwc ? nhwc_strides : nchw_strides, 4);
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
  t.finalize();
  return t;
}

cudnnDataType_t data_type(const std::string& dtype) {
  return dtype == "float16"    ? CUDNN_DATA_HALF
         : dtype == "bfloat16" ? CUDNN_DATA_BFLOAT16
                               : CUDNN_DATA_FLOAT;
}

}  // namespace

struct CudnnGraph {
  bool fp32;  // fp32 data: engines that compute below fp32 are left out
  Descriptor x, w, y, conv, op;
  Descriptor graph;
  struct Plan {
    Descriptor plan;
    int64_t engine = -1;  // the engine's global index
    size_t workspace_bytes = 0;
  };
  std::vector<Plan> plans;
  // The variant pack of the pointers it was last built for.
  Descriptor pack;
  CUdeviceptr pack_pointers[4] = {};

  // An engine's notes of one kind (numerical or behaviour), as cuDNN lists them.
  template <typename Note>
  static std::vector<Note> notes_of(cudnnBackendDescriptor_t engine,
                                    cudnnBackendAttributeName_t name,
                                    cudnnBackendAttributeType_t type, int64_t kinds) {
    std::vector<Note> notes(static_cast<size_t>(kinds), Note{});
    notes.resize(size_t(
        std::clamp<int64_t>(get_attribute(engine, name, type, kinds, notes.data()), 0, kinds)));
    return notes;
  }

  // An engine whose numerical notes say it computes below fp32: TF32 tensor cores, inputs
  // converted down, or a reduction in reduced precision.
  static bool computes_below_fp32(cudnnBackendDescriptor_t engine) {
    const auto notes = notes_of<cudnnBackendNumericalNote_t>(
        engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
        CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
    return std::any_of(notes.begin(), notes.end(), [](cudnnBackendNumericalNote_t note) {
      return note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
             note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
             note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
    });
  }

  // An engine that compiles its kernel when its plan is finalized (seconds a plan, at every
  // worker start): left out, so that the search stays within the task setup's deadline.
  static bool compiles_at_run_time(cudnnBackendDescriptor_t engine) {
    const auto notes = notes_of<cudnnBackendBehaviorNote_t>(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                                            CUDNN_TYPE_BEHAVIOR_NOTE,
                                                            CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
    return std::find(notes.begin(), notes.end(), CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) !=
           notes.end();
  }

  CudnnGraph(const CudnnConvDescriptors& d, cudnnDataType_t data) : fp32(data == CUDNN_DATA_FLOAT) {
    x = graph_tensor(kUidX, data, d.x_dims, d.format_nhwc);
    w = graph_tensor(kUidW, data, d.w_dims, d.format_nhwc);
    y = graph_tensor(kUidY, data, d.y_dims, d.format_nhwc);
    conv = Descriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t spatial = 2;
    const int64_t dilations[2] = {d.dilation_h, d.dilation_w};
    const int64_t strides[2] = {d.stride_h, d.stride_w};
    const int64_t padding[2] = {d.pad_h, d.pad_w};
    conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
    conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode);
    conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial);
    conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dilations, 2);
    conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, strides, 2);
    conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, padding, 2);
    conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, padding, 2);
    conv.finalize();
    op = Descriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    const float alpha = 1.0f, beta = 0.0f;
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &alpha);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &beta);
    op.finalize();
  }

  // The operation graph on `handle`, and a plan for each of heuristics mode A's first
  // `max_plans` engine configurations that finalizes (others do not support the problem),
  // precompiled engines only, until `budget_s` seconds have gone (the worker's task setup has
  // a deadline).
  void make_plans(cudnnHandle_t handle, int max_plans, double budget_s) {
    const auto start = std::chrono::steady_clock::now();
    plans.clear();
    graph = Descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    const cudnnBackendDescriptor_t ops = op.get();
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, &ops);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
    graph.finalize();
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    heuristics.finalize();
    const int64_t available = get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr);
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < std::min<int64_t>(available, max_plans); ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    const int64_t got =
        get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()), raw.data());
    for (int64_t i = 0; i < std::min<int64_t>(got, int64_t(raw.size())); ++i) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
          budget_s)
        break;
      try {
        Plan p;
        Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        cudnnBackendDescriptor_t e = engine.get();
        get_attribute(raw[size_t(i)], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                      &e);
        get_attribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &p.engine);
        if ((fp32 && computes_below_fp32(e)) || compiles_at_run_time(e)) continue;
        p.plan = Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle);
        p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   &raw[size_t(i)]);
        p.plan.finalize();
        int64_t workspace = 0;
        get_attribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                      &workspace);
        p.workspace_bytes = size_t(std::max<int64_t>(workspace, 0));
        plans.push_back(std::move(p));
      } catch (const CudaError&) {
        // This engine configuration does not support the problem: not a plan.
      }
    }
  }

  void execute(cudnnHandle_t handle, int plan, CUdeviceptr xp, CUdeviceptr wp, CUdeviceptr yp,
               CUdeviceptr workspace) {
    const CUdeviceptr now[4] = {xp, wp, yp, workspace};
    if (pack.get() == nullptr || !std::equal(now, now + 4, pack_pointers)) {
      const int64_t uids[3] = {kUidX, kUidW, kUidY};
      void* data[3] = {reinterpret_cast<void*>(xp), reinterpret_cast<void*>(wp),
                       reinterpret_cast<void*>(yp)};
      void* scratch = reinterpret_cast<void*>(workspace);
      Descriptor fresh(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      fresh.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids, 3);
      fresh.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, data, 3);
      fresh.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &scratch);
      fresh.finalize();
      pack = std::move(fresh);
      std::copy(now, now + 4, pack_pointers);
    }
    CUTUNE_CUDNN_CALL(
        api().cudnnBackendExecute(handle, plans[size_t(plan)].plan.get(), pack.get()));
  }
};

void cudnn_graph_operation_check(const CudnnConvProblem& problem) {
  [[maybe_unused]] const CudnnGraph graph(cudnn_descriptors(problem), data_type(problem.dtype));
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
    const cudnnDataType_t data = data_type(problem.dtype);
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
    // The graph API's engines too; for fp32 only those whose numerical notes promise fp32
    // arithmetic (no TF32), as the legacy algorithms are held to CUDNN_FMA_MATH.
    try {
      graph_ = std::make_unique<CudnnGraph>(d_, data);
    } catch (const CudaError& e) {
      graph_note_ = fmt::format("the graph API rejects the convolution: {}", e.what());
    }
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
      workspace_(std::move(o.workspace_)),
      chosen_(o.chosen_),
      graph_(std::move(o.graph_)),
      graph_note_(std::move(o.graph_note_)) {}

void CudnnConv::release() noexcept {
  const CudnnApi& a = api();
  workspace_.release();
  if (!a.usable) return;
  graph_.reset();  // its plans before the handle they were made on
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
  if (graph_) {
    try {
      graph_->make_plans(static_cast<cudnnHandle_t>(handle_), 16, 10.0);
      if (graph_->plans.empty()) graph_note_ = "no engine configuration of the graph API ran";
    } catch (const CudaError& e) {
      graph_note_ = fmt::format("the graph API made no plan: {}", e.what());
    }
    for (size_t i = 0; i < graph_->plans.size(); ++i) {
      const CudnnGraph::Plan& p = graph_->plans[i];
      CudnnAlgoPerf r;
      r.plan = int(i);
      r.name = fmt::format("graph engine {}", p.engine);
      r.workspace_bytes = p.workspace_bytes;
      if (p.workspace_bytes > max_workspace_bytes) continue;
      r.ok = true;
      try {
        r.time_s = time_warm(x, w, y, r);
      } catch (const CudaError&) {
        r.ok = false;
      }
      out.push_back(r);
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

double CudnnConv::time_warm(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y,
                            const CudnnAlgoPerf& algo) {
  choose(algo);
  return mean_warm_seconds([&] { forward(x, w, y); });
}

void CudnnConv::choose(const CudnnAlgoPerf& algo) {
  if (!algo.ok) throw std::invalid_argument("cuDNN: choosing an algorithm that did not run");
  workspace_.reserve(algo.workspace_bytes);
  chosen_ = algo;
}

void CudnnConv::forward(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y) {
  if (chosen_.algo < 0 && chosen_.plan < 0)
    throw std::logic_error("CudnnConv::forward before find()");
  const CudnnApi& a = require_cudnn();
  if (chosen_.plan >= 0) {
    graph_->execute(static_cast<cudnnHandle_t>(handle_), chosen_.plan, x, w, y, workspace_.get());
    return;
  }
  const float alpha = 1.0f, beta = 0.0f;
  CUTUNE_CUDNN_CALL(a.cudnnConvolutionForward(
      static_cast<cudnnHandle_t>(handle_), &alpha, static_cast<cudnnTensorDescriptor_t>(x_desc_),
      reinterpret_cast<const void*>(x), static_cast<cudnnFilterDescriptor_t>(w_desc_),
      reinterpret_cast<const void*>(w), static_cast<cudnnConvolutionDescriptor_t>(conv_desc_),
      static_cast<cudnnConvolutionFwdAlgo_t>(chosen_.algo),
      reinterpret_cast<void*>(workspace_.get()), workspace_.bytes(), &beta,
      static_cast<cudnnTensorDescriptor_t>(y_desc_), reinterpret_cast<void*>(y)));
}

}  // namespace cutune
