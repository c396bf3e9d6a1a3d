// Search efficiency on replayed real measurements: for every Kernel Tuner cache under
// ../shared/datasets and every tuner, the median over seeds of best-found / optimum after
// 25..400 trials, the median trials to 95% of the optimum, and the Kernel Tuner score
// P = (tuner - random) / (optimum - random) at 200 trials, random's expectation exact.
// Also transfer learning across GPUs for caches that share a space.
//
//   replay_efficiency [--seeds 20] [--trials 400] [--batch 32] [--threads 2] [--quick]
//                     [--data DIR] [--tuners xgb,ga,random,grid] [--only SUBSTRING]
//                     [--classic]    (xgb with the former default: ModelPolicyOptions::classic())
//                     [--previous]   (the default with the first-batch options spelled out:
//                                     ModelPolicyOptions::previous())
//                     [--first-batch N] [--round-fraction X] [--incumbent-by-mean] [--no-widen]
//                     [--cover-start] (the random first batch covering every knob's values)
//                     [--cover-share X] (only that share of it; the rest plain random)
//                     [--random-total N] (random slots in the first rounds until N in all)
//                     [--early]      (xgb with every early-trial and local-search change of
//                                     ModelPolicyOptions::early(); off by default)
//                     [--balanced-design] (the design stratified over valid configurations)
//                     [--design N] [--min-batch N] [--local-share X] [--adaptive-kappa]
//                     [--kappa K]    (one change at a time)
//                     [--incumbent-share X] [--incumbent-max X]  (trust region around the best)
//                     [--incumbent-adjacent]  (each radius: neighbouring knob values first)
//                     [--incumbent-stratify X]  (that share of each radius in turns over the knobs
//                     changed)
//                     [--incumbent-random X]  (that share of the trust region's picks
//                                     uniformly random among its candidates; in [0, 1])
//                     [--diversity] [--epsilon X]
//                     [--label NAME] (the xgb tuner's name in --curves)
//                     [--first-seed N]  (the same as --seed-offset N)
//                     [--no-plateaus] (the trust region before its handling of tied bests:
//                                     ModelPolicyOptions::without_plateaus())
//                     [--incumbent-centres N] [--incumbent-support] [--plateau-share X]
//                     [--tie-tolerance X] (ties within X of the best, relative)
//                     [--coverage-share X]  (knob values not yet measured; off)
//                     [--recombine-share X] [--recombine-stall N]  (crossings of the
//                                     incumbent with each knob value's best measured
//                                     configuration, after N plans without a better best; off)
//                     [--gp-until N] [--gp-kappa X]  (a Gaussian process ranks while the
//                                     records are fewer than N (64; 0: off), by mean + X sd (2))
//                     [--basin-share X] [--basin-stall N]  (that share of the trust region
//                                     climbs from a local best of another basin after N plans
//                                     without a better best; 0.5, 4; 0: off)
//                     [--bound-bias X]  (each choice knob of a first-batch draw at its
//                                     smallest or largest value with probability X; 0.5; 0: off)
//                     [--credit-top X] [--credit-decay X] [--credit-max X]  (the trust
//                                     region's share by its picks' hits; off)
//                     [--warm-trees N] [--chains N] [--temp T]  (warm-started boosters;
//                                     the annealing's chains and starting temperature)
//                     [--needle]     (each cache's needle variant instead, make_needle_cache:
//                                     only its optimum within 95%, two knob changes from a
//                                     plateau at 0.89, its one-knob neighbours at 0.8)
//                     [--needle-neighbour R]  (the neighbours' ratio instead of 0.8)
//                     [--seed-offset N]  (seeds N .. N + seeds - 1 instead of 0 ..: fresh
//                                     seeds to confirm a choice made on the first ones)
//                     [--per-seed]   (also print each xgb seed's trials to 95%)
//                     [--curves FILE]  (also append every seed's curve to FILE, one JSON line
//                                     per cache, tuner and seed: its improvement points
//                                     [trial, true time ms], for bench/peer_compare)
//                     [--transfer]   (only the transfer table: every ordered pair of caches
//                                     in one folder whose knob features share a schema)

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost_model/features.h"
#include "src/replay/kt_cache.h"
#include "cost_model/features.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"
#include "src/tune/replay_study.h"
#include "src/tune/transfer_model.h"

using namespace cutune;

