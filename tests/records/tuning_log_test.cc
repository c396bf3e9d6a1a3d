#include "src/records/tuning_log.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/records/record_fixtures.h"

namespace cutune {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using testing::gemm_task;
using testing::make_record;
using testing::read_file;
using testing::ScratchDir;
using testing::write_file;

std::vector<uint64_t> indices_of(const std::vector<Record>& records) {
  std::vector<uint64_t> out;
  for (const Record& r : records) out.push_back(r.config_index);
  return out;
}

std::vector<uint64_t> first_indices(size_t n) {
  std::vector<uint64_t> out(n);
  std::iota(out.begin(), out.end(), 0);
  return out;
}

size_t count_lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST_CASE("appended records read back in order, one line each", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  std::vector<Record> written;
  {
    LogWriter writer(path, LogWriterOptions{.fsync_every = 2});
    for (uint64_t i = 0; i < 5; ++i) {
      written.push_back(make_record(gemm_task(), i, {1e-3 * (i + 1)}));
      writer.append(written.back());
    }
    CHECK(writer.appended() == 5);
    CHECK(writer.warnings().empty());
  }
  const std::string text = read_file(path);
  CHECK(count_lines(text) == 5);
  CHECK(text.back() == '\n');

  const LogReadResult read = read_log(path);
  CHECK(read.records == written);
  CHECK(read.warnings.empty());
}

TEST_CASE("a writer appends to an existing log and stamps missing timestamps", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  { LogWriter(path).append(make_record(gemm_task(), 1, {1e-3})); }
  LogWriter writer(path);
  Record unstamped = make_record(gemm_task(), 2, {1e-3});
  unstamped.timestamp.clear();
  writer.append(unstamped);
  writer.close();
  CHECK_FALSE(writer.is_open());
  CHECK_THROWS_AS(writer.append(unstamped), std::logic_error);

  const auto records = read_log(path).records;
  REQUIRE(records.size() == 2);
  CHECK(records[0].config_index == 1);
  CHECK(is_valid_timestamp(records[1].timestamp));
}

TEST_CASE("a moved writer keeps the file and the moved-from one is closed", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  LogWriter a(path);
  a.append(make_record(gemm_task(), 1, {1e-3}));
  LogWriter b = std::move(a);
  CHECK_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  b.append(make_record(gemm_task(), 2, {1e-3}));
  LogWriter c(dir / "other.jsonl");
  c = std::move(b);
  c.append(make_record(gemm_task(), 3, {1e-3}));
  c.close();
  CHECK(indices_of(read_log(path).records) == std::vector<uint64_t>{1, 2, 3});
}

TEST_CASE("two writers open on one log both append whole lines", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  LogWriter a(path), b(path);
  for (uint64_t i = 0; i < 10; ++i) (i % 2 ? b : a).append(make_record(gemm_task(), i, {1e-3}));
  a.close();
  b.close();
  CHECK(read_log(path).records.size() == 10);
}

TEST_CASE("unopenable and unreadable logs are RecordErrors", "[records]") {
  ScratchDir dir;
  CHECK_THROWS_WITH(LogWriter(dir / "no/such/dir/log.jsonl"),
                    StartsWith("log ") && Contains("no such folder"));
  CHECK_THROWS_WITH(read_log(dir / "missing.jsonl"), StartsWith("cannot read log"));
}

TEST_CASE("a truncated last line is dropped with a warning", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  const std::string full = encode_record(make_record(gemm_task(), 1, {1e-3})) + "\n";
  const std::string partial = encode_record(make_record(gemm_task(), 2, {1e-3})).substr(0, 40);
  write_file(path, full + partial);

  const LogReadResult read = read_log(path);
  CHECK(indices_of(read.records) == std::vector<uint64_t>{1});
  REQUIRE(read.warnings.size() == 1);
  CHECK_THAT(read.warnings[0], Contains("log.jsonl:2: ignored a partial last line"));
}

TEST_CASE("a last record without its newline still counts", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  write_file(path, encode_record(make_record(gemm_task(), 1, {1e-3})));
  const LogReadResult read = read_log(path);
  CHECK(read.records.size() == 1);
  CHECK(read.warnings.empty());

  LogWriter writer(path);
  REQUIRE(writer.warnings().size() == 1);
  CHECK_THAT(writer.warnings()[0], Contains("no newline; added one"));
  writer.append(make_record(gemm_task(), 2, {1e-3}));
  writer.close();
  CHECK(indices_of(read_log(path).records) == std::vector<uint64_t>{1, 2});
}

TEST_CASE("a record with a zero time is refused at load with its line number", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  const std::string good = encode_record(make_record(gemm_task(), 1, {1e-3})) + "\n";
  std::string zero = good;
  zero.replace(zero.find("0.001"), 5, "0.0");
  write_file(path, good + zero);
  try {
    read_log(path);
    FAIL("read_log accepted a zero time");
  } catch (const RecordError& e) {
    CHECK_THAT(e.what(), Contains("log.jsonl:2: record: field 'result.times[0]' must be a "
                                  "positive number of seconds"));
  }
}

TEST_CASE("an exclusive writer keeps every other writer out", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  LogWriter first(path, {.exclusive = true});
  for (bool exclusive : {true, false}) {
    try {
      LogWriter second(path, {.exclusive = exclusive});
      FAIL("a second writer opened a log held exclusively");
    } catch (const RecordError& e) {
      CHECK_THAT(e.what(), Contains("is being written by another cutune run"));
    }
  }
  first.close();
  LogWriter after(path, {.exclusive = true});  // free again once the first is closed
  CHECK(after.is_open());
  // And an exclusive writer is refused while a shared one has the log open.
  after.close();
  LogWriter shared(path);
  CHECK_THROWS_AS(LogWriter(path, {.exclusive = true}), RecordError);
}

TEST_CASE("a malformed line in the middle names the file and line", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  const std::string good = encode_record(make_record(gemm_task(), 1, {1e-3})) + "\n";
  write_file(path, good + "\n" + "{\"v\":1}\n" + good);

  try {
    read_log(path);
    FAIL("read_log accepted a malformed line");
  } catch (const RecordError& e) {
    CHECK_THAT(e.what(), Contains("log.jsonl:3: record: missing field 'task'"));
  }

  const LogReadResult lenient = read_log(path, LogReadOptions{.lenient = true});
  CHECK(lenient.records.size() == 2);
  REQUIRE(lenient.warnings.size() == 1);
  CHECK_THAT(lenient.warnings[0], Contains("log.jsonl:3: skipped a malformed line"));
}

TEST_CASE("resuming cuts a partial last line and starts on a fresh line", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  const std::string full = encode_record(make_record(gemm_task(), 1, {1e-3})) + "\n";
  write_file(path, full + full.substr(0, 30));

  LogWriter writer(path);
  REQUIRE(writer.warnings().size() == 1);
  CHECK_THAT(writer.warnings()[0], Contains("discarded a partial last line (30 bytes"));
  writer.append(make_record(gemm_task(), 2, {1e-3}));
  writer.close();

  const LogReadResult read = read_log(path);
  CHECK(indices_of(read.records) == std::vector<uint64_t>{1, 2});
  CHECK(read.warnings.empty());
}

TEST_CASE("a file whose last line is not a record is never cut", "[records]") {
  ScratchDir dir;
  const auto path = dir / "notes.txt";
  write_file(path, "line one\nsomething precious");
  CHECK_THROWS_WITH(LogWriter(path), Contains("not a tuning log?"));
  CHECK(read_file(path) == "line one\nsomething precious");
}

TEST_CASE("a partial line is left alone while another writer has the log open", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  LogWriter live(path);
  write_file(path, R"({"v":1,"task")");
  LogWriter second(path);
  REQUIRE(second.warnings().size() == 1);
  CHECK_THAT(second.warnings()[0], Contains("left alone"));
  CHECK(read_file(path) == R"({"v":1,"task")");
}

// The child appends until it is killed; the parent kills it once some lines are on disk.
TEST_CASE("a writer killed with SIGKILL loses nothing it appended", "[records][kill]") {
  ScratchDir dir;
  const auto path = dir / "killed.jsonl";
  constexpr uint64_t kMaxRecords = 200000;
  const std::string stamp = "2026-11-30T09:00:00Z";

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      LogWriter writer(path);
      for (uint64_t i = 0; i < kMaxRecords; ++i) {
        writer.append(make_record(gemm_task(), i, {1e-3, 1e-3 + 1e-9 * i}));
      }
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }

