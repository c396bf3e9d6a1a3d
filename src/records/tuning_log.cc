#include "src/records/tuning_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "src/base/output_file.h"

namespace cutune {
namespace {

// Every line this library writes starts so; a partial line that does not is not ours to cut.
constexpr std::string_view kLinePrefix = R"({"v":)";

std::string errno_text() { return std::strerror(errno); }

[[noreturn]] void throw_system(std::string_view what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(),
                          fmt::format("{} '{}'", what, path.string()));
}

void write_all(int fd, std::string_view bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_system("cannot append to log", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads backwards from `end` to the byte after the last '\n' (or to 0); returns that offset.
off_t start_of_last_line(int fd, off_t end, const std::filesystem::path& path) {
  constexpr off_t kChunk = 1 << 16;
  std::string buffer;
  off_t pos = end;
  while (pos > 0) {
    const off_t len = std::min(kChunk, pos);
    buffer.resize(static_cast<size_t>(len));
    if (::pread(fd, buffer.data(), buffer.size(), pos - len) != len) {
      throw RecordError(fmt::format("cannot read log '{}': {}", path.string(), errno_text()));
    }
    const size_t newline = buffer.rfind('\n');
    if (newline != std::string::npos) return pos - len + static_cast<off_t>(newline) + 1;
    pos -= len;
  }
  return 0;
}

// Timestamps compare as "YYYY-MM-DDTHH:MM:SS" then the fraction of a second, so that "...:00Z"
// and "...:00.500Z" order correctly although '.' sorts before 'Z'.
std::string timestamp_sort_key(const std::string& timestamp) {
  if (!is_valid_timestamp(timestamp)) return timestamp;
  std::string key = timestamp.substr(0, 19);
  std::string fraction = timestamp.size() > 20 ? timestamp.substr(20, timestamp.size() - 21) : "";
  fraction.resize(9, '0');
  return key + fraction;
}

}  // namespace

LogWriter::LogWriter(std::filesystem::path path, LogWriterOptions options)
    : path_(std::move(path)), options_(options) {
  try {
    check_output({.path = path_, .flag = "log"}, OutputMode::append);
  } catch (const UserError& e) {
    throw RecordError(e.what());
  }
  // O_NOFOLLOW: a link that appeared since the check is refused (ELOOP), not followed.
  fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    throw RecordError(
        fmt::format("cannot open log '{}' for append: {}", path_.string(), errno_text()));
  }
  const auto busy = [this] {
    return RecordError(fmt::format(
        "log '{}' is being written by another cutune run; wait for it or name another log",
        path_.string()));
  };
  try {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      repair_partial_last_line();
      // An exclusive writer keeps the lock it has; the others share theirs.
      if (!options_.exclusive) ::flock(fd_, LOCK_SH);
    } else if (errno == EWOULDBLOCK) {
      if (options_.exclusive) throw busy();
      // Shared writers never wait long on an exclusive one: that one is a tuning run in
      // progress. Another shared writer holds the exclusive lock only for the moment its
      // repair check takes (several tasks of one run open the log at once), so try a while.
      bool shared = false;
      for (int attempt = 0; attempt < 200 && !shared; ++attempt) {
        shared = ::flock(fd_, LOCK_SH | LOCK_NB) == 0;
        if (!shared) ::usleep(1000);
      }
      if (!shared) throw busy();
      struct stat st {};
      char last = '\n';
      if (::fstat(fd_, &st) == 0 && st.st_size > 0 && ::pread(fd_, &last, 1, st.st_size - 1) != 1) {
        last = '\n';
      }
      if (last != '\n') {
        warnings_.push_back(fmt::format(
            "{}: ends in a partial line, left alone because another writer has the log open",
            path_.string()));
      }
    } else {
      // No locks on this file system: nothing tells us about other writers, so repair.
      repair_partial_last_line();
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

LogWriter::~LogWriter() {
  try {
    close();
  } catch (...) {
    // A destructor must not throw; every line already reached the OS in append().
  }
}

LogWriter::LogWriter(LogWriter&& other) noexcept
    : path_(std::move(other.path_)),
      options_(other.options_),
      fd_(std::exchange(other.fd_, -1)),
      appended_(other.appended_),
      unsynced_(other.unsynced_),
      warnings_(std::move(other.warnings_)) {}

LogWriter& LogWriter::operator=(LogWriter&& other) noexcept {
  if (this != &other) {
    try {
      close();
    } catch (...) {
    }
    path_ = std::move(other.path_);
    options_ = other.options_;
    fd_ = std::exchange(other.fd_, -1);
    appended_ = other.appended_;
    unsynced_ = other.unsynced_;
    warnings_ = std::move(other.warnings_);
  }
  return *this;
}

void LogWriter::repair_partial_last_line() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw_system("cannot stat log", path_);
  const off_t size = st.st_size;
  if (size == 0) return;
  char last = 0;
  if (::pread(fd_, &last, 1, size - 1) != 1) {
    throw RecordError(fmt::format("cannot read log '{}': {}", path_.string(), errno_text()));
  }
  if (last == '\n') return;

  const off_t start = start_of_last_line(fd_, size, path_);
  std::string tail(static_cast<size_t>(size - start), '\0');
  if (::pread(fd_, tail.data(), tail.size(), start) != static_cast<ssize_t>(tail.size())) {
    throw RecordError(fmt::format("cannot read log '{}': {}", path_.string(), errno_text()));
  }
  try {
    decode_record(tail);
    write_all(fd_, "\n", path_);
    warnings_.push_back(
        fmt::format("{}: the last record had no newline; added one", path_.string()));
    return;
  } catch (const RecordError&) {
  }
  const std::string_view head = std::string_view(tail).substr(0, kLinePrefix.size());
  if (kLinePrefix.substr(0, head.size()) != head) {
    throw RecordError(fmt::format(
        "'{}' ends in a partial line that is not a record; refusing to cut it (not a tuning log?)",
        path_.string()));
  }
  if (::ftruncate(fd_, start) != 0) throw_system("cannot repair log", path_);
  warnings_.push_back(fmt::format(
      "{}: discarded a partial last line ({} bytes at offset {}) left by an interrupted write",
      path_.string(), tail.size(), start));
}

void LogWriter::append(Record record) {
  if (fd_ < 0) throw std::logic_error("internal error: LogWriter::append after close");
  if (record.timestamp.empty()) record.timestamp = utc_timestamp_now();
  std::string line = encode_record(record);
  line += '\n';
  write_all(fd_, line, path_);
  ++appended_;
  ++unsynced_;
  if (options_.fsync_every > 0 && unsynced_ >= options_.fsync_every) sync();
}

void LogWriter::sync() {
  if (fd_ < 0 || unsynced_ == 0) return;
  if (::fsync(fd_) != 0) throw_system("cannot sync log", path_);
  unsynced_ = 0;
}

void LogWriter::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  try {
    if (options_.fsync_on_close) sync();
  } catch (...) {
    fd_ = -1;
    ::close(fd);
    throw;
  }
  fd_ = -1;
  ::close(fd);  // also drops the flock
}

LogReadResult read_log(const std::filesystem::path& path, const LogReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordError(fmt::format("cannot read log '{}': {}", path.string(), errno_text()));
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw RecordError(fmt::format("cannot read log '{}': {}", path.string(), errno_text()));
  }

