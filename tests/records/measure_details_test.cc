#include "src/records/measure_details.h"

#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "src/records/record.h"
#include "src/records/tuning_log.h"
#include "tests/records/record_fixtures.h"

namespace cutune {
namespace {

using Catch::Matchers::Contains;
using testing::gemm_task;
using testing::make_record;
using testing::ScratchDir;
using testing::write_file;

// A record as the writer before typed details wrote it: every key it knew in result.extra, in
// the sorted order it wrote them (gpu_before a failed NVML sample, gpu_after a good one), plus
// keys no build knows, at the top and inside gpu_after.
const std::string kExtra =
    R"({"baseline":"cudnn","baseline_algo":"IMPLICIT_PRECOMP_GEMM","baseline_max_rel_error":0.002,)"
    R"("baseline_median_ci_s":[0.0012,0.0013],"baseline_runs":40,"baseline_s":0.00125,)"
    R"("baseline_spec":{"kind":"none"},"baseline_timer":"cupti","clock_mhz":1980.5,)"
    R"("compiled_ahead":true,"cubin_bytes":12345,"cublas_algo":"GemmEx default",)"
    R"("cublas_time_s":0.0015,"cublaslt_algos":8,"cublaslt_note":"heuristic only",)"
    R"("cudnn_graph_note":"no engine","cudnn_graph_plans":3,"cudnn_note":"cuDNN unavailable: x",)"
    R"("cudnn_reference_algo":"IMPLICIT_GEMM","cudnn_vs_cpu_max_rel_error":0.003,"device":0,)"
    R"("early_stopped":true,"emulated":false,"emulator_status":"ok",)"
    R"("gpu_after":{"max_sm_clock_mhz":1980,"power_w":250,"sm_clock_mhz":1755,)"
    R"("temperature_c":61,"throttle_reasons":0,"throttled":false},)"
    R"("gpu_before":{"available":false,"error":"NVML missing"},"l2_flush_bytes":104857600,)"
    R"("median_ci_s":[0.0011,0.0014],"mixed_timers":true,)"
    R"("phase_s":{"check":0.01,"load":0.002,"run":0.25,"sample_after":0.001,)"
    R"("sample_before":0.001,"timing":0.2},"pid":4242,"reference":"cudnn","registers":96,)"
    R"("rel_ci":-1.0,"remeasure_rounds":2,"round_medians_s":[0.0012,0.00125,0.0013],"rounds":3,)"
    R"("setup_s":{"context":0.5,"total":1.5},"setups":1,"spill_bytes":0,"static_smem_bytes":16384,)"
    R"("stop":"stable","task":{"arguments":[{"bytes":4096,"name":"C"}],"blob_bytes":8192},)"
    R"("throttled":false,"time_is":"CPU emulator wall time, not GPU time",)"
    R"("timer_note":"fell back to CUDA events: lost records","tolerance":0.25,)"
    R"("zz_future":{"nested":[1,{"a":null}]}})";

std::string line_with_extra(const std::string& extra) {
  return R"({"v":1,"task":{"op":"gemm","shape":[1024,1024,1024],"dtype":"float32",)"
         R"("arch":"sm_90","device":"NVIDIA H200","template":"gemm_nn"},)"
         R"("config":{"index":7,"knobs":{"tile":32}},"result":{"status":"ok",)"
         R"("times":[0.00125],"compile_s":0.25,"timer":"cupti","error":"","extra":)" +
         extra + R"(},"time":"2026-11-30T09:00:00Z"})";
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

TEST_CASE("an old record with every known key and unknown ones is written back byte for byte",
          "[records]") {
  const std::string line = line_with_extra(kExtra);
  // The old writer's way: extra held as nlohmann::json (keys sorted), copied into the record.
  nlohmann::ordered_json old = nlohmann::ordered_json::parse(line);
  old["result"]["extra"] = nlohmann::ordered_json(nlohmann::json::parse(kExtra));
  REQUIRE(old.dump() == line);
  const Record r = decode_record(line);
  CHECK(encode_record(r) == line);

  const MeasureDetails& d = r.result.details;
  CHECK(d.gpu.ordinal() == 0);
  REQUIRE(d.gpu.gpu_before);
  CHECK(d.gpu.gpu_before->available == false);
  CHECK(d.gpu.gpu_before->error == "NVML missing");
  REQUIRE(d.gpu.gpu_after);
  CHECK(d.gpu.gpu_after->sm_clock_mhz == 1755);
  CHECK(d.gpu.gpu_after->other == nlohmann::json{{"power_w", 250}});
  CHECK(d.gpu.throttled == false);
  CHECK(d.timing.stop == "stable");
  CHECK(d.timing.median_ci_s == SecondsInterval{0.0011, 0.0014});
  CHECK(d.timing.rel_ci == -1.0);
  CHECK(d.timing.l2_flush_bytes == 104857600);
  CHECK(d.timing.phase_s->at("timing") == 0.2);
  CHECK(d.timing.setup_s->at("total") == 1.5);
  CHECK(d.rounds.rounds == 3);
  CHECK(d.rounds.round_medians_s == std::vector<double>{0.0012, 0.00125, 0.0013});
  CHECK(d.rounds.mixed_timers == true);
  CHECK(d.rounds.remeasure_rounds == 2);
  CHECK(d.compile.registers == 96);
  CHECK(d.compile.cubin_bytes == 12345);
  CHECK(d.compile.compiled_ahead == true);
  CHECK(d.baseline.name == "cudnn");
  CHECK(d.baseline.baseline_s == 0.00125);
  CHECK(d.baseline.baseline_max_rel_error == 0.002);
  CHECK(d.baseline.reference == "cudnn");
  CHECK(d.baseline.cublaslt_algos == 8);
  CHECK(d.emulator.emulated == false);
  CHECK(d.emulator.tolerance == 0.25);
  CHECK(d.worker.pid == 4242);
  CHECK(d.worker.task->at("blob_bytes") == 8192);
  CHECK(d.other ==
        nlohmann::json{{"clock_mhz", 1980.5}, {"zz_future", {{"nested", {1, {{"a", nullptr}}}}}}});
  // And the typed form survives another trip unchanged.
  CHECK(decode_record(encode_record(r)) == r);
}

TEST_CASE("a rank's device name and a number that was not finite round-trip", "[records]") {
  const std::string line = line_with_extra(R"({"baseline_s":null,"device":"1:0"})");
  const Record r = decode_record(line);
  CHECK(encode_record(r) == line);
  CHECK(r.result.details.gpu.device == std::variant<int64_t, std::string>("1:0"));
  CHECK(!r.result.details.gpu.ordinal());
  CHECK(std::isnan(r.result.details.baseline.baseline_s.value()));
}

TEST_CASE("a record without extra, or with an empty one, has empty details", "[records]") {
  Record r = make_record(gemm_task(), 1, {1e-3});
  CHECK(r.result.details.empty());
  CHECK(encode_record(r).find("extra") == std::string::npos);
  // An empty object says nothing: it reads as no details, and is not written back.
  const Record empty = decode_record(line_with_extra("{}"));
  CHECK(empty.result.details.empty());
  CHECK(encode_record(empty).find("extra") == std::string::npos);
}

TEST_CASE("a known key of the wrong type is a one-line RecordError naming it", "[records]") {
  CHECK(decode_error(line_with_extra(R"({"rounds":"x"})")) ==
        "record: field 'result.extra.rounds' must be an integer, got string");
  CHECK(decode_error(line_with_extra(R"({"rounds":1.5})")) ==
        "record: field 'result.extra.rounds' must be an integer, got number");
  CHECK(decode_error(line_with_extra(R"({"throttled":1})")) ==
        "record: field 'result.extra.throttled' must be true or false, got integer");
  CHECK(decode_error(line_with_extra(R"({"median_ci_s":[1]})")) ==
        "record: field 'result.extra.median_ci_s' must be [lo, hi] in seconds, got array");
  CHECK(decode_error(line_with_extra(R"({"round_medians_s":[1,"x"]})")) ==
        "record: field 'result.extra.round_medians_s[1]' must be a number, got string");
  CHECK(decode_error(line_with_extra(R"({"gpu_before":{"throttled":"yes"}})")) ==
        "record: field 'result.extra.gpu_before.throttled' must be true or false, got string");
  CHECK(decode_error(line_with_extra(R"({"phase_s":{"run":"slow"}})")) ==
        "record: field 'result.extra.phase_s.run' must be a number, got string");
  CHECK(decode_error(line_with_extra(R"({"device":true})")) ==
        "record: field 'result.extra.device' must be an integer or a string, got boolean");
  CHECK(decode_error(line_with_extra("[1]")) ==
        "record: field 'result.extra' must be an object, got array");
}

TEST_CASE("a malformed extra in a log names the file and line", "[records]") {
  ScratchDir dir;
  const auto path = dir / "log.jsonl";
  const std::string good = encode_record(make_record(gemm_task(), 1, {1e-3})) + "\n";
  write_file(path, good + line_with_extra(R"({"rounds":"x"})") + "\n");
  try {
    read_log(path);
    FAIL("read_log accepted a malformed extra");
  } catch (const RecordError& e) {
    CHECK_THAT(e.what(), Contains("log.jsonl:2: record: field 'result.extra.rounds' must be an "
                                  "integer, got string"));
  }
  const LogReadResult lenient = read_log(path, LogReadOptions{.lenient = true});
  CHECK(lenient.records.size() == 1);
  CHECK(lenient.warnings.size() == 1);
}

TEST_CASE("merging details: what the newer sets wins, the rest stays", "[records]") {
  MeasureDetails older;
  older.compile.registers = 64;
  older.compile.compiled_ahead = true;
  older.gpu.device = int64_t(1);
  older.other = {{"a", 1}, {"b", 2}};
  MeasureDetails newer;
  newer.compile.registers = 96;
  newer.baseline.reference = "cpu";
  newer.other = {{"b", 3}};
  older.merge(newer);
  CHECK(older.compile.registers == 96);
  CHECK(older.compile.compiled_ahead == true);
  CHECK(older.gpu.ordinal() == 1);
  CHECK(older.baseline.reference == "cpu");
  CHECK(older.other == nlohmann::json{{"a", 1}, {"b", 3}});
  CHECK(to_json(MeasureDetails{}).is_null());
}

}  // namespace
}  // namespace cutune
