#include "kernels/gemm_wgmma.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"
#include "kernels/tc_blocks.h"
#include "kernels/wgmma_blocks.h"
#include "src/ir/ir_operators.h"

namespace cutune {

using namespace ir;

GemmWgmmaTemplate::GemmWgmmaTemplate(int64_t m, int64_t n, int64_t k, GemmLayout layout,
                                     DType input, bool out16, bool runtime_m, Epilogue epilogue)
    : Gemm16Template(m, n, k, layout, input, out16, "a warpgroup-MMA GEMM", std::move(epilogue)) {
  runtime_m_ = runtime_m;
  define_space();
}

std::string GemmWgmmaTemplate::name() const {
  return op() + "_wgmma" + name_tail() + (runtime_m_ ? "_dynm" : "");
}

Template::MRule GemmWgmmaTemplate::runtime_m_rule(const Config& config) const {
  // The blocks are the tiles, numbered along x (tc::bind_tile_grid): ceil(M / block_m) rows of
  // ceil(N / block_n) tiles; A has K elements a row of M, C N (and so do their tensor maps).
  const wg::WgmmaParams p = wg::wgmma_params(config);
  return {.axis = 0,
          .rows = uint32_t(p.bm),
          .row_blocks = uint32_t(ceil_div(n_, int64_t{p.bn})),
          .row_elements = {{"A", k_}, {"C", n_}}};
}

void GemmWgmmaTemplate::define_space() {
  const bool nn = layout_ == GemmLayout::nn;
  const int64_t n = n_, k = k_;
  wg::define_wgmma_knobs(space_, nn);
  wg::define_wgmma_load_knobs(space_, true, true);
  space_.add_constraint("copies keep global rows aligned", [nn, n, k](const Config& c) {
    const int64_t e = c.get("copy_bytes") / 2;
    return k % e == 0 && (!nn || n % e == 0);
  });
  // cuTensorMapEncodeTiled takes row strides in multiples of 16 bytes: A's and B's rows of K
  // (nt) or N (nn) 16-bit elements.
  space_.add_constraint("TMA needs 16-byte global row strides", [nn, n, k](const Config& c) {
    return c.get("loads") == 0 || (k % 8 == 0 && (!nn || n % 8 == 0));
  });
  wg::add_wgmma_shape_constraints(space_, n, k, out16_);
  wg::add_tiles_per_block_constraint(space_, m_, n, out16_);
  wg::define_tma_store_knob(space_, n, out16_);
  wg::define_cluster_knobs(space_);
  if (runtime_m_) {
    // The grid of a run-time M is its tiles, one a block (launch_grid.h's at_m): a block that
    // walks several tiles would count them from the M it was built for, and a cluster needs a
    // grid of whole clusters, which at_m does not round to.
    space_.add_constraint("a run-time M takes one tile a block, not persistent, no clusters",
                          [](const Config& c) {
                            const wg::WgmmaParams p = wg::wgmma_params(c);
                            return p.persistent == 0 && p.tiles_per_block == 1 &&
                                   p.cluster_size() == 1;
                          });
  }
  constrain_epilogue([](const Config& c) {
    const wg::WgmmaParams p = wg::wgmma_params(c);
    return p.split_k > 1 || p.last_wave_split == 1;
  });
}

std::vector<Config> GemmWgmmaTemplate::reference_configs() const {
  std::vector<Config> out;
  auto add = [&](nlohmann::json knobs) { add_if_valid(space_, std::move(knobs), out); };
  // The usual Hopper shape: 128x128x64 tiles of two consumer warpgroups (64x128 each), a
  // 4-stage ring of 128-byte-swizzled tiles, grouped blocks, a staged epilogue.
  const nlohmann::json usual = wg::ring_knobs(128, 128, 64, 4, 2, 128, 16, 8, 2);
  add(usual);
  // The same tiles loaded by TMA, with a producer warpgroup (warp specialisation, setmaxnreg
  // 40 / 232): where the shape allows TMA (16-byte row strides).
  nlohmann::json tma = usual;
  tma["loads"] = 1;
  tma["producer"] = 1;
  add(tma);
  // The large Hopper tile: 128x256x64, each consumer warpgroup 64x256 (m64n256k16, 128
  // accumulators a thread), TMA with a producer, wgmmas kept in flight across slices, paired
  // stores (a staged 128x256 fp32 tile would not fit beside the 192 KiB ring). Per K slice it
  // moves 48 KiB for 4.2 MFLOP, a third more work per byte than 128x128, which is what keeps
  // a large GEMM off the L2's bandwidth.
  nlohmann::json large = tma;
  large["block_n"] = 256;
  large["epilogue"] = 1;
  large["mma_pipe"] = 1;
  add(large);
  // Its transpose, 256x128x64: each consumer warpgroup two m64 strips of 64x128 (the same 128
  // accumulators a thread), B's slice half as wide, A's twice as tall.
  nlohmann::json tall = large;
  tall["block_m"] = 256;
  tall["block_n"] = 128;
  add(tall);
  // Both as persistent tiles: a grid of one block an SM, each walking its tiles in groups of 8
  // tile rows. And 128x256 with the part-empty last wave shared out along K (stream-K) into
  // fp32 C: whether its atomics cost less than the idle SMs they save is the GPU's to say.
  nlohmann::json persistent = large;
  persistent["persistent"] = 1;
  add(persistent);
  if (!out16_) {
    nlohmann::json stream_k = persistent;
    stream_k["last_wave_split"] = 1;
    add(stream_k);
  }
  nlohmann::json persistent_tall = tall;
  persistent_tall["persistent"] = 1;
  add(persistent_tall);
  // Ping-pong: the same 128x128x64 ring, each consumer warpgroup computing whole 128x128
  // tiles in turn (128 accumulators a thread), so that one warpgroup's stores overlap the
  // other's wgmmas; several tiles a block, as many as leave at least 128 blocks (a wave on a
  // 132-SM Hopper), at least 2.
  nlohmann::json pingpong = tma;
  pingpong["epilogue"] = 1;
  pingpong["mma_pipe"] = 1;
  pingpong["pingpong"] = 1;
  const int64_t tiles = ceil_div(m_, int64_t{128}) * ceil_div(n_, int64_t{128});
  pingpong["tiles_per_block"] = tiles >= 8 * 128 ? 8 : tiles >= 4 * 128 ? 4 : 2;
  add(pingpong);
  // And ping-pong over persistent tiles: a block an SM, whatever the tiles.
  nlohmann::json pingpong_persistent = pingpong;
  pingpong_persistent["tiles_per_block"] = 1;
  pingpong_persistent["persistent"] = 1;
  add(pingpong_persistent);
  // Split-K where the output tiles leave most SMs idle and K is long (reference_split_k): the
  // TMA ring's tiles adding fp32 into C with atomics.
  if (const int64_t split = wg::reference_split_k(tiles, ceil_div(k_, int64_t{64}));
      !out16_ && split > 1) {
    nlohmann::json splits = tma;
    splits["epilogue"] = 0;
    wg::set_split_k(splits, split);
    add(splits);
  }
  // The TMA-store epilogue: the large tile with a producer and several tiles a block (as
  // many as ping-pong takes), the stores overlapping the next tile's main loop. 16-bit C: a
  // 3-slot ring beside the whole 64 KiB tile; fp32 C, whose 128 KiB tile leaves no room for a
  // ring: the 4-slot ring beside two 16 KiB columns' buffers, the tile stored a column at a
  // time (tma_store 2).
  {
    nlohmann::json store = tma;
    store["block_n"] = 256;
    store["stages"] = out16_ ? 3 : 4;
    store["epilogue"] = 2;
    store["mma_pipe"] = 1;
    store["tiles_per_block"] = pingpong["tiles_per_block"];
    store["tma_store"] = out16_ ? 1 : 2;
    add(store);
    // And over persistent tiles: a block an SM walking its tiles, each tile's store
    // overlapping the next one's main loop.
    store["tiles_per_block"] = 1;
    store["persistent"] = 1;
    add(store);
    // And in clusters of two tile rows (2x1) sharing B's 256-column slice, each block loading
    // half of it by a multicast TMA copy into both: B's reads from L2 halve, the cluster
    // walking its tiles as one.
    store["cluster_m"] = 2;
    add(store);
  }
  // A smaller one for small or skinny problems.
  add(wg::ring_knobs(64, 64, 64, 3, 1, 128, 16, 4, 1));
  return out;
}

std::vector<std::string> GemmWgmmaTemplate::loop_names() const { return wg::wgmma_loop_names(); }

std::vector<std::string> GemmWgmmaTemplate::buffer_names() const {
  std::vector<std::string> names{"A", "B", "C"};
  for (std::string& b : wg::wgmma_local_buffer_names()) names.push_back(std::move(b));
  return names;
}

Kernel GemmWgmmaTemplate::build(const Config& config) const {
  return wg::build_wgmma_gemm(spec(config), wg::wgmma_params(config));
}

wg::WgmmaGemmSpec GemmWgmmaTemplate::spec(const Config& config) const {
  const wg::WgmmaParams p = wg::wgmma_params(config);
  const bool nn = layout_ == GemmLayout::nn;
  const Type in{input_, 1};
  const int64_t m = m_, n = n_, k = k_;
  wg::WgmmaGemmSpec spec;
  spec.name = name();
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.input = input_;
  spec.out16 = out16_;
  spec.b_mn_major = nn;
  spec.a = Buffer::make("A", in, MemoryScope::global, m * k, true);
  spec.b = Buffer::make("B", in, MemoryScope::global, k * n, true);
  spec.c = c_buffer();
  spec.epilogue = output_epilogue(spec.c);
  if (runtime_m_) {
    // Every row of A is guarded against the scalar M: no tile is known to be whole.
    spec.m_rows = int_var("M");
    const bool k_tail = k % p.bk != 0;
    spec.a_source = [k, k_tail, rows = spec.m_rows](const Expr& row0, const Expr& col0,
                                                    const Expr& row, const Expr& col) {
      tc::CopySource s;
      s.in_range.push_back(row0 + row < rows);
      if (k_tail) s.in_range.push_back(col0 + col < i32(k));
      s.index = (row0 + row) * i32(k) + col0 + col;
      return s;
    };
  } else {
    spec.a_source = tc::matrix_source(k, m, k, m % p.bm != 0, k % p.bk != 0);
  }
  spec.b_source = nn ? tc::matrix_source(n, k, n, k % p.bk != 0, n % p.bn != 0)
                     : tc::matrix_source(k, n, k, n % p.bn != 0, k % p.bk != 0);
  spec.parameters = {spec.c, spec.a, spec.b};
  for (const Buffer& b : spec.epilogue.buffers()) spec.parameters.push_back(b);
  spec.a_tma = wg::WgmmaGemmSpec::TmaView{k, m, 2 * k};
  spec.b_tma =
      nn ? wg::WgmmaGemmSpec::TmaView{n, k, 2 * n} : wg::WgmmaGemmSpec::TmaView{k, n, 2 * k};
  return spec;
}

namespace {

const FamilyRegistrar kGemmWgmma{
    {.computation = "gemm",
     .family = "wgmma",
     .shape_help = "M,N,K",
     .description = "C[M,N] = A[M,K]·B on Hopper's warpgroup MMA (sm_90a) with fp32 "
                    "accumulation: 16-bit inputs, B [K,N] (nn) or stored [N,K] (nt); C fp32 or "
                    "like the inputs",
     .native_arch = "sm_90",
     .supported = combinations("gemm", "wgmma", {"fp16", "bf16"}, {"nn", "nt"}, true),
     .runtime_m = true,
     .epilogue = true,
     .make = [](const TaskParams& p,
                const std::vector<int64_t>& shape) -> std::unique_ptr<Template> {
       const std::vector<int64_t> s = shape_of_size(operator_name(p), shape, 3, "M,N,K");
       return std::make_unique<GemmWgmmaTemplate>(s[0], s[1], s[2], gemm_layout(p.layout),
                                                  element_type(p.dtype), p.out_dtype != "fp32",
                                                  p.runtime_m, parse_epilogue(p.epilogue));
     }}};

}  // namespace

}  // namespace cutune