  const size_t line_size = encode_record(make_record(gemm_task(), 0, {1e-3, 1e-3})).size() + 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto size_now = [&path] {
    std::error_code absent;
    const auto size = std::filesystem::file_size(path, absent);
    return absent ? 0 : size;
  };
  while (size_now() < 300 * line_size && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);

  const std::string text = read_file(path);
  const size_t complete = count_lines(text);
  REQUIRE(complete >= 100);  // real lines are a little longer than line_size
  REQUIRE(complete < kMaxRecords);

  // Every complete line parses, in the order appended, none missing; at most the last is partial.
  const LogReadResult before = read_log(path);
  CHECK(before.records.size() == complete);
  CHECK(before.warnings.size() == (text.back() == '\n' ? 0u : 1u));
  CHECK(indices_of(before.records) == first_indices(complete));

  // A kill between two bytes of one line is rare with whole-line writes; make one happen.
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << encode_record(make_record(gemm_task(), 999999, {1e-3})).substr(0, 57);
  }

  constexpr int kNew = 25;
  {
    LogWriter resumed(path);
    CHECK(resumed.warnings().size() == 1);
    for (int i = 0; i < kNew; ++i) resumed.append(make_record(gemm_task(), complete + i, {2e-3}));
  }
  const std::string after_text = read_file(path);
  CHECK(after_text.back() == '\n');
  CHECK(count_lines(after_text) == complete + kNew);
  const LogReadResult after = read_log(path);
  CHECK(after.warnings.empty());
  REQUIRE(after.records.size() == complete + kNew);
  CHECK(indices_of(after.records) == first_indices(complete + kNew));
}

