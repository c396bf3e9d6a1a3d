#pragma once
// cuDNN's fp32 forward convolution, as the correctness reference and the speed baseline of
// the convolution templates. libcudnn.so.9 is loaded at run time (dlopen), so a binary starts
// on a machine without cuDNN or a driver; only constructing a CudnnConv needs them.
//
// The legacy API: a 4-d tensor descriptor for the input and output, a 4-d filter descriptor, a
// 2-d convolution descriptor (cross-correlation, fp32 compute, CUDNN_FMA_MATH so that no TF32
// tensor-core algorithm takes part, group count C for depthwise), and
// cudnnFindConvolutionForwardAlgorithmEx with a workspace of up to 1 GiB.
//
// The runtime knows no templates: a CudnnConvProblem is a plain description (sizes, layouts,
// which task tensor is which) that the caller builds from its template
// (src/runtime/cudnn_conv_task.h) and that travels to the worker as JSON on its command line.

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/baselines/algorithm_search.h"

namespace cutune {

// How activations are laid out: NCHW ([N,C,H,W] in, [N,K,P,Q] out) or NHWC.
enum class CudnnActivationLayout { nchw, nhwc };
// How the filter is stored in the task's tensor: KCRS ([K, C/groups, R, S], cuDNN's NCHW
// filter) or RSCK ([R,S,C,K], "HWIO", the NHWC template's). cuDNN has no RSCK format: the
// worker copies such a filter once into KRSC (cuDNN's NHWC filter) before it starts.
enum class CudnnFilterLayout { kcrs, rsck };

struct CudnnConvProblem {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, r = 1, s = 1;         // output channels, filter rows, columns
  int64_t stride = 1, pad = 0, dilation = 1;
  int64_t groups = 1;  // C for depthwise (then K == C)
  CudnnActivationLayout layout = CudnnActivationLayout::nchw;
  CudnnFilterLayout filter_layout = CudnnFilterLayout::kcrs;
  int input = 1, filter = 2, output = 0;  // indices of the task's tensors
  std::string dtype = "float32";          // of input, filter and output: float32/16, bfloat16

