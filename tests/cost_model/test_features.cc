#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/feature_loop_nest.h"
#include "cost_model/features.h"
#include "cost_model/ir_features.h"
#include "kernels/schedule_helpers.h"
#include "kernels/template.h"
#include "src/ir/intrinsics.h"
#include "src/ir/ir_operators.h"

using namespace cutune;
using namespace cutune::cost_model;

namespace {

std::vector<float> extract(const FeatureExtractor& fx, const Config& c) {
  std::vector<float> out(fx.size());
  fx.extract(c, out);
  return out;
}

float feature(const FeatureExtractor& fx, const std::vector<float>& v, const std::string& name) {
  std::vector<std::string> names = fx.names();
  auto it = std::find(names.begin(), names.end(), name);
  INFO("feature " << name);
  REQUIRE(it != names.end());
  return v[it - names.begin()];
}

float log_scaled(double x) { return float(std::log2(1.0 + x)); }

Config config_of(const Template& t, const nlohmann::json& knobs) {
  nlohmann::json j;
  j["knobs"] = knobs;
  return t.space().from_json(j);
}

nlohmann::json hand_tuned() {
  return {{"block_m", 128}, {"block_n", 128}, {"block_k", 8},       {"thread_m", 8},
          {"thread_n", 8},  {"warp_n", 8},    {"frag_m", 4},        {"frag_n", 4},
          {"vec_load", 4},  {"smem_pad", 4},  {"double_buffer", 1}, {"unroll_k", 1}};
}

std::vector<Config> sample(const Template& t, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Config> out;
  for (int i = 0; i < n; ++i) out.push_back(*t.space().sample_valid(rng));
  return out;
}

// The differences between two vectors, by feature name, for failure messages.
std::string differences(const FeatureExtractor& fx, const std::vector<float>& a,
                        const std::vector<float>& b) {
  std::vector<std::string> names = fx.names();
  std::string out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i])
      out += names[i] + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]) + "\n";
  }
  return out;
}

// A template that declares no loop or buffer names: Out[i] = 2 * In[i] over n elements, tiled
// by a `tile` knob, with an optional unrolled inner loop that only some configurations have.
class ScaleTemplate final : public Template {
 public:
  explicit ScaleTemplate(int64_t n) : n_(n) {
    space_.define_choice("threads", {32, 64, 128});
    space_.define_choice("per_thread", {1, 2, 4});
  }
  std::string op() const override { return "scale"; }
  std::string name() const override { return "scale"; }
  std::vector<int64_t> shape() const override { return {n_}; }
  const ConfigSpace& space() const override { return space_; }
  ir::Kernel build(const Config& c) const override {
    using namespace ir;
    int64_t threads = c.get("threads"), per = c.get("per_thread");
    Buffer in = Buffer::make("In", Type::f32(), MemoryScope::global, n_, true);
    Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, n_);
    Expr bx = int_var("bx"), tx = int_var("tx"), e = int_var("e");
    Expr i = (bx * int(threads) + tx) * int(per) + (per > 1 ? e : Expr(0));
    Stmt body = IfThenElse::make(i < int(n_), Store::make(out, i, Load::make(in, i) * f32(2.0)));
    if (per > 1) body = For::make("e", 0, int(per), ForKind::unrolled, body);
    body = For::make("tx", 0, int(threads), ForKind::thread_x, body);
    int64_t blocks = (n_ + threads * per - 1) / (threads * per);
    body = For::make("bx", 0, int(blocks), ForKind::block_x, body);
    return Kernel{"scale", {out, in}, {}, body};
  }
  std::vector<TensorSpec> tensors() const override { return {}; }
  void reference(std::vector<std::vector<float>>&) const override {}
  double flops() const override { return double(n_); }
  int64_t reduction_length() const override { return 1; }

 private:
  int64_t n_;
  ConfigSpace space_;
};

}  // namespace