TEST_CASE("best records per task rank ok measurements by median", "[records]") {
  const TaskKey small = gemm_task(256), large = gemm_task(4096);
  const std::vector<Record> records = {
      make_record(large, 1, {5e-3, 4e-3, 6e-3}),
      make_record(large, 2, {1e-3}, MeasureStatus::wrong_answer),
      make_record(large, 3, {3e-3}),
      make_record(large, 1, {2e-3, 2e-3}),  // re-measured faster: config 1 counts once
      make_record(large, 4, {}, MeasureStatus::compile_error),
      make_record(large, 5, {3e-3}),
      make_record(small, 9, {1e-4}),
      make_record(small, 8, {}, MeasureStatus::ok),  // ok without times cannot be ranked
  };

  const std::vector<Record> best = best_records(records, 2);
  REQUIRE(best.size() == 3);
  CHECK(best[0].task == small);
  CHECK(best[0].config_index == 9);
  CHECK(best[1].task == large);
  CHECK(best[1].config_index == 1);
  CHECK(best[1].result.median_s() == Approx(2e-3));
  CHECK(best[2].config_index == 3);  // tie with 5: input order
  CHECK(best_records(records, 0).empty());
  CHECK(best_records(records, 10).size() == 4);

  const auto groups = group_by_task(records);
  REQUIRE(groups.size() == 2);
  CHECK(groups.at(large).size() == 6);
  CHECK(indices_of(groups.at(small)) == std::vector<uint64_t>{9, 8});

  CHECK(measured_indices(records, large) == std::set<uint64_t>{1, 2, 3, 4, 5});
  CHECK(measured_indices(records, gemm_task(8)).empty());
}

