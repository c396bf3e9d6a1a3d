#include "kernels/wgmma_blocks.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kernels/schedule_helpers.h"

namespace cutune::wg {

namespace {

// The knob's value, or `fallback` where the space lacks it (a template without TMA knobs).
int knob_or(const Config& c, const char* name, int fallback) {
  const std::vector<Knob>& knobs = c.space().knobs();
  const bool has =
      std::any_of(knobs.begin(), knobs.end(), [&](const Knob& k) { return k.name() == name; });
  return has ? int(c.get(name)) : fallback;
}

// Shared bytes of the ring and the staged epilogue (the mbarriers excluded).
int64_t ring_and_stage_bytes(const Config& c) {
  const int64_t bm = c.get("block_m"), bn = c.get("block_n"), bk = c.get("block_k");
  int64_t bytes = c.get("stages") * (bm + bn) * bk * 2;
  // The TMA store's C tiles are counted by its own constraint (tma_store_bytes).
  if (c.get("epilogue") == 2 && knob_or(c, "tma_store", 0) == 0) {
    bytes += bm * (bn + kStagePad) * 4;
  }
  return bytes;
}

}  // namespace

WgmmaParams wgmma_params(const Config& c) {
  WgmmaParams p{};
  p.bm = int(c.get("block_m"));
  p.bn = int(c.get("block_n"));
  p.bk = int(c.get("block_k"));
  p.stages = int(c.get("stages"));
  p.warpgroups = int(c.get("warpgroups"));
  p.swizzle = int(c.get("swizzle"));
  p.copy_bytes = int(c.get("copy_bytes"));
  p.raster = int(c.get("raster_group"));
  p.split_k = int(split_k_of(c));
  p.epilogue = int(c.get("epilogue"));
  p.loads = knob_or(c, "loads", 0);
  p.producer = knob_or(c, "producer", 0);
  p.mma_pipe = knob_or(c, "mma_pipe", 0);
  p.tiles_per_block = knob_or(c, "tiles_per_block", 1);
  p.pingpong = knob_or(c, "pingpong", 0);
  p.tma_store = knob_or(c, "tma_store", 0);
  p.persistent = knob_or(c, "persistent", 0);
  p.last_wave_split = knob_or(c, "last_wave_split", 0);
  p.cluster_m = knob_or(c, "cluster_m", 1);
  p.cluster_n = knob_or(c, "cluster_n", 1);
  return p;
}

int64_t split_k_of(const Config& c) {
  return c.get("split_k") * (knob_or(c, "split_k_wide", 0) == 1 ? 4 : 1);
}

int64_t reference_split_k(int64_t tiles, int64_t k_slices) {
  int64_t split = 1;
  if (tiles >= 64) return split;
  while (split < 16 && tiles * split < 128 && k_slices >= 2 * split * 4) split *= 2;
  return split;
}

nlohmann::json ring_knobs(int block_m, int block_n, int block_k, int stages, int warpgroups,
                          int swizzle, int copy_bytes, int raster_group, int epilogue) {
  return {{"block_m", block_m},       {"block_n", block_n},           {"block_k", block_k},
          {"stages", stages},         {"warpgroups", warpgroups},     {"swizzle", swizzle},
          {"copy_bytes", copy_bytes}, {"raster_group", raster_group}, {"split_k", 1},
          {"epilogue", epilogue}};
}

void set_split_k(nlohmann::json& knobs, int64_t splits) {
  const bool wide = splits >= 8;
  knobs["split_k"] = wide ? splits / 4 : splits;
  knobs["split_k_wide"] = wide ? 1 : 0;
}

bool register_budget_holds(int warpgroups) {
  return 128 * warpgroups * kConsumerRegisters + 128 * kProducerRegisters <= 65536;
}

void define_wgmma_load_knobs(ConfigSpace& space, bool a_tma, bool b_tma) {
  const bool any = a_tma || b_tma, both = a_tma && b_tma;
  // Without TMA for both operands there is no producer, and so one tile a block and no
  // ping-pong: those knobs are not defined (knob_or reads them as 0 and 1).
  space.define_choice("loads", {0, 1}, 0);
  if (both) space.define_choice("producer", {0, 1}, 0);
  space.define_choice("mma_pipe", {0, 1}, 0);
  space.add_constraint("TMA loads need an operand a 2-D box can load",
                       [any](const Config& c) { return any || c.get("loads") == 0; });
  if (both) {
    space.add_constraint("with TMA loads copy_bytes keeps one value (16)", [](const Config& c) {
      return c.get("loads") == 0 || c.get("copy_bytes") == 16;
    });
    space.add_constraint(
        "a producer warpgroup needs TMA loads of both operands",
        [](const Config& c) { return c.get("producer") == 0 || c.get("loads") == 1; });
  }
  space.add_constraint(
      "wgmmas stay in flight across slices only with a producer or a ring of 3 or more slots",
      [](const Config& c) {
        return c.get("mma_pipe") == 0 || knob_or(c, "producer", 0) == 1 || c.get("stages") >= 3;
      });
  if (both) {
    space.add_constraint("the setmaxnreg counts fit the block's registers", [](const Config& c) {
      return c.get("producer") == 0 || register_budget_holds(int(c.get("warpgroups")));
    });
  }
  space.add_constraint(
      "shared memory with the mbarriers within the opt-in limit", [](const Config& c) {
        return c.get("loads") == 0 ||
               ring_and_stage_bytes(c) + 16 * c.get("stages") <= tc::kMaxSharedBytes;
      });
  if (both) {
    space.define_choice("tiles_per_block", {1, 2, 4, 8}, 1);
    space.add_constraint("several tiles a block need a producer and an unstaged epilogue",
                         [](const Config& c) {
                           return c.get("tiles_per_block") == 1 ||
                                  (c.get("producer") == 1 &&
                                   (c.get("epilogue") != 2 || knob_or(c, "tma_store", 0) >= 1));
                         });
    space.define_choice("pingpong", {0, 1}, 0);
    // (Persistent tiles, defined below, are several tiles a block too.)
    space.add_constraint(
        "ping-pong consumers need several tiles a block and two warpgroups", [](const Config& c) {
          return c.get("pingpong") == 0 ||
                 ((c.get("tiles_per_block") > 1 || knob_or(c, "persistent", 0) == 1) &&
                  c.get("warpgroups") == 2);
        });
  }
  space.define_choice("split_k_wide", {0, 1}, 0);
  space.add_constraint("wide split-K takes split_k 2 or 4 (to 8 or 16)", [](const Config& c) {
    return c.get("split_k_wide") == 0 || c.get("split_k") >= 2;
  });
  if (!both) return;
  // Last, so that the configurations written before them keep their indices.
  space.define_choice("persistent", {0, 1}, 0);
  space.add_constraint(
      "persistent tiles need a producer, an unstaged epilogue (or a TMA store), one tile a block "
      "and no split-K",
      [](const Config& c) {
        const bool unstaged = c.get("epilogue") != 2 || knob_or(c, "tma_store", 0) >= 1;
        return c.get("persistent") == 0 || (c.get("producer") == 1 && unstaged &&
                                            c.get("tiles_per_block") == 1 && split_k_of(c) == 1);
      });
  space.define_choice("last_wave_split", {0, 1}, 0);
  space.add_constraint(
      "the last wave splits along K only with persistent tiles",
      [](const Config& c) { return c.get("last_wave_split") == 0 || c.get("persistent") == 1; });
}

int64_t tma_store_bytes(const Config& c, bool out16) {
  if (knob_or(c, "tma_store", 0) == 0) return 0;
  const int64_t tiles = knob_or(c, "pingpong", 0) == 1 ? c.get("warpgroups") : 1;
  // 2: two 128-byte columns of block_m rows.
  const int64_t row_bytes = c.get("tma_store") == 2 ? 256 : c.get("block_n") * (out16 ? 2 : 4);
  return tiles * c.get("block_m") * row_bytes;
}

void define_tma_store_knob(ConfigSpace& space, int64_t n, bool out16) {
  const int64_t bytes = out16 ? 2 : 4;
  space.define_choice("tma_store", {0, 1, 2}, 0);
  space.add_constraint(
      "a TMA store takes the staged epilogue (2) and TMA loads", [](const Config& c) {
        return c.get("tma_store") == 0 || (c.get("epilogue") == 2 && c.get("loads") == 1);
      });
  space.add_constraint("a TMA store needs 16-byte global rows of C and whole 128-byte columns",
                       [n, bytes](const Config& c) {
                         return c.get("tma_store") == 0 ||
                                (n * bytes % 16 == 0 && c.get("block_n") * bytes % 128 == 0);
                       });
  // The kernel's shared buffers start on 1024-byte boundaries (sm_90a): the ring and the C
  // tiles are multiples of that, and the full, empty (and ping-pong's order) mbarrier arrays
  // take 1024 bytes each; so this is the kernel's exact size.
  space.add_constraint("shared memory with the TMA store's C tiles within the opt-in limit",
                       [out16](const Config& c) {
                         return c.get("tma_store") == 0 ||
                                ring_and_stage_bytes(c) + tma_store_bytes(c, out16) +
                                        1024 * (2 + knob_or(c, "pingpong", 0)) <=
                                    tc::kMaxSharedBytes;
                       });
}

void define_cluster_knobs(ConfigSpace& space) {
  space.define_choice("cluster_m", {1, 2}, 1);
  space.define_choice("cluster_n", {1, 2}, 1);
  auto clustered = [](const Config& c) { return c.get("cluster_m") > 1 || c.get("cluster_n") > 1; };
  space.add_constraint("a cluster is 2x1 or 1x2", [](const Config& c) {
    return c.get("cluster_m") == 1 || c.get("cluster_n") == 1;
  });
  // The multicast copies are the producer's: without one every thread would wait on TMA
  // barriers that a peer's copies complete, with no warp left to refill the ring.
  space.add_constraint("a cluster needs TMA loads and a producer warpgroup",
                       [clustered](const Config& c) {
                         return !clustered(c) || (c.get("loads") == 1 && c.get("producer") == 1);
                       });
  // A cluster's blocks walk the same tiles in step; the stream-K pieces are dealt per block.
  space.add_constraint(
      "no split of the last wave along K with clusters",
      [clustered](const Config& c) { return !clustered(c) || c.get("last_wave_split") == 0; });
}

void add_tiles_per_block_constraint(ConfigSpace& space, int64_t m, int64_t n, bool out16) {
  space.add_constraint("no more tiles a block than output tiles", [m, n](const Config& c) {
    return c.get("tiles_per_block") <=
           ceil_div(m, c.get("block_m")) * ceil_div(n, c.get("block_n"));
  });
  if (out16) {
    space.add_constraint("the last wave's pieces add into fp32 C",
                         [](const Config& c) { return knob_or(c, "last_wave_split", 0) == 0; });
  }
}

void define_wgmma_knobs(ConfigSpace& space, bool b_mn_major) {
  space.define_choice("block_m", {64, 128, 192, 256});
  space.define_choice("block_n", {64, 96, 128, 192, 256});
  space.define_choice("block_k", {32, 64});
  space.define_choice("stages", {2, 3, 4, 5, 6});
  space.define_choice("warpgroups", {1, 2});
  space.define_choice("swizzle", {0, 32, 64, 128});
  space.define_choice("copy_bytes", {2, 4, 8, 16});
  space.define_choice("raster_group", {1, 4, 8});
  space.define_choice("split_k", {1, 2, 4});
  space.define_choice("epilogue", {0, 1, 2});

  const bool nn = b_mn_major;
  // With ping-pong consumers (define_wgmma_load_knobs) a warpgroup holds a whole tile.
  auto sharing = [](const Config& c) {
    return knob_or(c, "pingpong", 0) == 1 ? int64_t{1} : c.get("warpgroups");
  };
  space.add_constraint("every warpgroup owns whole m64 strips", [sharing](const Config& c) {
    return c.get("block_m") % (64 * sharing(c)) == 0;
  });
  space.add_constraint("at most 128 accumulators per thread", [sharing](const Config& c) {
    return c.get("block_m") / (64 * sharing(c)) * c.get("block_n") / 2 <= 128;
  });
  space.add_constraint("the swizzle's row fits the tiles", [nn](const Config& c) {
    const int64_t e = c.get("swizzle") == 0 ? 8 : c.get("swizzle") / 2;
    return c.get("block_k") % e == 0 && (!nn || c.get("block_n") % e == 0);
  });
}

void add_wgmma_shape_constraints(ConfigSpace& space, int64_t n, int64_t k, bool out16) {
  space.add_constraint("shared memory within the opt-in limit", [](const Config& c) {
    return ring_and_stage_bytes(c) <= tc::kMaxSharedBytes;
  });
  space.add_constraint("split-K accumulates fp32 C with scalar atomics", [out16](const Config& c) {
    return split_k_of(c) == 1 || (!out16 && c.get("epilogue") == 0);
  });
  space.add_constraint("split-K leaves every split a K slice", [k](const Config& c) {
    return split_k_of(c) <= ceil_div(k, c.get("block_k"));
  });
  space.add_constraint("paired stores need an even N, staged ones N % 4 == 0",
                       [n](const Config& c) {
                         return c.get("epilogue") == 0 || (c.get("epilogue") == 1 && n % 2 == 0) ||
                                (c.get("epilogue") == 2 && n % 4 == 0);
                       });
}

}  // namespace cutune::wg
