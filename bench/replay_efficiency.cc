// Search efficiency on replayed real measurements: for every Kernel Tuner cache under
// ../shared/datasets and every tuner, the median over seeds of best-found / optimum after
// 25..400 trials, the median trials to 95% of the optimum, and the Kernel Tuner score
// P = (tuner - random) / (optimum - random) at 200 trials, random's expectation exact.
// Also transfer learning across GPUs for caches that share a space.
//
//   replay_efficiency [--seeds 20] [--trials 400] [--tuners xgb,ga,random,grid] [--only SUBSTR]
//                     [--data DIR] [--per-seed] [--curves FILE] [--needle] [--transfer] ...
//
// `replay_efficiency --help` lists every option; the model's are ModelPolicyOptions' fields
// (src/tune/model/options.h), for measuring one change at a time against the default.

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_cli.h"
#include "cost_model/features.h"
#include "src/replay/kt_cache.h"
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
  double transfer_half = 64;  // the local records at which the global model's weight is 1/2
  std::string curves;
  bool needle = false;
  double needle_plateau = 0.89, needle_neighbour = 0.8;
  ModelPolicyOptions model;  // --classic, --kappa, ...: the xgb tuner's options
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

std::string cell(std::optional<double> v, const char* fmt_spec = "{:.0f}") {
  return v ? fmt::format(fmt::runtime(fmt_spec), *v) : std::string("-");
}

// "  NAME seeds N..: trials to 95%: t0 t1 ..." (-1: never), the line bench scripts compare.
void print_per_seed(const std::string& name, int seed_offset, const StudyResult& r) {
  std::string seeds;
  for (const auto& t : r.trials_to(0.95)) seeds += fmt::format(" {}", t ? *t : -1);
  fmt::print("  {} seeds {}..: trials to 95%:{}\n", name, seed_offset, seeds);
}