TEST_CASE("merging drops duplicates and orders by time", "[records]") {
  ScratchDir dir;
  const TaskKey task = gemm_task();
  const Record r1 = make_record(task, 1, {1e-3}, MeasureStatus::ok, "2026-11-30T09:00:01Z");
  const Record r2 = make_record(task, 2, {1e-3}, MeasureStatus::ok, "2026-11-30T09:00:01.500Z");
  const Record r3 = make_record(task, 3, {1e-3}, MeasureStatus::ok, "2026-11-30T09:00:02Z");
  const Record r1_again = make_record(task, 1, {9e-3}, MeasureStatus::ok, "2026-11-30T09:00:03Z");
  const Record other_task =
      make_record(gemm_task(64), 1, {1e-3}, MeasureStatus::ok, "2026-11-30T09:00:01Z");

  const auto a = dir / "a.jsonl", b = dir / "b.jsonl";
  {
    LogWriter wa(a), wb(b);
    for (const Record& r : {r1, r3, r1_again}) wa.append(r);
    for (const Record& r : {r2, r1, other_task, r3}) wb.append(r);
  }
  const MergeResult merged = merge_logs({a, b}, a);  // the output may be an input
  CHECK(merged.records_read == 7);
  CHECK(merged.duplicates_dropped == 2);
  CHECK(merged.records_written == 5);

  const std::vector<Record> expected = {r1, other_task, r2, r3, r1_again};
  CHECK(read_log(a).records == expected);
  CHECK(merge_records({{r1, r3, r1_again}, {r2, r1, other_task, r3}}) == expected);
  for (const auto& entry : std::filesystem::directory_iterator(a.parent_path())) {
    CHECK_THAT(entry.path().filename().string(), !Contains(".tmp"));
  }
}

TEST_CASE("merging a malformed log writes nothing", "[records]") {
  ScratchDir dir;
  const auto good = dir / "good.jsonl", bad = dir / "bad.jsonl", out = dir / "out.jsonl";
  { LogWriter(good).append(make_record(gemm_task(), 1, {1e-3})); }
  write_file(bad, "garbage\n" + read_file(good));
  CHECK_THROWS_WITH(merge_logs({good, bad}, out), Contains("bad.jsonl:1: record: not valid JSON"));
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("a log or merged log that is a FIFO, a device or a symbolic link is refused",
          "[records]") {
  ScratchDir dir;
  const auto fifo = dir / "pipe", good = dir / "good.jsonl", link = dir / "link.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  { LogWriter(good).append(make_record(gemm_task(), 1, {1e-3})); }
  std::filesystem::create_symlink(good, link);
  const std::string lines = read_file(good);

  CHECK_THROWS_AS(LogWriter(fifo), RecordError);
  CHECK_THROWS_WITH(LogWriter(fifo), Contains("is a FIFO, not a regular file"));
  CHECK_THROWS_WITH(LogWriter(link), Contains("is a symbolic link to " + good.string()));
  CHECK_THROWS_WITH(merge_logs({good}, fifo), Contains("is a FIFO"));
  if (std::filesystem::is_character_file("/dev/null"))
    CHECK_THROWS_WITH(LogWriter("/dev/null"), Contains("is a character device"));
  CHECK(std::filesystem::is_fifo(std::filesystem::symlink_status(fifo)));
  CHECK(read_file(good) == lines);

  merge_logs({good}, link);  // replaces the link, not the file it names
  CHECK_FALSE(std::filesystem::is_symlink(link));
  CHECK(read_file(link) == lines);
  CHECK(read_file(good) == lines);
  for (const auto& entry : std::filesystem::directory_iterator(good.parent_path()))
    CHECK_THAT(entry.path().filename().string(), !Contains(".tmp"));
}

}  // namespace
}  // namespace cutune
