// The analytical prior (cost_model/analytical_prior.h) on a sample timed on a GPU: how good a
// search's start is when it measures the sample in the prior's order, against random orders and
// against today's default start (the template's reference configurations, then random).
//
//   prior_study --log LOG [--first 32] [--arch sm_90] [--shuffles 2000] [--seed 1] [--json]
//
// LOG is a cutune tuning log of one operator task whose records are a sample of its space (the
// probe's 1,000 random valid configurations of the fp16 wgmma GEMM at 4096³: bench/README.md).
// Each configuration counts once (a repeated one at its fastest median); a failed one has
// throughput 0. Printed: best of the first F trials over the sample's best, trials to 95% of it
// (means and medians over the shuffles for the random orders), and the Spearman correlation of
// the prior's score with the measured throughput.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_cli.h"
#include "cost_model/ir_features.h"
#include "kernels/template.h"
#include "src/records/tuning_log.h"
#include "src/target/device_info.h"
#include "src/tune/order_study.h"
#include "src/tune/prior_margin.h"
#include "src/tune/search_policy.h"

using namespace cutune;

namespace {

struct Sample {
  std::vector<Config> configs;
  std::vector<double> throughput;
};

int fail(const std::string& what) {
  fmt::print(stderr, "prior_study: {}\n", what);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string log, arch = "sm_90";
  int first = 32, shuffles = 2000;
  uint64_t seed = 1;
  bool json = false;
  CLI::App app{"The analytical prior's order on a timed sample, against random and the default",
               "prior_study"};
  app.add_option("--log", log, "a tuning log of one operator task (a sample of its space)")
      ->required();
  app.add_option("--first", first, "trials counted for 'best of the first'")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--arch", arch, "the architecture the prior estimates for")
      ->check(bench::accepted_by([](const std::string& a) { target_limits(a); }, "ARCH"));
  app.add_option("--shuffles", shuffles, "random orders")->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", seed, "of the random orders");
  app.add_flag("--json", json, "one JSON object");
  if (int rc = bench::parse_command_line(app, argc, argv); rc >= 0) return rc;

  std::vector<Record> records;
  try {
    records = read_log(log).records;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (records.empty()) return fail(fmt::format("{}: no records", log));
  const TaskKey task = records.front().task;
  for (const Record& r : records) {
    if (!(r.task == task))
      return fail(fmt::format("{}: records of more than one task; the study takes one", log));
  }
  std::unique_ptr<Template> tmpl;
  try {
    tmpl = make_template(task.op, task.shape, task.template_name);
  } catch (const std::exception& e) {
    return fail(fmt::format("{}: {}", log, e.what()));
  }
  auto features = cost_model::make_ir_features(*tmpl, verifier_limits(arch));
  auto prior = make_prior_margin(*features, target_limits(arch),
                                 template_params(tmpl->name()).family);
  if (!prior) return fail(fmt::format("{}: no IR features", tmpl->name()));

  // Each configuration once, at its fastest.
  Sample s;
  std::map<uint64_t, size_t> at;
  for (const Record& r : records) {
    if (r.kind != RecordKind::trial) continue;
    Config c = tmpl->space().from_json(nlohmann::json{{"index", r.config_index}});
    const double t = throughput_of(r.result);
    auto [it, fresh] = at.try_emplace(r.config_index, s.configs.size());
    if (fresh) {
      s.configs.push_back(c);
      s.throughput.push_back(t);
    } else {
      s.throughput[it->second] = std::max(s.throughput[it->second], t);
    }
  }
  if (s.configs.size() < 2) return fail(fmt::format("{}: fewer than two trials", log));
  auto x = cost_model::FeatureMatrix::zeros(int(s.configs.size()), features->size());
  for (size_t i = 0; i < s.configs.size(); ++i) {
    features->extract(s.configs[i], {x.data.data() + i * x.cols, size_t(x.cols)});
  }
  const std::vector<float> score = prior->predict(x);
  std::vector<size_t> front;
  for (const Config& ref : tmpl->reference_configs()) {
    if (auto it = at.find(ref.index()); it != at.end()) front.push_back(it->second);
  }
  const OrderStudy study = study_orders(s.throughput, score, front, first, shuffles, seed);

  if (json) {
    auto figures = [](const OrderFigures& f) {
      return nlohmann::json{{"best_of_first", f.best_of_first}, {"trials_to_95", f.trials_to_95}};
    };
    nlohmann::json out{{"log", log},
                       {"template", tmpl->name()},
                       {"shape", task.shape},
                       {"device", task.device_name},
                       {"sample", study.sample},
                       {"ok", study.ok},
                       {"first", first},
                       {"references_in_sample", front.size()},
                       {"prior", figures(study.prior)},
                       {"default", figures(study.fronted)},
                       {"random", figures(study.random)},
                       {"spearman", study.spearman}};
    fmt::print("{}\n", out.dump());
    return 0;
  }
  fmt::print("{} {} on {}: {} configurations, {} ok; {} of the references in the sample\n",
             tmpl->name(), fmt::join(task.shape, "x"), task.device_name, study.sample, study.ok,
             front.size());
  fmt::print("{:<34} {:>18} {:>14}\n", "order", fmt::format("best of first {}", first),
             "trials to 95%");
  auto row = [](const std::string& name, const OrderFigures& f) {
    fmt::print("{:<34} {:>18.3f} {:>14.0f}\n", name, f.best_of_first, f.trials_to_95);
  };
  row("prior", study.prior);
  row("default (references, then random)", study.fronted);
  row("random", study.random);
  fmt::print("Spearman correlation of the prior with the measured throughput: {:.3f}\n",
             study.spearman);
  return 0;
}