TEST_CASE("a template that declares no names gets slots from the IR of sampled configurations",
          "[features]") {
  ScaleTemplate small(1000), large(1 << 20);
  SlotNames names = slot_names(small);
  CHECK(names.loops == std::vector<std::string>{"bx", "e", "tx"});
  CHECK(names.buffers == std::vector<std::string>{"In", "Out"});
  auto fs = make_ir_features(small, ir::TargetLimits{});
  auto fl = make_ir_features(large, ir::TargetLimits{});
  CHECK(fs->schema() == fl->schema());
  CHECK(fs->size() == fl->size());
  Config scalar(&small.space(), {0, 0});
  Config unrolled(&small.space(), {0, 2});
  std::vector<float> a = extract(*fs, scalar), b = extract(*fs, unrolled);
  CHECK(feature(*fs, a, "loop.e.serial") == 1);  // absent: an extent-1 serial loop
  CHECK(feature(*fs, a, "loop.e.extent") == Approx(log_scaled(1)));
  CHECK(feature(*fs, b, "loop.e.unrolled") == 1);
  CHECK(feature(*fs, b, "loop.e.extent") == Approx(log_scaled(4)));
  CHECK(feature(*fs, a, "buffer.In.stride_tx") == Approx(log_scaled(1)));
  CHECK(feature(*fs, b, "buffer.In.stride_tx") == Approx(log_scaled(4)));
  CHECK(feature(*fs, a, "buffer.In.warp_efficiency") == 1);
  CHECK(feature(*fs, b, "buffer.In.warp_efficiency") < 1);
  // 1000 elements, 32 per block: the guard holds for 1000 of the 1024 threads.
  CHECK(feature(*fs, a, "buffer.Out.touched_total") == Approx(log_scaled(4000)).epsilon(1e-3));
  CHECK(feature(*fs, a, "kernel.float_ops") == Approx(log_scaled(1000)).epsilon(1e-3));
}

TEST_CASE("IR features have one length and schema per template, whatever the shape", "[features]") {
  auto big = make_template("gemm", {1024, 1024, 1024}, "gemm_nn");
  auto odd = make_template("gemm", {127, 255, 63}, "gemm_nn");
  auto nt = make_template("gemm", {1024, 1024, 1024}, "gemm_nt");
  ir::TargetLimits limits;
  auto fb = make_ir_features(*big, limits);
  auto fo = make_ir_features(*odd, limits);
  auto fn = make_ir_features(*nt, limits);

  CHECK(fb->size() == fo->size());
  CHECK(fb->schema() == fo->schema());
  CHECK(fb->schema() != fn->schema());
  CHECK(fb->schema().starts_with("ir/v1:gemm_nn:"));
  int expected = int(big->loop_names().size() * kLoopFeatures.size() +
                     big->buffer_names().size() * kBufferFeatures.size() + kKernelFeatures.size());
  CHECK(fb->size() == expected);
  CHECK(int(fb->names().size()) == fb->size());
  CHECK(fb->names()[0] == "loop.by.extent");

  for (const auto* pair : {&fb, &fo, &fn}) {
    const FeatureExtractor& fx = **pair;
    const Template& t = pair == &fb ? *big : pair == &fo ? *odd : *nt;
    for (const Config& c : sample(t, 40, 7)) {
      std::vector<float> v(fx.size() + 1, -12345.0f);
      fx.extract(c, std::span<float>(v).first(fx.size()));
      INFO(c.to_string());
      CHECK(v.back() == -12345.0f);
      CHECK(std::all_of(v.begin(), v.end() - 1, [](float x) { return std::isfinite(x); }));
    }
  }
}

