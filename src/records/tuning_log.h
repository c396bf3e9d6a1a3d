#pragma once
// The tuning log: a text file of records, one encoded Record a line (see record.h), appended in
// the order measurements finish. It is the system's memory (resume, transfer learning, export,
// benchmarks) and must never lose a record:
//
//   - Each record reaches the OS with one write(2) of the whole line, "\n" included, on a file
//     opened with O_APPEND, before append() returns. A process killed at any moment (SIGKILL)
//     therefore loses nothing already appended, and lines from several writers never
//     interleave. Surviving a crash of the machine itself needs fsync (LogWriterOptions).
//   - The only damage a killed writer can leave is a partial last line without its newline.
//     Readers tolerate it with a warning; a writer opening such a log repairs it first.
//
// Several LogWriters (threads or processes) may append to one log at once. Each holds a shared
// flock(2) on the file while open; repair needs the exclusive lock, so a log is only repaired
// when no other writer has it open (a partial line seen while another writer is live is most
// likely that writer's line in flight, and is left alone).

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/records/record.h"

namespace cutune {

struct LogWriterOptions {
  // fsync(2) after every this many appended records; 0 = never between records.
  int fsync_every = 0;
  // fsync(2) when the writer is closed or destroyed.
  bool fsync_on_close = true;
  // Hold an exclusive flock(2) while open, so that a second writer (LogWriter, exclusive or
  // not) is refused with a RecordError instead of interleaving its run with this one: what a
  // tuning run wants, since two runs of one task would measure the same configurations.
  bool exclusive = false;
};

// Appends records to a log file. Move-only; the file is closed (and synced, if asked) on
// destruction. Not thread-safe: share a log between threads by giving each its own writer.
class LogWriter {
 public:
  // Opens `path` for append, creating it (mode 0644) if absent. If the file ends in a partial
  // line, it is repaired: a line that decodes as a record gets its missing newline; anything
  // else is cut off (the file is truncated after its last complete line). Each repair leaves a
  // message in warnings(). A partial line that does not even start like a record is never cut:
  // RecordError, as when the file cannot be opened or repaired, is not a regular file (a
  // directory, FIFO or device), is a symbolic link (never followed), or is held
  // by an exclusive writer (or, with options.exclusive, by any other writer).
  explicit LogWriter(std::filesystem::path path, LogWriterOptions options = {});
  ~LogWriter();
  LogWriter(LogWriter&& other) noexcept;
  LogWriter& operator=(LogWriter&& other) noexcept;
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Encodes and writes one line. An empty timestamp is filled with utc_timestamp_now().
  // std::system_error if the OS refuses the write (disk full, I/O error); the file then holds
  // either the whole line or at most a partial last line that the next writer repairs.
  void append(Record record);
  // Forces everything appended so far to stable storage.
  void sync();
  // Syncs (if fsync_on_close) and closes; append() afterwards is a bug. Idempotent.
  void close();

  bool is_open() const { return fd_ >= 0; }
  const std::filesystem::path& path() const { return path_; }
  int64_t appended() const { return appended_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  void repair_partial_last_line();

  std::filesystem::path path_;
  LogWriterOptions options_;
  int fd_ = -1;
  int64_t appended_ = 0;
  int64_t unsynced_ = 0;
  std::vector<std::string> warnings_;
};

struct LogReadOptions {
  // Skip malformed lines with a warning instead of throwing.
  bool lenient = false;
};

struct LogReadResult {
  std::vector<Record> records;        // in file order
  std::vector<std::string> warnings;  // one line each, "path:line: what"
};

// Reads a whole log. Blank lines are skipped. A last line without its newline that does not
// decode is a write cut short: dropped with a warning. Any other line that does not decode is
// a RecordError "path:line: reason" unless options.lenient, which skips it with a warning.
// RecordError if the file cannot be read.
LogReadResult read_log(const std::filesystem::path& path, const LogReadOptions& options = {});

// Records grouped by task, each group in input order.
std::map<TaskKey, std::vector<Record>> group_by_task(const std::vector<Record>& records);

// For each task, its k fastest distinct configurations among ok records with times, by median
// time (a configuration measured more than once counts once, with its best median). Output is
// grouped by task in TaskKey order, fastest first within a task; ties keep input order.
// Where a task has ok `remeasure` records, only those are ranked (the end-of-run
// re-measurement picks the winner).
// k <= 0 gives nothing.
std::vector<Record> best_records(const std::vector<Record>& records, int k);

// What `bench --log` times: the fastest ok record (best_records' rule) of the task named by
// op, shape and template whose device is `device`, or of any device when `any_device`.
struct DeviceBest {
  std::optional<Record> record;
  std::set<std::string> other_devices;  // devices of the task's ok records that were not used
};
DeviceBest best_record_on_device(const std::vector<Record>& records, const std::string& op,
                                 const std::vector<int64_t>& shape,
                                 const std::string& template_name, const std::string& device,
                                 bool any_device);

// The configuration indices of `task` that have a record of any status (and kind): what a resumed run
// must not measure again.
std::set<uint64_t> measured_indices(const std::vector<Record>& records, const TaskKey& task);

// Concatenates record lists, drops records whose (task, config index, timestamp) was already
// seen, and orders the rest by timestamp (stable: ties keep input order).
std::vector<Record> merge_records(const std::vector<std::vector<Record>>& inputs);

struct MergeResult {
  int64_t records_read = 0;
  int64_t duplicates_dropped = 0;
  int64_t records_written = 0;
  std::vector<std::string> warnings;  // from reading the inputs
};

// Reads every input (strictly, as read_log with default options), merges them as
// merge_records does and writes the result to `output`, replacing it. The output is written
// to a temporary file beside it and renamed into place, so it is never half-written and may
// also be one of the inputs; only a regular file or a symbolic link (the link itself, never
// what it points to) is replaced: a directory, FIFO or device is refused
// (src/base/output_file.h). RecordError on unreadable or malformed input, or if the output
// cannot be written.
MergeResult merge_logs(const std::vector<std::filesystem::path>& inputs,
                       const std::filesystem::path& output);

}  // namespace cutune
