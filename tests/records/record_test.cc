#include "src/records/record.h"

#include <unordered_set>

#include <catch2/catch.hpp>

#include "tests/records/record_fixtures.h"

namespace cutune {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using testing::gemm_task;
using testing::make_record;

// A well-formed line to damage one field at a time.
nlohmann::json good_json() {
  return nlohmann::json::parse(encode_record(make_record(gemm_task(), 123, {1e-3, 2e-3})));
}

std::string decode_error(const std::string& line) {
  try {
    decode_record(line);
  } catch (const RecordError& e) {
    return e.what();
  }
  FAIL("decode_record accepted: " << line);
  return "";
}

TEST_CASE("a record encodes as one line in the documented layout", "[records]") {
  Record r = make_record(gemm_task(), 123, {1.5e-3, 1.25e-3});
  const std::string line = encode_record(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK_THAT(line, StartsWith(R"({"v":1,"task":{"op":"gemm","shape":[1024,1024,1024],)"
                              R"("dtype":"float32","arch":"sm_90","device":"NVIDIA H200",)"
                              R"("template":"gemm_nn"},"config":{"index":123,"knobs":)"));
  CHECK_THAT(line, Contains(R"("result":{"status":"ok","times":[0.0015,0.00125],"compile_s":0.25,)"
                            R"("timer":"cupti","error":""},"time":"2026-11-30T09:00:00Z"})"));
  CHECK(decode_record(line) == r);
}

TEST_CASE("records of every status round-trip exactly", "[records]") {
  for (MeasureStatus s : {MeasureStatus::ok, MeasureStatus::invalid, MeasureStatus::compile_error,
                          MeasureStatus::launch_error, MeasureStatus::runtime_error,
                          MeasureStatus::timeout, MeasureStatus::wrong_answer}) {
    Record r = make_record(gemm_task(512), 7, {}, s, "2026-01-02T03:04:05.678Z");
    if (s == MeasureStatus::wrong_answer) {
      r.result.times_s = {0.1 / 3, 2.0 / 3};
      r.result.max_rel_error = 0.125;
      r.result.error = "line 1\nline 2 \"quoted\"";
    }
    if (s == MeasureStatus::ok) {
      r.result.times_s = {1e-9, 0.1 + 0.2};
      r.result.timer = TimerKind::cuda_event;
      r.result.max_rel_error = 0;
      r.result.details.compile.registers = 96;
      r.result.details.gpu.throttled = false;
      r.result.details.other = {{"clock_mhz", 1980.5}};
    }
    const std::string line = encode_record(r);
    INFO(line);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(decode_record(line) == r);
  }
}

TEST_CASE("optional fields take their defaults and unknown fields are ignored", "[records]") {
  const Record r = decode_record(
      R"({"v":1,"task":{"op":"conv2d","shape":[1,64,56,56],"arch":"sm_80","device":"A100",)"
      R"("template":"conv_direct"},"config":{"index":0},"result":{"status":"timeout",)"
      R"("times":[]},"time":"2026-11-30T09:00:00Z","future_field":[1,2]})");
  CHECK(r.task.dtype == "float32");
  CHECK(r.knobs == nlohmann::json::object());
  CHECK(r.result.status == MeasureStatus::timeout);
  CHECK(r.result.timer == TimerKind::none);
  CHECK(r.result.compile_s == 0);
  CHECK(r.result.max_rel_error == -1);
  CHECK(r.result.details.empty());
}

TEST_CASE("malformed lines are RecordErrors with a one-line reason", "[records]") {
  CHECK_THAT(decode_error("not json at all"), Contains("not valid JSON"));
  CHECK_THAT(decode_error(R"({"v":1,"task":)"), Contains("not valid JSON"));
  CHECK_THAT(decode_error("[1,2,3]"), Contains("expected a JSON object, got array"));

  auto damaged = [](auto edit) {
    nlohmann::json j = good_json();
    edit(j);
    return decode_error(j.dump());
  };
  CHECK(damaged([](auto& j) { j.erase("task"); }) == "record: missing field 'task'");
  CHECK(damaged([](auto& j) { j["task"].erase("arch"); }) == "record: missing field 'task.arch'");
  CHECK(damaged([](auto& j) { j["result"]["status"] = "fast"; }) ==
        "record: unknown status 'fast' in 'result.status' (expected one of: ok, invalid, "
        "compile_error, launch_error, runtime_error, timeout, wrong_answer)");
  CHECK_THAT(damaged([](auto& j) { j["result"]["timer"] = "stopwatch"; }),
             Contains("unknown timer 'stopwatch'"));
  CHECK(damaged([](auto& j) { j["v"] = 2; }) ==
        "record: unsupported version 2 (this build reads version 1)");
  CHECK(damaged([](auto& j) { j.erase("v"); }) == "record: missing field 'v'");
  CHECK(damaged([](auto& j) { j["task"]["shape"] = "1024"; }) ==
        "record: field 'task.shape' must be an array, got string");
  CHECK(damaged([](auto& j) { j["task"]["shape"][1] = 1.5; }) ==
        "record: field 'task.shape[1]' must be an integer, got number");
  CHECK(damaged([](auto& j) { j["config"]["index"] = -3; }) ==
        "record: field 'config.index' must be a non-negative integer, got integer");
  CHECK(damaged([](auto& j) { j["config"]["knobs"] = 5; }) ==
        "record: field 'config.knobs' must be an object, got integer");
  CHECK(damaged([](auto& j) { j["result"] = "ok"; }) ==
        "record: field 'result' must be an object, got string");
  CHECK(damaged([](auto& j) { j["result"]["times"][0] = "fast"; }) ==
        "record: field 'result.times[0]' must be a number, got string");
  CHECK(damaged([](auto& j) { j["result"]["times"][0] = 0; }) ==
        "record: field 'result.times[0]' must be a positive number of seconds, got 0");
  CHECK(damaged([](auto& j) { j["result"]["times"][0] = -1e-3; }) ==
        "record: field 'result.times[0]' must be a positive number of seconds, got -0.001");
  CHECK_THAT(damaged([](auto& j) { j["time"] = "yesterday"; }),
             Contains("field 'time' must be an ISO 8601 UTC time"));
  for (const std::string& message :
       {decode_error("{"), damaged([](auto& j) { j.erase("result"); })}) {
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("encoding a record that breaks its invariants is an internal error", "[records]") {
  Record r = make_record(gemm_task(), 1, {1e-3});
  r.result.times_s.push_back(std::nan(""));
  CHECK_THROWS_AS(encode_record(r), std::logic_error);
  r = make_record(gemm_task(), 1, {1e-3});
  r.timestamp = "";
  CHECK_THROWS_AS(encode_record(r), std::logic_error);
}

TEST_CASE("text that is not UTF-8 still encodes", "[records]") {
  Record r = make_record(gemm_task(), 1, {}, MeasureStatus::compile_error);
  r.result.error = "ptxas: bad byte \xff here";
  const Record back = decode_record(encode_record(r));
  CHECK_THAT(back.result.error, StartsWith("ptxas: bad byte "));
}

TEST_CASE("timestamps", "[records]") {
  CHECK(is_valid_timestamp(utc_timestamp_now()));
  CHECK(utc_timestamp_now().size() == 24);
  CHECK(is_valid_timestamp("2026-11-30T09:00:00Z"));
  CHECK(is_valid_timestamp("2026-11-30T09:00:00.123456Z"));
  CHECK_FALSE(is_valid_timestamp("2026-11-30 09:00:00Z"));
  CHECK_FALSE(is_valid_timestamp("2026-11-30T09:00:00"));
  CHECK_FALSE(is_valid_timestamp("2026-13-30T09:00:00Z"));
  CHECK_FALSE(is_valid_timestamp("2026-11-30T09:00:00.Z"));
}

TEST_CASE("task keys compare, hash and print", "[records]") {
  const TaskKey a = gemm_task(512), b = gemm_task(1024);
  CHECK(a == gemm_task(512));
  CHECK(a != b);
  CHECK((a < b) != (b < a));
  std::unordered_set<TaskKey> set{a, b, gemm_task(512)};
  CHECK(set.size() == 2);
  CHECK(b.to_string() == "gemm[1024x1024x1024 float32] gemm_nn sm_90 (NVIDIA H200)");
}

}  // namespace
}  // namespace cutune