TEST_CASE("IR features of the hand-tuned SGEMM match its known quantities", "[features]") {
  auto t = make_template("gemm", {1024, 1024, 1024}, "gemm_nn");
  auto fx = make_ir_features(*t, ir::TargetLimits{});
  std::vector<float> v = extract(*fx, config_of(*t, hand_tuned()));

  CHECK(feature(*fx, v, "kernel.threads_per_block") == Approx(log_scaled(256)));
  CHECK(feature(*fx, v, "kernel.blocks") == Approx(log_scaled(64)));
  CHECK(feature(*fx, v, "kernel.shared_bytes") == Approx(log_scaled(2 * 2 * 8 * 132 * 4)));
  CHECK(feature(*fx, v, "kernel.local_bytes") == Approx(log_scaled((64 + 8 + 8 + 4 + 4) * 4)));
  // One multiply and one add per (i, j, k): the IR's float work is the GEMM's.
  CHECK(feature(*fx, v, "kernel.float_ops") == Approx(log_scaled(t->flops())).epsilon(1e-3));
  CHECK(feature(*fx, v, "loop.k_outer.extent") == Approx(log_scaled(128)));
  CHECK(feature(*fx, v, "loop.k_outer.serial") == 1);
  CHECK(feature(*fx, v, "loop.k.unrolled") == 1);
  CHECK(feature(*fx, v, "loop.tx.thread_x") == 1);
  CHECK(feature(*fx, v, "loop.by.block_y") == 1);
  // Every element of A and B is read from global memory; C is written once.
  CHECK(feature(*fx, v, "buffer.A.distinct_total") == Approx(log_scaled(1024.0 * 1024 * 4)));
  CHECK(feature(*fx, v, "buffer.C.distinct_total") == Approx(log_scaled(1024.0 * 1024 * 4)));
  CHECK(feature(*fx, v, "buffer.C.touched_total") == Approx(log_scaled(1024.0 * 1024 * 4)));
  // Each A element is read once per block column: 8 times.
  CHECK(feature(*fx, v, "buffer.A.reuse") == Approx(log_scaled(8)).epsilon(0.02));
  CHECK(feature(*fx, v, "buffer.A.lanes") == Approx(log_scaled(4)));
  CHECK(feature(*fx, v, "buffer.A.global") == 1);
  CHECK(feature(*fx, v, "buffer.A_shared.shared") == 1);
  CHECK(feature(*fx, v, "buffer.C_local.local") == 1);
  // B rows are read by 32 consecutive threads as float4: 512 contiguous bytes, 16 sectors.
  CHECK(feature(*fx, v, "buffer.B.stride_tx") == Approx(log_scaled(4)));
  CHECK(feature(*fx, v, "buffer.B.warp_efficiency") == 1);
  // The tile divides the matrix: the tail guards always hold and the zero fill never runs.
  CHECK(feature(*fx, v, "loop.a_z.extent") == Approx(log_scaled(4)));
  CHECK(feature(*fx, v, "loop.a_z.trips") == 0);
  // Layout nn stores B's tile untransposed: there is no b_e loop, so it reads as an extent-1
  // serial loop.
  CHECK(feature(*fx, v, "loop.b_e.extent") == Approx(log_scaled(1)));
  CHECK(feature(*fx, v, "loop.b_e.trips") == 0);
  CHECK(feature(*fx, v, "loop.b_e.serial") == 1);
  CHECK(feature(*fx, v, "loop.b_e.unrolled") == 0);
  CHECK(feature(*fx, v, "kernel.occupancy") > 0);
  CHECK(feature(*fx, v, "kernel.occupancy") <= 1);
}