  LogReadResult out;
  size_t pos = 0;
  int64_t line_number = 0;
  while (pos < content.size()) {
    ++line_number;
    const size_t newline = content.find('\n', pos);
    const bool complete = newline != std::string::npos;
    const size_t end = complete ? newline : content.size();
    std::string_view line(content.data() + pos, end - pos);
    pos = complete ? newline + 1 : content.size();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    try {
      out.records.push_back(decode_record(line));
    } catch (const RecordError& e) {
      if (!complete) {
        out.warnings.push_back(fmt::format(
            "{}:{}: ignored a partial last line ({} bytes, no newline) left by an interrupted "
            "write",
            path.string(), line_number, line.size()));
      } else if (options.lenient) {
        out.warnings.push_back(fmt::format("{}:{}: skipped a malformed line: {}", path.string(),
                                           line_number, e.what()));
      } else {
        throw RecordError(fmt::format("{}:{}: {}", path.string(), line_number, e.what()));
      }
    }
  }
  return out;
}

std::map<TaskKey, std::vector<Record>> group_by_task(const std::vector<Record>& records) {
  std::map<TaskKey, std::vector<Record>> groups;
  for (const Record& record : records) groups[record.task].push_back(record);
  return groups;
}

std::vector<Record> best_records(const std::vector<Record>& records, int k) {
  std::vector<Record> out;
  if (k <= 0) return out;
  // A task's end-of-run re-measurement (more repeats, interleaved) decides its winners: where
  // it exists, the trials' first, noisier times are not compared with it.
  std::set<TaskKey> remeasured;
  for (const Record& record : records)
    if (record.kind == RecordKind::remeasure && record.result.ok() &&
        !record.result.times_s.empty())
      remeasured.insert(record.task);
  // Per task, the fastest record of each configuration, in order of first appearance.
  std::map<TaskKey, std::vector<std::pair<double, const Record*>>> candidates;
  std::map<TaskKey, std::unordered_map<uint64_t, size_t>> slot;
  for (const Record& record : records) {
    if (!record.result.ok() || record.result.times_s.empty()) continue;
    if (record.kind != RecordKind::remeasure && remeasured.count(record.task)) continue;
    const double median = record.result.median_s();
    auto& list = candidates[record.task];
    auto [it, inserted] = slot[record.task].try_emplace(record.config_index, list.size());
    if (inserted) {
      list.emplace_back(median, &record);
    } else if (median < list[it->second].first) {
      list[it->second] = {median, &record};
    }
  }
  for (auto& [task, list] : candidates) {
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    const size_t n = std::min(list.size(), static_cast<size_t>(k));
    for (size_t i = 0; i < n; ++i) out.push_back(*list[i].second);
  }
  return out;
}

