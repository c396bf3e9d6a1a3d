#pragma once
// The conversation between the tuner (parent) and its measuring worker process, and the
// framing that carries it over a stream socket.
//
// A frame is a 24-byte header (magic "CTWK", kind, JSON length, blob length; little-endian
// u32, u32, u64, u64), a UTF-8 JSON object, then an opaque blob (cubin bytes, expected outputs).
// The parent speaks first and the worker answers every frame with exactly one frame:
//
//   parent                                   worker
//   task    {WorkerTask}  blob: expected  -> ready {} | failed {"error": ...}
//   measure {MeasureRequest} blob: cubin  -> result {MeasureReply}
//   shutdown {}                           -> (exits 0)
//
// A worker that dies, hangs or answers garbage is the supervisor's business (worker_process.h);
// this file only says what the bytes mean.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/baseline_spec.h"
#include "src/codegen/cuda_source.h"
#include "src/records/measure_result.h"

namespace cutune {

enum class FrameKind : uint32_t {
  task = 1,
  ready = 2,
  failed = 3,
  measure = 4,
  result = 5,
  shutdown = 6
};

struct Frame {
  FrameKind kind = FrameKind::shutdown;
  nlohmann::json header = nlohmann::json::object();
  std::vector<char> blob;
};

// Outcome of moving one frame. `closed`: the peer went away (EOF, reset); `timeout`: the
// deadline passed first; `malformed`: the bytes were not a frame.
enum class IoStatus { ok, closed, timeout, malformed };

// Monotonic deadline in seconds (steady clock); kNoDeadline waits forever.
inline constexpr double kNoDeadline = std::numeric_limits<double>::infinity();
double monotonic_seconds();

// Writes/reads one whole frame on a stream socket (or pipe) `fd`, waiting at most until
// `deadline` (monotonic_seconds() scale). Writing never raises SIGPIPE on a socket.
IoStatus write_frame(int fd, const Frame& frame, double deadline = kNoDeadline);
IoStatus read_frame(int fd, Frame& frame, double deadline = kNoDeadline);

// How a candidate is timed. Seconds throughout.
struct TimingOptions {
  bool flush_l2 = true;      // write >= 2x L2 before every timed run
  bool prefer_cupti = true;  // CUPTI activity records; CUDA events when unavailable
  int warmup = 2;            // untimed launches after the checked one
  int min_repeats = 5;
  int max_repeats = 200;
  double min_seconds = 0.01;       // summed kernel time before the CI test may stop the run
  double max_seconds = 2.0;        // wall-clock cap on one candidate's timed runs
  double target_rel_ci = 0.01;     // stop once the median's 95% CI half-width / median is below
  double early_stop_factor = 3.0;  // stop after min_repeats when median > factor * best so far
};

// A global tensor of the task, in kernel parameter order.
struct WorkerTensor {
  std::string name;
  std::string dtype = "float32";  // storage: float32, float16 or bfloat16 (correctness.h)
  int64_t elements = 0;
  bool is_output = false;
  bool zero_init = false;  // outputs: zeroed before every launch (split-K adds into it)

  int64_t bytes() const;  // elements times the dtype's width
};

// How the worker gets the right answer, once per task.
enum class ReferenceKind {
  none,     // outputs are not checked
  host,     // the parent sends the expected outputs (concatenated, as float32 whatever
            //   the output's dtype) as the blob
  baseline  // the task's baseline (cuBLAS) computes them on the GPU
};

// A user kernel's task (src/spec): arguments as raw bytes of the user's element types, made by
// the parent; scalars are passed by value, constants fill the module's __constant__ symbol of
// that name after every load. The task's blob is every argument's initial bytes in order, then
// (with expected_in_blob) the expected bytes of every output in order, then the reference
// kernel's cubin. Without expected_in_blob the worker runs the reference kernel once at setup
// (on the same initial bytes) and its outputs are the reference.
enum class UserArgKind { buffer, scalar, constant };

struct UserArgument {
  std::string name;
  UserArgKind kind = UserArgKind::buffer;
  std::string elem = "float32";  // float16, bfloat16, float32, float64, int8 ... uint64
  int64_t bytes = 0;             // all elements
  bool is_output = false;
  double tolerance = 0;  // outputs: the largest accepted error (correctness.h)
};

struct UserKernelTask {
  std::vector<UserArgument> arguments;
  bool expected_in_blob = false;
  std::string reference_kernel;   // lowered name in the reference cubin
  LaunchSpec reference_launch;
  std::vector<int> reference_args;  // per kernel parameter, the argument it takes
  int64_t reference_cubin_bytes = 0;

  int64_t argument_bytes() const;  // sum over arguments
  int64_t expected_bytes() const;  // sum over outputs when expected_in_blob, else 0
};

struct WorkerTask {
  int device = 0;
  std::optional<UserKernelTask> user;  // set: a user kernel; `tensors` is then empty
  uint64_t seed = 0;  // inputs are fill_input(seed, tensor index, ...)
  std::vector<WorkerTensor> tensors;
  ReferenceKind reference = ReferenceKind::none;
  // The vendor-library computation of the task (the template's declaration): timed as the
  // baseline, and the reference where `reference` says so. A convolution's cuDNN output is
  // checked against the host reference first and then replaces it.
  BaselineSpec baseline;
  int64_t reduction_length = 1;  // for the tolerance
  TimingOptions timing;
};

// One candidate. `what` selects the kernel or, for baselines, the library call timed with the
// same harness.
enum class MeasureWhat { kernel, baseline };

struct MeasureRequest {
  uint64_t id = 0;  // echoed in the reply
  MeasureWhat what = MeasureWhat::kernel;
  std::string kernel_name;
  LaunchSpec launch;
  std::vector<int> args;    // per kernel parameter, the task tensor it points at
  // Per kernel parameter (empty: none is): a TMA tensor map over tensor args[i], which the
  // worker encodes for that tensor's device address and passes in place of the pointer.
  std::vector<std::optional<ir::TensorMapDesc>> maps;
  std::vector<char> cubin;  // travels as the blob
  std::string source;       // the CUDA C: the emulator backend runs it; empty for a GPU
  bool check = true;        // compare outputs with the reference before timing
  double best_so_far_s = std::numeric_limits<double>::infinity();
};

struct MeasureReply {
  uint64_t id = 0;
  MeasureResult result;
  // The kernel left the CUDA context unusable (sticky error): the worker must be replaced.
  bool context_poisoned = false;
};

nlohmann::json to_json(const TimingOptions& options);
TimingOptions timing_options_from_json(const nlohmann::json& j);
nlohmann::json to_json(const LaunchSpec& launch);
LaunchSpec launch_spec_from_json(const nlohmann::json& j);
nlohmann::json to_json(const MeasureResult& result);
MeasureResult measure_result_from_json(const nlohmann::json& j);

// Frames for each message. The *_from_frame functions throw std::invalid_argument (one line)
// when a field is missing or has the wrong type.
Frame task_frame(const WorkerTask& task, std::vector<char> expected_outputs);
WorkerTask task_from_frame(const Frame& frame);
Frame measure_frame(const MeasureRequest& request);
MeasureRequest measure_request_from_frame(Frame frame);
Frame reply_frame(const MeasureReply& reply);
MeasureReply reply_from_frame(const Frame& frame);

}  // namespace cutune