TEST_CASE("every GEMM knob changes the IR feature vector", "[features]") {
  for (const auto& shape : {std::vector<int64_t>{1024, 1024, 1024}, {127, 255, 63}}) {
    auto t = make_template("gemm", shape, "gemm_nn");
    auto fx = make_ir_features(*t, ir::TargetLimits{});
    const ConfigSpace& space = t->space();
    std::vector<Config> base = sample(*t, 200, 11);
    for (size_t k = 0; k < space.knobs().size(); ++k) {
      const Knob& knob = space.knobs()[k];
      INFO("shape " << shape[0] << "x" << shape[1] << "x" << shape[2] << ", knob " << knob.name());
      int pairs = 0, differing = 0;
      for (const Config& c : base) {
        for (int32_t e = 0; e < int32_t(knob.cardinality()); ++e) {
          if (e == c.entities()[k]) continue;
          std::vector<int32_t> entities = c.entities();
          entities[k] = e;
          Config other(&space, entities);
          if (!space.is_valid(other)) continue;
          ++pairs;
          std::vector<float> a = extract(*fx, c), b = extract(*fx, other);
          if (a != b) {
            ++differing;
          } else {
            INFO(c.to_string() << "\nvs " << other.to_string());
            FAIL_CHECK("identical feature vectors");
          }
        }
        if (pairs >= 6) break;
      }
      // K = 63 admits only scalar loads, so vec_load has a single valid value there.
      bool fixed_by_shape = shape[2] == 63 && knob.name() == "vec_load";
      CHECK((pairs > 0 || fixed_by_shape));
      CHECK(differing == pairs);
    }
  }
}

TEST_CASE("the coalescing features tell a unit-stride global load from a strided one",
          "[features]") {
  auto t = make_template("gemm", {1024, 1024, 1024}, "gemm_nn");
  auto fx = make_ir_features(*t, ir::TargetLimits{});
  // A's tile is read row by row along K: with block_k = 32 and scalar loads, neighbouring
  // threads read neighbouring elements; with block_k = vec_load = 4, each thread reads its own
  // row, K elements apart.
  nlohmann::json coalesced = hand_tuned();
  coalesced["block_k"] = 32;
  coalesced["vec_load"] = 1;
  coalesced["double_buffer"] = 0;
  nlohmann::json strided = coalesced;
  strided["block_k"] = 4;
  strided["vec_load"] = 4;
  Config good = config_of(*t, coalesced), bad = config_of(*t, strided);
  REQUIRE(t->space().is_valid(good));
  REQUIRE(t->space().is_valid(bad));
  std::vector<float> g = extract(*fx, good), b = extract(*fx, bad);
  CHECK(feature(*fx, g, "buffer.A.stride_tx") == Approx(log_scaled(1)));
  CHECK(feature(*fx, b, "buffer.A.stride_tx") == Approx(log_scaled(1024)));
  CHECK(feature(*fx, g, "buffer.A.warp_efficiency") == 1);
  CHECK(feature(*fx, b, "buffer.A.warp_efficiency") < 0.75);
  INFO(differences(*fx, g, b));
  CHECK(feature(*fx, g, "buffer.A.warp_transactions") <
        feature(*fx, b, "buffer.A.warp_transactions"));
}

TEST_CASE("IR features are the same from several threads at once", "[features]") {
  auto t = make_template("gemm", {127, 255, 63}, "gemm_nt");
  auto fx = make_ir_features(*t, ir::TargetLimits{});
  std::vector<Config> configs = sample(*t, 60, 3);
  std::vector<std::vector<float>> serial;
  for (const Config& c : configs) serial.push_back(extract(*fx, c));
  std::vector<std::vector<std::vector<float>>> parallel(3);
  std::vector<std::thread> threads;
  for (auto& out : parallel) {
    threads.emplace_back([&] {
      for (const Config& c : configs) out.push_back(extract(*fx, c));
    });
  }
  for (std::thread& th : threads) th.join();
  for (const auto& out : parallel) CHECK(out == serial);
}

