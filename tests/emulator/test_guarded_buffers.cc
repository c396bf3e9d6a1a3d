#include <catch2/catch.hpp>

#include "src/emulator/guarded_buffers.h"
#include "tests/emulator/emulator_fixtures.h"

namespace cutune::emu {
namespace {

CudaSource two_buffers(int64_t n0, int64_t n1) {
  return testing::make_source("k", "",
                              {testing::buffer_param("x", n0), testing::int_param("n"),
                               testing::buffer_param("y", n1, true)},
                              Dim3{}, Dim3{});
}

TEST_CASE("guarded buffers copy in, locate addresses and copy out", "[emulator]") {
  std::vector<float> x = {1, 2, 3, 4, 5};
  std::vector<HostBuffer> bufs = {HostBuffer::from_floats(x),
                                  HostBuffer::zeros(ir::Type::f32(), 8)};
  GuardedBuffers g(two_buffers(5, 8), bufs);
  REQUIRE(g.size() == 2);
  REQUIRE(g.name(1) == "y");
  auto* data = static_cast<float*>(g.data(0));
  REQUIRE(reinterpret_cast<uintptr_t>(data) % 16 == 0);
  REQUIRE(data[4] == 5.0f);

  auto at = g.locate(data + 7);
  REQUIRE(at.has_value());
  REQUIRE(at->buffer == 0);
  REQUIRE(at->element == 7);
  REQUIRE(g.locate(data - 1)->element == -1);
  REQUIRE(g.locate(static_cast<float*>(g.data(1)) + 8)->buffer == 1);
  REQUIRE_FALSE(g.locate(&x[0]).has_value());

  REQUIRE_FALSE(g.overwritten_canary().has_value());
  data[5] = 0.0f;  // the slack between 20 and 32 bytes
  REQUIRE(g.overwritten_canary()->element == 5);
  data[5] = data[6];  // data[6] holds canary bytes, so this restores them
  data[0] = 9.0f;
  g.copy_out(bufs);
  REQUIRE(bufs[0].to_floats()[0] == 9.0f);
}

}  // namespace
}  // namespace cutune::emu
