#include "src/runtime/driver_api.h"

#include <catch2/catch.hpp>

#include <string>

using namespace cutune;

TEST_CASE("driver absence is reported, never fatal", "[driver]") {
  const DriverApi* api = driver_api();
  if (api == nullptr) {
    const std::string reason = driver_unavailable_reason();
    CHECK_FALSE(reason.empty());
    CHECK(reason.find('\n') == std::string::npos);
    try {
      require_driver();
      FAIL("require_driver did not throw");
    } catch (const NoDeviceError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("no CUDA device found", 0) == 0);
      CHECK(what.find(reason) != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
  } else {
    CHECK(driver_unavailable_reason().empty());
    CHECK(&require_driver() == api);
    CHECK(api->device_count > 0);
    CHECK(api->driver_version > 0);
    CHECK(api->cuLaunchKernel != nullptr);
  }
  CHECK(driver_api() == api);
}