TEST_CASE("knob features are the knob values, independent of the shape", "[features]") {
  auto big = make_template("gemm", {1024, 1024, 1024}, "gemm_nn");
  auto odd = make_template("gemm", {127, 255, 63}, "gemm_nn");
  auto fb = make_knob_features(big->space());
  auto fo = make_knob_features(odd->space());
  CHECK(fb->schema() == fo->schema());
  CHECK(fb->size() == 2 * int(big->space().knobs().size()));
  for (const Config& c : sample(*big, 30, 5)) {
    Config same(&odd->space(), c.entities());
    CHECK(extract(*fb, c) == extract(*fo, same));
  }
  std::vector<float> v = extract(*fb, config_of(*big, hand_tuned()));
  CHECK(feature(*fb, v, "block_m") == Approx(log_scaled(128)));
  CHECK(feature(*fb, v, "warp_n") == Approx(log_scaled(8)));
  CHECK(feature(*fb, v, "double_buffer") == 1);
}

TEST_CASE("knob features of a replay-like space of choice knobs", "[features]") {
  ConfigSpace space;
  space.define_choice("block_size_x", {16, 32, 64, 128});
  space.define_choice("block_size_y", {1, 2, 4});
  space.define_choice("loop_unroll_factor", {0, 1, 2, -1});
  space.define_bool("use_shmem");
  space.define_split("tile", 16, 2);
  auto fx = make_knob_features(space);
  CHECK(fx->schema() == "knobs/v2:block_size_x,block_size_y,loop_unroll_factor,use_shmem,tile/2");
  CHECK(fx->size() == 12);
  CHECK(fx->names() == std::vector<std::string>{
                           "block_size_x", "block_size_x.odd", "block_size_y", "block_size_y.odd",
                           "loop_unroll_factor", "loop_unroll_factor.odd", "use_shmem",
                           "use_shmem.odd", "tile.0", "tile.0.odd", "tile.1", "tile.1.odd"});
  Config c(&space, {2, 1, 3, 1, 0});
  std::vector<float> v = extract(*fx, c);
  CHECK(v[0] == Approx(log_scaled(64)));
  CHECK(v[2] == Approx(log_scaled(2)));
  CHECK(v[4] == -1);  // negative values pass through unscaled
  CHECK(v[6] == 1);
  const std::vector<int64_t>& factors = c.split("tile");
  CHECK(v[8] == Approx(log_scaled(double(factors[0]))));
  CHECK(v[10] == Approx(log_scaled(double(factors[1]))));
  // Every configuration differs from every other.
  std::vector<std::vector<float>> all;
  for (uint64_t i = 0; i < space.size(); ++i) all.push_back(extract(*fx, space.get(i)));
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

TEST_CASE("a warpgroup index broadcast from lane 0 has the features of the plain index",
          "[features]") {
  using namespace ir;
  Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, 512);
  Expr tx = int_var("tx"), wg = int_var("warpgroup");
  auto summary_with = [&](const Expr& index) {
    // Half the warpgroups store, each to its own 128 elements.
    Stmt body = IfThenElse::make(wg < 1, Store::make(out, wg * 128 + tx % 128, f32(1.0)));
    Kernel k;
    k.name = "k";
    k.buffers = {out};
    k.body = For::make("tx", 0, 256, ForKind::thread_x, LetStmt::make("warpgroup", index, body));
    std::vector<std::string> loops = {"tx"}, buffers = {"Out"};
    LoopNestSummary s;
    summarize_loop_nest(k, loops, buffers, s);
    return s;
  };
  LoopNestSummary plain = summary_with(tx / 128), broadcast = summary_with(warp_uniform(tx / 128));
  REQUIRE(plain.buffers[0].seen);
  CHECK(plain.buffers[0].stores == 128);  // the branch is taken by one warpgroup of two
  CHECK(broadcast.buffers[0].stores == plain.buffers[0].stores);
  CHECK(broadcast.buffers[0].touched_total == plain.buffers[0].touched_total);
  CHECK(broadcast.buffers[0].stride_thread_x == plain.buffers[0].stride_thread_x);
  CHECK(broadcast.buffers[0].warp_transactions == plain.buffers[0].warp_transactions);
  CHECK(broadcast.kernel.int_ops == plain.kernel.int_ops);
}