namespace {

struct Args {
  int seeds = 20;
  int trials = 400;
  int batch = 32;
  int threads = 2;
  int seed_offset = 0;
  bool per_seed = false;
  std::string data = CUTUNE_SOURCE_DIR "/../shared/datasets";
  std::vector<std::string> tuners = {"xgb", "ga", "random", "grid"};
  std::string only;
  bool transfer = false;
  std::string curves;
  bool needle = false;
  double needle_plateau = 0.89, needle_neighbour = 0.8;
  ModelPolicyOptions model;  // --early, --design, ...: the xgb tuner's options
  std::string label;         // --label: the xgb tuner's name in --curves (default "xgb")
};

// One JSON line per seed: the trials at which the best found improved, with its true time.
void append_curves(const std::string& path, const std::string& cache, const std::string& tuner,
                   const StudyResult& r) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) {
    fmt::print(stderr, "replay_efficiency: cannot write {}\n", path);
    std::exit(2);
  }
  for (size_t s = 0; s < r.curves.size(); ++s) {
    nlohmann::json points = nlohmann::json::array();
    double last = 0;
    for (size_t t = 0; t < r.curves[s].size(); ++t) {
      if (r.curves[s][t] > last) {
        last = r.curves[s][t];
        points.push_back({t + 1, r.optimum_ms / last});
      }
    }
    nlohmann::json line = {{"cache", cache},
                           {"tuner", "cutune:" + tuner},
                           {"seed", s},
                           {"trials", r.curves[s].size()},
                           {"points", points}};
    fmt::print(f, "{}\n", line.dump());
  }
  std::fclose(f);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string cell(std::optional<double> v, const char* fmt_spec = "{:.0f}") {
  return v ? fmt::format(fmt::runtime(fmt_spec), *v) : std::string("-");
}

// One row of the transfer table: xgb on `target` without and with a global model trained on
// the whole of `source` (another GPU's cache of the same space).
void transfer_row(const std::string& source_name, const replay::ReplayTask& source,
                  const std::string& target_name, const replay::ReplayTask& target,
                  const Args& args) {
  auto features = cost_model::make_knob_features(target.space());
  auto source_features = cost_model::make_knob_features(source.space());
  if (features->schema() != source_features->schema()) return;
  RecordFeaturizer featurize = [&](const Record& r, std::span<float> out) {
    try {
      features->extract(target.space().from_json(nlohmann::json{{"knobs", r.knobs}}), out);
      return true;
    } catch (const ConfigError&) {
      return false;
    }
  };
  ModelPolicyOptions plain = args.model;
  plain.plan_size = args.batch;
  ModelPolicyOptions transfer = plain;
  transfer.transfer = std::make_shared<TransferModel>(
      TransferModel::train(cache_records(source), replay_task_key(target), featurize,
                           features->size(), features->schema()));
  StudyOptions so;
  so.trials = args.trials;
  so.seeds = args.seeds;
  so.batch = args.batch;
  so.threads = args.threads;
  std::string cells;
  std::optional<double> t95[2];
  for (int i = 0; i < 2; ++i) {
    const ModelPolicyOptions& mo = i == 0 ? plain : transfer;
    StudyResult r = run_replay_study(
        target, [&] { return make_model_policy(target.space(), *features, mo); }, so);
    t95[i] = r.median_trials_to(0.95);
    for (int b : {25, 50, 100}) cells += fmt::format(" {:.3f} |", r.median_ratio_at(b));
  }
  fmt::print("| {} | {} |{} {} | {} |\n", source_name, target_name, cells, cell(t95[0]),
             cell(t95[1]));
  std::fflush(stdout);
}