// One row of the transfer table: xgb on `target` without and with a global model trained on
// the whole of `source` (another GPU's cache of the same space).
void transfer_row(const std::string& source_name, const replay::ReplayTask& source,
                  const std::string& target_name, const replay::ReplayTask& target,
                  const Args& args, std::map<std::string, StudyResult>& runs) {
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
  auto global = std::make_shared<TransferModel>(
      TransferModel::train(cache_records(source), replay_task_key(target), featurize,
                           features->size(), features->schema()));
  global->set_half_weight_at(args.transfer_half);
  transfer.transfer = global;
  StudyOptions so;
  so.trials = args.trials;
  so.seeds = args.seeds;
  so.batch = args.batch;
  so.threads = args.threads;
  so.first_seed = static_cast<uint64_t>(args.seed_offset);
  // Runs by name: the target's own (without transfer: the same for every source, so once per
  // target) and each pair's.
  auto study = [&](const std::string& key, const ModelPolicyOptions& mo) -> const StudyResult& {
    auto it = runs.find(key);
    if (it == runs.end()) {
      it = runs.emplace(key,
                        run_replay_study(
                            target,
                            [&] { return make_model_policy(target.space(), *features, mo); }, so))
               .first;
    }
    return it->second;
  };
  const std::string pair = source_name + " -> " + target_name;
  const StudyResult* r[2] = {&study(target_name, plain), &study(pair, transfer)};
  std::string cells;
  for (const StudyResult* x : r) {
    for (int b : {25, 50, 100}) cells += fmt::format(" {:.3f} |", x->median_ratio_at(b));
  }
  fmt::print("| {} | {} |{} {} | {} |\n", source_name, target_name, cells,
             cell(r[0]->median_trials_to(0.95)), cell(r[1]->median_trials_to(0.95)));
  if (args.per_seed) {
    print_per_seed(target_name, args.seed_offset, *r[0]);
    print_per_seed(pair, args.seed_offset, *r[1]);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  ModelPolicyOptions& m = args.model;
  CLI::App app{"Search efficiency on replayed Kernel Tuner caches", "replay_efficiency"};
  // Presets replace the model's options where they appear on the command line; the options
  // below are assigned after the whole line is read, so they override any preset.
  auto preset = [&](const std::string& name, const std::string& what, auto apply) {
    app.add_flag_callback(name, apply, what)->trigger_on_parse()->group("Presets");
  };
  preset("--quick", "5 seeds, 200 trials", [&] { args.seeds = 5, args.trials = 200; });
  preset("--classic", "xgb as AutoTVM first published it (ModelPolicyOptions::classic())",
         [&] { m = m.classic(); });

  const auto positive = bench::positive();
  app.add_option("--seeds", args.seeds, "seeds a tuner runs (the median is printed)")
      ->check(positive);
  app.add_option("--trials", args.trials, "trials a run")->check(positive);
  app.add_option("--batch", args.batch, "the plan size")->check(positive);
  app.add_option("--threads", args.threads, "seeds in parallel")->check(positive);
  app.add_option("--seed-offset,--first-seed", args.seed_offset,
                 "seeds N .. N + seeds - 1 instead of 0 ..: fresh seeds to confirm a choice");
  app.add_flag("--per-seed", args.per_seed, "also print each xgb seed's trials to 95%");
  app.add_option("--data", args.data, "the folder of Kernel Tuner caches");
  app.add_option("--tuners", args.tuners, "tuners, comma-separated")
      ->delimiter(',')
      ->check(bench::accepted_by(parse_tuner_kind, "TUNER"));
  app.add_option("--only", args.only, "only caches whose path holds this");
  app.add_flag("--transfer", args.transfer,
               "only the transfer table: ordered pairs of caches of one folder");
  app.add_option("--transfer-half", args.transfer_half,
                 "transfer: the local records at which the global model's weight is 1/2")
      ->check(positive);
  app.add_option("--curves", args.curves,
                 "also append every seed's improvement points [trial, ms] to FILE, a JSON line "
                 "per cache, tuner and seed (for bench/peer_compare)");
  app.add_option("--label", args.label, "the xgb tuner's name in --curves");
  app.add_flag("--needle", args.needle,
               "each cache's needle variant instead (make_needle_cache: only its optimum within "
               "95%, two knob changes from a plateau at 0.89)");
  app.add_option("--needle-neighbour", args.needle_neighbour,
                 "the needle's one-knob neighbours' ratio (0.8)");

  // ModelPolicyOptions, one change at a time (each field's comment in src/tune/model/options.h).
  const std::string model = "Model (ModelPolicyOptions)";
  auto opt = [&](const std::string& name, auto& field, const std::string& what) {
    return app.add_option(name, field, what)->group(model);
  };
  auto flag = [&](const std::string& name, bool& field, const std::string& what) {
    return app.add_flag(name, field, what)->group(model);
  };
  auto share = CLI::Range(0.0, 1.0);
  opt("--first-batch", m.first_batch, "the random first batch");
  opt("--round-fraction", m.round_fraction, "a round's share of the records");
  opt("--min-batch", m.min_batch, "the smallest round");
  opt("--bound-bias", m.bound_bias,
      "each choice knob of a first-batch draw at a bound with this probability")
      ->check(share);
  opt("--kappa", m.kappa, "the weight of the members' spread");
  opt("--epsilon", m.epsilon, "the random share of a round")->check(share);
  opt("--ensemble", m.ensemble, "boosters")->check(positive);
  opt("--incumbent-share", m.trust.share, "the trust region around the best")->check(share);
  opt("--incumbent-max", m.trust.max_share, "its largest share after stalls")->check(share);
  opt("--incumbent-centres", m.trust.centres, "tied bests the trust region centres on");
  flag("--incumbent-support", m.trust.support, "ties' candidates ranked by the ties near them");
  opt("--plateau-share", m.trust.plateau_share, "the trust region's share on a plateau")
      ->check(share);
  opt("--basin-share", m.basin.share, "the trust region's share climbing in a second basin")
      ->check(share);
  opt("--basin-stall", m.basin.stall, "... after N plans without a better best");
  opt("--basin-gain", m.basin.gain, "... better by at least this share (0: any gain)")
      ->check(share);
  opt("--gp-until", m.gp_until, "a Gaussian process ranks while the records are fewer (0: off)");
  opt("--gp-kappa", m.gp_kappa, "... by mean + X sd");
  opt("--warm-trees", m.refit.warm_trees, "trees a warm refit adds");
  opt("--chains", m.annealing.chains, "the annealing's chains");
  opt("--temp", m.annealing.temp_start, "the annealing's starting temperature");
  opt("--max-depth", m.model.max_depth, "the boosters' tree depth");
  opt("--model-rounds", m.model.rounds, "the boosters' trees");
  opt("--eta", m.model.eta, "the boosters' learning rate");
  opt("--min-child-weight", m.model.min_child_weight, "the boosters' min_child_weight");
  opt("--pairs-per-row", m.model.pairs_per_row, "rank pairs a record");
  std::string objective;
  opt("--objective", objective, "the boosters' objective")
      ->check(CLI::IsMember({"pairwise", "ndcg", "regression"}));
  opt("--grades", m.model.grades, "the ranking's relevance grades");
  opt("--octaves", m.model.octaves, "the grades' span in octaves");
  if (int rc = bench::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "replay_efficiency: {}\n", e.what());
    return 2;
  }
  if (objective == "pairwise") m.model.objective = cost_model::RankObjective::pairwise;
  if (objective == "ndcg") m.model.objective = cost_model::RankObjective::ndcg;
  if (objective == "regression") m.model.objective = cost_model::RankObjective::regression;

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
    std::map<std::string, StudyResult> runs;
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
        transfer_row(source_name, source, target_name, target, args, runs);
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
  size_t cache_index = 0;
  for (const std::string& path : caches) {
    ++cache_index;
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
      const auto start = std::chrono::steady_clock::now();
      StudyResult r = run_replay_study(
          task, [&] { return make_search_policy(kind, task.space(), features.get(), mo); }, so,
          [&](int done, int total) {
            // Progress: this cache's place, the seeds done, their rate and the time left.
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double rate = s > 0 ? done / s : 0;
            fmt::print(stderr, "\r{} {} (cache {}/{}): seed {}/{}, {:.2f} seeds/s, ETA {:.0f} s   ",
                       name, tuner, cache_index, caches.size(), done, total, rate,
                       rate > 0 ? (total - done) / rate : 0.0);
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
        if (args.per_seed) print_per_seed(name, args.seed_offset, r);
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
