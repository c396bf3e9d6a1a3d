#include "src/records/measure_result.h"

#include <cmath>

#include <catch2/catch.hpp>

namespace cutune {
namespace {

TEST_CASE("every status and timer name round-trips", "[records]") {
  for (MeasureStatus s : {MeasureStatus::ok, MeasureStatus::invalid, MeasureStatus::compile_error,
                          MeasureStatus::launch_error, MeasureStatus::runtime_error,
                          MeasureStatus::timeout, MeasureStatus::wrong_answer}) {
    CHECK(parse_measure_status(to_string(s)) == s);
  }
  for (TimerKind t :
       {TimerKind::none, TimerKind::cupti, TimerKind::cuda_event, TimerKind::replay}) {
    CHECK(parse_timer_kind(to_string(t)) == t);
  }
  CHECK(to_string(MeasureStatus::compile_error) == "compile_error");
  CHECK_FALSE(parse_measure_status("OK").has_value());
  CHECK_FALSE(parse_timer_kind("").has_value());
  CHECK(measure_status_names().find("wrong_answer") != std::string::npos);
}

TEST_CASE("median and mean of the repeats", "[records]") {
  MeasureResult r;
  CHECK(std::isinf(r.median_s()));
  CHECK(std::isinf(r.mean_s()));
  CHECK_FALSE(r.ok());
  r.status = MeasureStatus::ok;
  r.times_s = {3e-3, 1e-3, 2e-3};
  CHECK(r.ok());
  CHECK(r.median_s() == Approx(2e-3));
  CHECK(r.mean_s() == Approx(2e-3));
  r.times_s = {4e-3, 1e-3, 2e-3, 3e-3};
  CHECK(r.median_s() == Approx(2.5e-3));
  CHECK(r.times_s.front() == 4e-3);  // the repeats keep their measured order
}

}  // namespace
}  // namespace cutune
