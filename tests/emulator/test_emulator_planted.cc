#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include "kernels/emulated_check.h"
using namespace cutune;
TEST_CASE("dump", "[dump]") {
  for (auto shape : std::vector<std::vector<int64_t>>{{2, 3, 7, 5, 1, 1, 2}}) {
    auto tmpl = make_template("depthwise_conv2d", shape, "");
    nlohmann::json j;
    j["knobs"] = {{"channel_block", 4}, {"thread_y", 7}, {"thread_x", 4}, {"inner_y", 1}, {"inner_x", 1}, {"interleave", 0}, {"unroll_filter", 1}};
    Config c = tmpl->space().from_json(j);
    emu::EmulatorOptions o; o.work_dir = "/tmp/sanit/wd";
    emu::Emulator e(o);
    EmulatedCheck r = check_in_emulator(*tmpl, c, ir::TargetLimits{}, e);
    WARN(r.status << " " << r.message);
  }
}