DeviceBest best_record_on_device(const std::vector<Record>& records, const std::string& op,
                                 const std::vector<int64_t>& shape,
                                 const std::string& template_name, const std::string& device,
                                 bool any_device) {
  DeviceBest out;
  std::vector<Record> mine;
  for (const Record& r : records) {
    if (r.task.op != op || r.task.shape != shape || r.task.template_name != template_name)
      continue;
    if (any_device || r.task.device_name == device) {
      mine.push_back(r);
    } else if (r.result.ok()) {
      out.other_devices.insert(r.task.device_name);
    }
  }
  // Every device's tasks are ranked apart; with any_device the fastest of all wins.
  std::vector<Record> best = best_records(mine, 1);
  for (Record& r : best)
    if (!out.record || r.result.median_s() < out.record->result.median_s()) out.record = r;
  return out;
}

std::set<uint64_t> measured_indices(const std::vector<Record>& records, const TaskKey& task) {
  std::set<uint64_t> indices;
  for (const Record& record : records) {
    if (record.task == task) indices.insert(record.config_index);
  }
  return indices;
}

std::vector<Record> merge_records(const std::vector<std::vector<Record>>& inputs) {
  std::set<std::tuple<TaskKey, uint64_t, std::string>> seen;
  std::vector<std::pair<std::string, const Record*>> kept;
  for (const auto& input : inputs) {
    for (const Record& record : input) {
      if (seen.emplace(record.task, record.config_index, record.timestamp).second) {
        kept.emplace_back(timestamp_sort_key(record.timestamp), &record);
      }
    }
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Record> out;
  out.reserve(kept.size());
  for (const auto& [key, record] : kept) out.push_back(*record);
  return out;
}

MergeResult merge_logs(const std::vector<std::filesystem::path>& inputs,
                       const std::filesystem::path& output) {
  MergeResult result;
  std::vector<std::vector<Record>> logs;
  for (const auto& input : inputs) {
    LogReadResult read = read_log(input);
    result.records_read += static_cast<int64_t>(read.records.size());
    for (auto& warning : read.warnings) result.warnings.push_back(std::move(warning));
    logs.push_back(std::move(read.records));
  }
  const std::vector<Record> merged = merge_records(logs);
  result.duplicates_dropped = result.records_read - static_cast<int64_t>(merged.size());

  try {
    AtomicOutput out({.path = output, .flag = "merged log", .force = true});
    LogWriter writer(out.temp_path(), LogWriterOptions{.fsync_every = 0, .fsync_on_close = true});
    for (const Record& record : merged) writer.append(record);
    writer.close();
    out.commit();
  } catch (const std::system_error& e) {
    throw RecordError(
        fmt::format("cannot write merged log '{}': {}", output.string(), e.code().message()));
  } catch (const RecordError&) {
    throw;
  } catch (const UserError& e) {
    throw RecordError(e.what());
  }
  result.records_written = static_cast<int64_t>(merged.size());
  return result;
}

}  // namespace cutune