  nlohmann::json to_json() const;
  // std::invalid_argument (one line) for a missing field or an unknown layout.
  static CudnnConvProblem from_json(const nlohmann::json& j);
  friend bool operator==(const CudnnConvProblem&, const CudnnConvProblem&) = default;
};

// The filter `rsck` (elements of `width` bytes) copied to KRSC order, for 16-bit filters too.
std::vector<char> rsck_to_krsc_bytes(const std::vector<char>& rsck, int64_t r, int64_t s, int64_t c,
                                     int64_t k, int64_t width);

// The integers handed to cuDNN's descriptor setters; pure arithmetic, tested on the CPU.
// `format_nhwc` selects CUDNN_TENSOR_NHWC for the tensors and the filter (KRSC), else
// CUDNN_TENSOR_NCHW (KCRS). Output extents follow the usual formula (as
// cudnnGetConvolution2dForwardOutputDim computes them; the worker checks they agree).
struct CudnnConvDescriptors {
  bool format_nhwc = false;
  int x_dims[4] = {};  // n, c, h, w (always in this order, whatever the format)
  int w_dims[4] = {};  // k, c / groups, r, s
  int y_dims[4] = {};  // n, k, p, q
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int groups = 1;
  bool filter_needs_transpose = false;  // RSCK in the task: copied to KRSC for cuDNN
};
// std::invalid_argument for sizes cuDNN's int descriptors cannot hold, a group count that does
// not divide C and K, or an empty output.
CudnnConvDescriptors cudnn_descriptors(const CudnnConvProblem& problem);

// RSCK -> KRSC, for the NHWC filter. `rsck` has r·s·c·k elements.
std::vector<float> rsck_to_krsc(const std::vector<float>& rsck, int64_t r, int64_t s, int64_t c,
                                int64_t k);

// One result of cudnnFindConvolutionForwardAlgorithmEx.
struct CudnnAlgoPerf {
  int algo = -1;      // a legacy algorithm (cudnnConvolutionFwdAlgo_t), or -1 for a graph plan
  int plan = -1;      // an execution plan of the graph API, else -1
  std::string name;   // "IMPLICIT_PRECOMP_GEMM", "graph engine 12"
  double time_s = 0;  // find(): mean of 10 warm runs, timed with CUDA events
  size_t workspace_bytes = 0;
  bool ok = false;  // status success with CUDNN_FMA_MATH
};

// "IMPLICIT_GEMM", ... for cudnnConvolutionFwdAlgo_t values; "algo N" for unknown ones.
std::string cudnn_algo_name(int algo);

// The graph (backend) API's side of a CudnnConv: the convolution as an operation graph, and
// the execution plans of its engine configurations (cudnn_conv.cc).
struct CudnnGraph;

// Builds and finalizes the graph API's forward convolution for `problem`: its three tensors
// (16-byte aligned, strides of the layout; the filter's as cuDNN's KRSC or KCRS), the
// convolution (cross-correlation, fp32 compute) and the operation. No GPU is needed; CudaError
// (library "cuDNN") when cuDNN rejects a descriptor or cannot be loaded.
void cudnn_graph_operation_check(const CudnnConvProblem& problem);

// A cuDNN handle and the descriptors of one problem on the current context. Move-only; the
// destructor never throws. find() also tries the graph API's engines (the legacy API offers no
// good tensor-core algorithm for some layers, e.g. a 1×1 stride-2 fp16 NHWC convolution, so a
// ratio against it alone can flatter us): the operation graph's engine configurations of
// heuristics mode A, at most 16, precompiled engines only (a runtime-compiled one compiles its
// kernel when its plan is finalized: seconds at every worker start), as many as finalize as
// plans within 10 s, each timed like a legacy algorithm;
// for fp32 data only engines whose numerical notes promise fp32 arithmetic (not TF32 tensor
// cores, not inputs converted down, not a reduced-precision reduction).
class CudnnConv {
 public:
  // Throws CudaError (library "cuDNN") when cuDNN cannot be loaded or rejects the problem,
  // std::invalid_argument as cudnn_descriptors does.
  explicit CudnnConv(const CudnnConvProblem& problem);
  ~CudnnConv();
  CudnnConv(CudnnConv&& other) noexcept;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  CudnnConv& operator=(CudnnConv&&) = delete;

  // Runs cudnnFindConvolutionForwardAlgorithmEx on the given device buffers (it overwrites
  // y) with a workspace of up to `max_workspace_bytes` (halved while it cannot be allocated),
  // then times every algorithm that ran again, warm (10 runs after 3, CUDA events), and the
  // graph plans with workspaces within the same cap alike, and returns them
  // fastest first on those times. Chooses the fastest ok one and keeps a workspace for it;
  // throws CudaError when no algorithm works. graph_note() says why no graph plan took part.
  std::vector<CudnnAlgoPerf> find(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y,
                                  size_t max_workspace_bytes = size_t(1) << 30);
  // Makes `algo` (one that find() reported ok) the one forward() runs.
  void choose(const CudnnAlgoPerf& algo);
  const CudnnAlgoPerf& chosen() const { return chosen_; }
  // Empty, or why no graph plan took part (a rejected descriptor, no plan that ran).
  const std::string& graph_note() const { return graph_note_; }

  // Enqueues y = conv(x, w) with the chosen algorithm on the default stream.
  void forward(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y);

 private:
  void release() noexcept;
  // Chooses `algo` and returns its mean time over 10 warm runs (seconds).
  double time_warm(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, const CudnnAlgoPerf& algo);

  CudnnConvDescriptors d_;
  bool fp32_ = true;  // fp32 tensors: FMA math only
  void* handle_ = nullptr;
  void* x_desc_ = nullptr;
  void* y_desc_ = nullptr;
  void* w_desc_ = nullptr;
  void* conv_desc_ = nullptr;
  DeviceWorkspace workspace_;
  CudnnAlgoPerf chosen_;
  std::unique_ptr<CudnnGraph> graph_;
  std::string graph_note_;
};

// "" when libcudnn loads and has every function used here, else why not (no GPU needed).
std::string cudnn_unavailable_reason();
// cudnnGetVersion() (e.g. 91000), or nullopt without cuDNN.
std::optional<int64_t> cudnn_version();

}  // namespace cutune