TEST_CASE("shared-memory wavefronts are counted per phase of the access width", "[features]") {
  using namespace ir;
  // One warp stores float2 pairs: row lane / 4, columns 2·(lane % 4), rows `ld` floats apart
  // (a fragment's store into a staged tile). 8-byte accesses go to the banks by half-warps:
  // rows 0-3 in one phase. With ld = 68 (4 mod 32) rows 0 and 1 share banks 4-7 (two
  // wavefronts a phase); with ld = 72 (8 mod 32) each half-warp's 128 bytes take every bank once.
  auto summary_with = [](int ld, int lanes) {
    Buffer stage = Buffer::make("S", Type::f32(), MemoryScope::shared, 8 * 128);
    Expr tx = int_var("tx");
    Expr index = lanes == 2 ? tx / 4 * ld + tx % 4 * 2 : tx * 4;
    Buffer regs = Buffer::make("R", Type::f32(), MemoryScope::local, 4);
    Stmt store = Store::make(stage, index, Load::make(regs, IntImm::make(Type::i32(), 0), lanes));
    Kernel k;
    k.name = "k";
    k.body = For::make("tx", 0, 32, ForKind::thread_x,
                       Allocate::make(stage, Allocate::make(regs, store)));
    std::vector<std::string> loops = {"tx"}, buffers = {"S"};
    LoopNestSummary s;
    summarize_loop_nest(k, loops, buffers, s);
    REQUIRE(s.buffers[0].seen);
    return s.buffers[0];
  };
  BufferSlotStats pad4 = summary_with(68, 2), pad8 = summary_with(72, 2);
  CHECK(pad4.warp_ideal == 2);  // 256 distinct bytes
  CHECK(pad4.warp_transactions == 4);
  CHECK(pad8.warp_transactions == 2);
  // float4 stores of consecutive lanes: quarter-warps of 128 contiguous bytes, no conflict.
  BufferSlotStats wide = summary_with(0, 4);
  CHECK(wide.warp_ideal == 4);
  CHECK(wide.warp_transactions == 4);
}

TEST_CASE("a loop whose extent varies with a block index counts its mean trips", "[features]") {
  using namespace ir;
  // Split-K: `splits` blocks along z share 18 K slices, ceil(18 / splits) each, the last ones
  // fewer or none (4 splits: 5, 5, 5, 3; 8 splits: 3 ×6, then 0 and 0).
  auto summary_with = [](int splits) {
    Buffer out = Buffer::make("Out", Type::f32(), MemoryScope::global, 18 * 64);
    const int per_split = (18 + splits - 1) / splits;
    Expr kz = int_var("kz"), first = int_var("first");
    Expr tx = int_var("tx");
    Stmt store = Store::make(out, (first + int_var("ko")) * 64 + tx, f32(1.0));
    Stmt body = For::make("ko", 0, int_var("n"), ForKind::serial, store);
    body = LetStmt::make("n", max(min(i32(per_split), i32(18) - first), 0), body);
    body = LetStmt::make("first", kz * i32(per_split), body);
    Kernel k;
    k.name = "k";
    k.buffers = {out};
    k.body = For::make("kz", 0, splits, ForKind::block_z,
                       For::make("tx", 0, 64, ForKind::thread_x, body));
    std::vector<std::string> loops = {"ko"}, buffers = {"Out"};
    LoopNestSummary s;
    summarize_loop_nest(k, loops, buffers, s);
    REQUIRE(s.loops[0].seen);
    REQUIRE(s.buffers[0].seen);
    return s;
  };
  for (int splits : {1, 2, 4, 8, 16}) {
    INFO(splits << " splits");
    LoopNestSummary s = summary_with(splits);
    // 18 slices of 64 threads' stores, however they are split.
    CHECK(s.loops[0].trips == Approx(18 * 64));
    CHECK(s.buffers[0].stores == Approx(18 * 64));
    // The loop's extent stays the largest share.
    CHECK(s.loops[0].extent == (18 + splits - 1) / splits);
  }
}