// A flag's whole value as a number, else one line and exit 2.
[[noreturn]] void not_a_number(const std::string& flag, const std::string& v) {
  fmt::print(stderr, "replay_efficiency: {} needs a number, not '{}'\n", flag, v);
  std::exit(2);
}
template <typename Parse>
auto parsed_value(const std::string& flag, const std::string& v, Parse parse) {
  size_t used = 0;
  try {
    const auto x = parse(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  not_a_number(flag, v);
}
int int_value(const std::string& flag, const std::string& v) {
  return parsed_value(flag, v, [](const std::string& t, size_t* used) { return std::stoi(t, used); });
}
double double_value(const std::string& flag, const std::string& v) {
  return parsed_value(flag, v, [](const std::string& t, size_t* used) { return std::stod(t, used); });
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "replay_efficiency: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seeds")
      args.seeds = int_value(a, value());
    else if (a == "--trials")
      args.trials = int_value(a, value());
    else if (a == "--batch")
      args.batch = int_value(a, value());
    else if (a == "--threads")
      args.threads = int_value(a, value());
    else if (a == "--seed-offset")
      args.seed_offset = int_value(a, value());
    else if (a == "--per-seed")
      args.per_seed = true;
    else if (a == "--data")
      args.data = value();
    else if (a == "--tuners")
      args.tuners = split(value());
    else if (a == "--only")
      args.only = value();
    else if (a == "--quick") {
      args.seeds = 5;
      args.trials = 200;
    } else if (a == "--transfer")
      args.transfer = true;
    else if (a == "--curves")
      args.curves = value();
    else if (a == "--needle")
      args.needle = true;
    else if (a == "--needle-neighbour")
      args.needle_neighbour = double_value(a, value());
    else if (a == "--early")
      args.model = args.model.early();
    else if (a == "--classic")
      args.model = args.model.classic();
    else if (a == "--previous")
      args.model = args.model.previous();
    else if (a == "--no-widen")
      args.model.incumbent_widen = false;
    else if (a == "--design")
      args.model.initial_design = int_value(a, value());
    else if (a == "--balanced-design")
      args.model.design = DesignKind::balanced;
    else if (a == "--min-batch")
      args.model.min_batch = int_value(a, value());
    else if (a == "--local-share")
      args.model.local_share = double_value(a, value());
    else if (a == "--adaptive-kappa")
      args.model.adaptive_kappa = true;
    else if (a == "--kappa")
      args.model.kappa = double_value(a, value());
    else if (a == "--incumbent-share")
      args.model.incumbent_share = double_value(a, value());
    else if (a == "--credit-top")  // ModelPolicyOptions::credit_top
      args.model.credit_top = double_value(a, value());
    else if (a == "--credit-max")
      args.model.credit_max = double_value(a, value());
    else if (a == "--credit-decay")
      args.model.credit_decay = double_value(a, value());
    else if (a == "--incumbent-max")
      args.model.incumbent_max_share = double_value(a, value());
    else if (a == "--diversity")
      args.model.diversity = true;
    else if (a == "--epsilon")
      args.model.epsilon = double_value(a, value());
    else if (a == "--first-batch")
      args.model.first_batch = int_value(a, value());
    else if (a == "--round-fraction")
      args.model.round_fraction = double_value(a, value());
    else if (a == "--incumbent-by-mean")
      args.model.incumbent_by_mean = true;
    else if (a == "--random-total")
      args.model.random_total = int_value(a, value());
    else if (a == "--cover-start")
      args.model.cover_start = true;
    else if (a == "--cover-share")
      args.model.cover_share = double_value(a, value());
    else if (a == "--incumbent-widen")
      args.model.incumbent_widen = true;
    else if (a == "--incumbent-adjacent")  // ModelPolicyOptions::incumbent_adjacent
      args.model.incumbent_adjacent = true;
    else if (a == "--incumbent-stratify")  // ModelPolicyOptions::incumbent_stratify
      args.model.incumbent_stratify = double_value(a, value());
    else if (a == "--incumbent-random") {  // ModelPolicyOptions::incumbent_random
      const std::string v = value();
      const double x = double_value(a, v);
      if (!(x >= 0 && x <= 1)) {
        fmt::print(stderr, "replay_efficiency: --incumbent-random is a share in [0, 1], not '{}'\n",
                   v);
        return 2;
      }
      args.model.incumbent_random = x;
    } else if (a == "--label")
      args.label = value();
    else if (a == "--incumbent-centres")
      args.model.incumbent_centres = int_value(a, value());
    else if (a == "--no-plateaus")  // the default before the plateau handling
      args.model = args.model.without_plateaus();
    else if (a == "--incumbent-support")
      args.model.incumbent_support = true;
    else if (a == "--coverage-share")
      args.model.coverage_share = double_value(a, value());
    else if (a == "--recombine-share")
      args.model.recombine_share = double_value(a, value());
    else if (a == "--recombine-stall")
      args.model.recombine_stall = int_value(a, value());
    else if (a == "--gp-until")
      args.model.gp_until = int_value(a, value());
    else if (a == "--gp-kappa")
      args.model.gp_kappa = double_value(a, value());
    else if (a == "--plateau-share")
      args.model.plateau_share = double_value(a, value());
    else if (a == "--tie-tolerance")  // ModelPolicyOptions::tie_tolerance
      args.model.tie_tolerance = double_value(a, value());
    else if (a == "--first-seed")  // the same as --seed-offset
      args.seed_offset = int_value(a, value());
    else if (a == "--warm-trees")  // ModelPolicyOptions::warm_trees
      args.model.warm_trees = int_value(a, value());
    else if (a == "--chains")  // the annealing's chains
      args.model.annealing.chains = int_value(a, value());
    else if (a == "--temp")  // the annealing's starting temperature
      args.model.annealing.temp_start = double_value(a, value());
    else if (a == "--max-depth")  // the boosters' RankModelOptions
      args.model.model.max_depth = int_value(a, value());
    else if (a == "--model-rounds")
      args.model.model.rounds = int_value(a, value());
    else if (a == "--eta")
      args.model.model.eta = double_value(a, value());
    else if (a == "--min-child-weight")
      args.model.model.min_child_weight = double_value(a, value());
    else if (a == "--pairs-per-row")
      args.model.model.pairs_per_row = int_value(a, value());
    else if (a == "--objective") {  // pairwise (default), ndcg, regression
      const std::string o = value();
      if (o == "pairwise")
        args.model.model.objective = cost_model::RankObjective::pairwise;
      else if (o == "ndcg")
        args.model.model.objective = cost_model::RankObjective::ndcg;
      else if (o == "regression")
        args.model.model.objective = cost_model::RankObjective::regression;
      else {
        fmt::print(stderr, "replay_efficiency: --objective is pairwise, ndcg or regression\n");
        return 2;
      }
    } else if (a == "--grades")
      args.model.model.grades = int_value(a, value());
    else if (a == "--octaves")
      args.model.model.octaves = double_value(a, value());
    else if (a == "--restart")  // ModelPolicyOptions::restart_share
      args.model.restart_share = double_value(a, value());
    else if (a == "--bound-bias")  // ModelPolicyOptions::bound_bias
      args.model.bound_bias = double_value(a, value());
    else if (a == "--basin-share")  // ModelPolicyOptions::basin_share
      args.model.basin_share = double_value(a, value());
    else if (a == "--basin-stall")  // ModelPolicyOptions::basin_stall
      args.model.basin_stall = int_value(a, value());
    else if (a == "--ensemble")
      args.model.ensemble = int_value(a, value());
    else {
      fmt::print(stderr, "replay_efficiency: unknown option {}\n", a);
      return 2;
    }
  }

  if (!std::filesystem::is_directory(args.data)) {
    fmt::print(stderr, "replay_efficiency: no dataset folder {} (give one with --data DIR)\n",
               args.data);
    return 2;
  }
  std::vector<std::string> caches;
  for (const auto& e : std::filesystem::recursive_directory_iterator(args.data)) {
    std::string p = e.path().string();
    if (p.ends_with(".json.gz") ||
        (p.ends_with(".json") && p.find("/spaces/") == std::string::npos)) {
      if (args.only.empty() || p.find(args.only) != std::string::npos) caches.push_back(p);
    }
  }
  std::sort(caches.begin(), caches.end());
  if (caches.empty()) {
    fmt::print(stderr, "replay_efficiency: no cache under {}\n", args.data);
    return 1;
  }

  if (args.transfer) {
    std::map<std::string, replay::ReplayTask> loaded;
    for (const std::string& path : caches) {
      loaded.emplace(std::filesystem::relative(path, args.data).string(),
                     replay::ReplayTask::from_cache(replay::load_kt_cache(path)));
    }
    fmt::print(
        "xgb, seeds {}, trials {}, batch {}, threads {}; global model on the whole "
        "source cache\n\n",
        args.seeds, args.trials, args.batch, args.threads);
    fmt::print(
        "| source | target | @25 | @50 | @100 | @25 transfer | @50 transfer | "
        "@100 transfer | trials to 95% | with transfer |\n");
    fmt::print("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& [target_name, target] : loaded) {
      for (const auto& [source_name, source] : loaded) {
        if (source_name == target_name || std::filesystem::path(source_name).parent_path() !=
                                              std::filesystem::path(target_name).parent_path()) {
          continue;
        }
        transfer_row(source_name, source, target_name, target, args);
      }
    }
    return 0;
  }

  const std::vector<int> budgets = {25, 50, 100, 200, 400};
  struct {
    int caches = 0;
    double t95 = 0, at[3] = {0, 0, 0};
  } sums;
  std::map<std::string, replay::ReplayTask> tasks;
  fmt::print("seeds {}, trials {}, batch {} (xgb plan = batch), threads {}\n\n", args.seeds,
             args.trials, args.batch, args.threads);
  fmt::print("| cache | tuner | @25 | @50 | @100 | @200 | @400 | trials to 95% | P@200 | s |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (const std::string& path : caches) {
    std::string name = std::filesystem::relative(path, args.data).string();
    replay::KtCache cache = replay::load_kt_cache(path);
    if (args.needle) {
      NeedleInfo info;
      cache =
          make_needle_cache(std::move(cache), args.needle_plateau, args.needle_neighbour, &info);
      name = "needle:" + name;
      fmt::print(stderr,
                 "{}: plateau of {} at {}, {} knob changes from the optimum; {} "
                 "one-knob neighbours slowed to {}\n",
                 name, info.plateau, args.needle_plateau, info.distance, info.slowed_neighbours,
                 args.needle_neighbour);
    }
    replay::ReplayTask& task =
        tasks.emplace(name, replay::ReplayTask::from_cache(std::move(cache))).first->second;
    auto features = cost_model::make_knob_features(task.space());
    double random200 = expected_random_ratio(task, 200);
    std::vector<std::string> row_random = {name, "random (exact)"};
    std::string random_cells;
    for (int b : budgets) random_cells += fmt::format(" {:.3f} |", expected_random_ratio(task, b));
    fmt::print("| {} | random (exact) |{} {:.0f} | 0 | - |\n", name, random_cells,
               expected_random_trials_to(task, 0.95));
    for (const std::string& tuner : args.tuners) {
      TunerKind kind = parse_tuner_kind(tuner);
      ModelPolicyOptions mo = args.model;
      mo.plan_size = args.batch;
      StudyOptions so;
      so.trials = args.trials;
      so.seeds = kind == TunerKind::grid ? 1 : args.seeds;
      so.batch = args.batch;
      so.threads = args.threads;
      so.first_seed = static_cast<uint64_t>(args.seed_offset);
      StudyResult r = run_replay_study(
          task, [&] { return make_search_policy(kind, task.space(), features.get(), mo); }, so,
          [&](int done, int total) {
            fmt::print(stderr, "\r{} {}: seed {}/{}   ", name, tuner, done, total);
          });
      fmt::print(stderr, "\n");
      std::string cells;
      for (int b : budgets) {
        cells += b <= args.trials ? fmt::format(" {:.3f} |", r.median_ratio_at(b)) : " - |";
      }
      if (!args.curves.empty()) {
        append_curves(args.curves, name,
                      kind == TunerKind::xgb && !args.label.empty() ? args.label : tuner, r);
      }
      double at200 = r.median_ratio_at(std::min(200, args.trials));
      double p = (at200 - random200) / (1.0 - random200);
      fmt::print("| {} | {} |{} {} | {:.2f} | {:.0f} |\n", name, tuner, cells,
                 cell(r.median_trials_to(0.95)), p, r.seconds);
      if (kind == TunerKind::xgb) {
        // The sums over caches where random needs more than 50 trials (a median that never
        // reached 95% counts as the budget), so that a gain on one is weighed against a loss.
        if (expected_random_trials_to(task, 0.95) > 50) {
          ++sums.caches;
          sums.t95 += r.median_trials_to(0.95).value_or(args.trials);
          for (size_t k = 0; k < 3; ++k) {
            sums.at[k] += r.median_ratio_at(std::min(std::array{50, 100, 200}[k], args.trials));
          }
        }
        if (args.per_seed) {
          std::string seeds;
          for (const auto& t : r.trials_to(0.95)) seeds += fmt::format(" {}", t ? *t : -1);
          fmt::print("  {} seeds {}..: trials to 95%:{}\n", name, args.seed_offset, seeds);
        }
      }
      std::fflush(stdout);
    }
  }
  if (sums.caches > 0) {
    fmt::print(
        "\nxgb over the {} caches where random needs more than 50 trials: sum of trials to 95% "
        "{:.1f} (never: {}), sum @50 {:.3f}, @100 {:.3f}, @200 {:.3f}\n",
        sums.caches, sums.t95, args.trials, sums.at[0], sums.at[1], sums.at[2]);
  }
  return 0;
}
