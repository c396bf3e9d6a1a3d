#include "src/runtime/device.h"

#include <catch2/catch.hpp>

#include <stdexcept>

#include "src/runtime/driver_api.h"

using namespace cutune;

TEST_CASE("sm_90 limits are Hopper's documented ones", "[device]") {
  const DeviceInfo info = target_limits("sm_90");
  CHECK(info.arch() == "sm_90");
  CHECK(info.ordinal == -1);
  CHECK(info.max_threads_per_block == 1024);
  CHECK(info.max_shared_per_block == 48 * 1024);
  CHECK(info.max_shared_per_block_optin == 227 * 1024);
  CHECK(info.max_shared_per_sm == 228 * 1024);
  CHECK(info.regs_per_sm == 65536);
  CHECK(info.regs_per_block == 65536);
  CHECK(info.max_regs_per_thread == 255);
  CHECK(info.max_threads_per_sm == 2048);
  CHECK(info.max_blocks_per_sm == 32);
  CHECK(info.warp_size == 32);
  CHECK(info.sm_count > 0);
  CHECK(info.total_mem > 0);
  CHECK(target_limits("sm_90a").max_shared_per_block_optin == 227 * 1024);
}

TEST_CASE("every known arch has consistent limits", "[device]") {
  for (const std::string& arch : known_archs()) {
    INFO(arch);
    const DeviceInfo info = target_limits(arch);
    CHECK(info.arch() == arch);
    CHECK(info.max_shared_per_block_optin >= info.max_shared_per_block);
    CHECK(info.max_shared_per_sm >= info.max_shared_per_block_optin);
    CHECK(info.max_threads_per_sm >= info.max_threads_per_block);
    CHECK(info.max_threads_per_sm % info.warp_size == 0);
  }
  CHECK(target_limits("sm_86").max_threads_per_sm == 1536);
  CHECK(target_limits("sm_80").max_shared_per_block_optin == 163 * 1024);
  CHECK(target_limits("sm_75").max_threads_per_sm == 1024);
}

TEST_CASE("an unknown arch is a user error that lists the known ones", "[device]") {
  CHECK_THROWS_AS(target_limits("sm_13"), std::invalid_argument);
  CHECK_THROWS_WITH(target_limits("gfx90a"), Catch::Contains("sm_90"));
}

TEST_CASE("device listing follows the driver", "[device]") {
  const std::vector<DeviceInfo> devices = list_devices();
  if (driver_api() == nullptr) {
    CHECK(devices.empty());
    CHECK(default_arch() == "sm_90");
  } else {
    REQUIRE_FALSE(devices.empty());
    CHECK(default_arch() == devices.front().arch());
  }
}
