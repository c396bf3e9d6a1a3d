#pragma once
// The conversation between the tuner (parent) and its measuring worker process, and the
// framing that carries it over a stream socket.
//
// A frame is a 24-byte header (magic "CTWK", kind, JSON length, blob length; little-endian
// u32, u32, u64, u64), a UTF-8 JSON object, then an opaque blob (cubin bytes, expected outputs).
// The parent speaks first and the worker answers every frame with exactly one frame:
//
//   parent                                   worker
//   task    {WorkerTask}  blob: arguments, expected outputs, reference cubin
//                                         -> ready {} | failed {"error": ...}
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

// A task's argument: a template's tensor or a user kernel's argument, in the order that
// requests' `args` name them.
enum class ArgKind {
  buffer,   // device memory; the kernel gets its address
  scalar,   // passed by value (at most 16 bytes)
  constant  // device memory like a buffer that also fills the module's __constant__ symbol of
            // its name after every load (as Kernel Tuner passes constant-memory arguments)
};

// How an argument's initial bytes are made, once per task.
enum class ArgInit {
  seeded,  // input_values(seed, argument index, ...) of its (floating) element type
  blob,    // the task's blob carries them (a user kernel's arguments)
  nan,     // 0xff bytes: an output element a kernel never writes fails the check
  zero     // zero bytes: an output a split-K kernel adds into
};

// The names on the wire: "buffer", "scalar", "constant"; "seeded", "blob", "nan", "zero".
const char* to_string(ArgKind kind);
const char* to_string(ArgInit init);

struct WorkerArgument {
  std::string name;
  ArgKind kind = ArgKind::buffer;
  // float32, float16, bfloat16 (correctness.h), float64, int8 ... int64, uint8 ... uint64
  std::string elem = "float32";
  int64_t elements = 0;
  ArgInit init = ArgInit::seeded;
  bool is_output = false;       // back to its initial bytes before the checked launch; compared
  bool reset_each_run = false;  // back to its initial bytes before every timed run too
  double tolerance = 0;         // outputs: the largest accepted error (correctness.h)

  int64_t bytes() const;  // elements times the element's width
};

// How the worker gets the right answer, once per task.
enum class ReferenceKind {
  none,      // outputs are not checked
  host,      // the template's CPU reference: the outputs' expected values come in the blob
  file,      // a spec's expected-output file: the same, named apart in replies
  baseline,  // the task's baseline (cuBLAS) computes them on the GPU
  kernel     // the reference kernel (its cubin in the blob) computes them at setup
};

// The task a worker sets up once and measures candidates against. Its blob is, in order: the
// initial bytes of every ArgInit::blob argument; with a host or file reference, the expected
// values of every output as float32 (whatever its element type); with a kernel reference, the
// reference kernel's cubin.
struct WorkerTask {
  int device = 0;
  uint64_t seed = 0;  // seeded arguments are input_values(seed, argument index, ...)
  std::vector<WorkerArgument> arguments;
  ReferenceKind reference = ReferenceKind::none;
  // The reference kernel (ReferenceKind::kernel): its lowered name, launch, the argument each
  // of its parameters takes, and its cubin's size.
  std::string reference_kernel;
  LaunchSpec reference_launch;
  std::vector<int> reference_args;
  int64_t reference_cubin_bytes = 0;
  // The vendor-library computation of the task (a template's declaration): timed as the
  // baseline, and the reference where `reference` says so. A convolution's cuDNN output is
  // checked against the host reference first and then replaces it.
  BaselineSpec baseline;
  TimingOptions timing;

  int64_t blob_argument_bytes() const;  // the ArgInit::blob arguments' bytes
  int64_t expected_bytes() const;       // 4 bytes per output element with a host or file reference
  int64_t blob_bytes() const;           // all three sections
};

// One candidate. `what` selects the kernel or, for baselines, the library call timed with the
// same harness.
enum class MeasureWhat { kernel, baseline };

struct MeasureRequest {
  uint64_t id = 0;  // echoed in the reply
  MeasureWhat what = MeasureWhat::kernel;
  std::string kernel_name;
  LaunchSpec launch;
  std::vector<int> args;    // per kernel parameter, the task argument it takes
  // Per kernel parameter (empty: none is): a TMA tensor map over argument args[i], which the
  // worker encodes for that buffer's device address and passes in place of the pointer.
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
// task_from_frame also refuses a blob whose size is not task.blob_bytes() and an
// argument whose element type is unknown (or not floating where it is seeded).
Frame task_frame(const WorkerTask& task, std::vector<char> blob);
WorkerTask task_from_frame(const Frame& frame);
Frame measure_frame(const MeasureRequest& request);
MeasureRequest measure_request_from_frame(Frame frame);
Frame reply_frame(const MeasureReply& reply);
MeasureReply reply_from_frame(const Frame& frame);

}  // namespace cutune
