#include "src/tune/tuning_session.h"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/base/output_file.h"
#include "src/records/tuning_log.h"
#include "src/replay/kt_cache.h"
#include "src/tune/policies.h"
#include "src/tune/replay_measurer_adapter.h"

namespace cutune {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw UserError(what);
}

// A Kernel Tuner cache (gzip, or one JSON document whose first line is not a record) rather
// than a tuning log (JSON lines, each with a "task").
bool is_kt_cache(const std::filesystem::path& path) {
  if (path.extension() == ".gz") return true;
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return false;  // read_log reports the problem
  nlohmann::json j = nlohmann::json::parse(first, nullptr, /*allow_exceptions=*/false);
  return !(j.is_object() && j.contains("task"));
}

// The fields in which two task keys differ, as "device 'A' (this run: 'B')".
std::vector<std::string> differences(const TaskKey& theirs, const TaskKey& ours) {
  std::vector<std::string> d;
  const auto field = [&](const char* name, const std::string& a, const std::string& b) {
    if (a != b) d.push_back(fmt::format("{} '{}' (this run: '{}')", name, a, b));
  };
  field("operator", theirs.op, ours.op);
  field("template", theirs.template_name, ours.template_name);
  if (theirs.shape != ours.shape) {
    d.push_back(fmt::format("shape {} (this run: {})", fmt::join(theirs.shape, ","),
                            fmt::join(ours.shape, ",")));
  }
  field("dtype", theirs.dtype, ours.dtype);
  field("arch", theirs.target_arch, ours.target_arch);
  field("device", theirs.device_name, ours.device_name);
  return d;
}

}  // namespace

void SearchOptions::validate() const {
  require(trials >= 1, fmt::format("--trials must be >= 1 (got {})", trials));
  require(batch >= 1, fmt::format("--batch must be >= 1 (got {})", batch));
  require(remeasure_top >= 0, fmt::format("--remeasure-top must be >= 0 (got {})", remeasure_top));
  require(remeasure_rounds >= 1,
          fmt::format("--remeasure-rounds must be >= 1 (got {})", remeasure_rounds));
  if (tuner != TunerKind::xgb) return;
  try {
    model.validate();
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what());
  }
}

TuneOptions SearchOptions::tune_options() const {
  TuneOptions o;
  o.trials = trials;
  o.batch = batch;
  o.seed = seed;
  o.remeasure_top = remeasure_top;
  o.remeasure_rounds = remeasure_rounds;
  o.set_pipeline(pipeline);
  o.seed_configs = seed_configs;
  return o;
}

TaskPolicyFactory SearchOptions::policy_factory() const {
  ModelPolicyOptions m = model;
  m.plan_size = batch;
  return [kind = tuner, m](const ConfigSpace& space, const cost_model::FeatureExtractor* f,
                           std::shared_ptr<const TransferModel> transfer) {
    ModelPolicyOptions with = m;
    if (transfer) with.transfer = std::move(transfer);
    return make_search_policy(kind, space, f, with);
  };
}

TuningSession::TuningSession(TuningTask task, SearchOptions search, TransferSources transfer)
    : task_(std::move(task)), search_(std::move(search)) {
  search_.validate();
  search_.model.plan_size = search_.batch;
  if (transfer.paths.empty() && transfer.records.empty()) return;
  if (search_.tuner != TunerKind::xgb) {
    if (!transfer.required) return;
    throw UserError(
        fmt::format("--transfer-from needs --tuner xgb (got {})", to_string(search_.tuner)));
  }
  CUTUNE_CHECK(static_cast<bool>(transfer.featurize), "transfer sources without a featurizer");
  std::vector<Record> records = read_transfer_sources(transfer.paths);
  records.insert(records.end(), transfer.records.begin(), transfer.records.end());
  try {
    search_.model.transfer = std::make_shared<TransferModel>(TransferModel::train(
        records, task_.key, transfer.featurize, task_.features.size(), task_.features.schema()));
  } catch (const std::invalid_argument& e) {
    if (transfer.required) throw UserError(fmt::format("--transfer-from: {}", e.what()));
  }
}

std::unique_ptr<SearchPolicy> TuningSession::make_policy() const {
  return make_search_policy(search_.tuner, task_.space, &task_.features, search_.model);
}

int TuningSession::transfer_tasks() const {
  return search_.model.transfer ? search_.model.transfer->tasks() : 0;
}

int TuningSession::transfer_rows() const {
  return search_.model.transfer ? search_.model.transfer->rows() : 0;
}

TuningOutcome TuningSession::run(Measurer& measurer, const LogOptions& log,
                                 RunControls controls) const {
  if (!log.path.empty()) {
    if (std::optional<std::string> why = log_problem(log.path, log.mode, task_.key)) {
      throw UserError(*why);
    }
  }
  TuneOptions o = search_.tune_options();
  o.log = log.path;
  o.resume = log.mode != LogMode::fresh;
  o.exclusive_log = true;
  o.progress = controls.progress;
  o.flops = task_.flops;
  o.stop = controls.stop;
  std::unique_ptr<SearchPolicy> policy = make_policy();
  Tuner tuner(task_.space, measurer, *policy, task_.key, o);
  TuningOutcome out;
  out.summary = tuner.run();
  out.records = tuner.records();
  return out;
}

std::vector<Record> read_transfer_sources(const std::vector<std::filesystem::path>& paths) {
  std::vector<Record> all;
  for (const std::filesystem::path& p : paths) {
    if (!std::filesystem::exists(p)) throw UserError(fmt::format("no such file: {}", p.string()));
    if (std::filesystem::is_directory(p)) {
      throw UserError(
          fmt::format("{} is a directory; expected a tuning log or a Kernel Tuner "
                      "cache",
                      p.string()));
    }
    if (is_kt_cache(p)) {
      std::vector<Record> r =
          cache_records(replay::ReplayTask::from_cache(replay::load_kt_cache(p.string())));
      all.insert(all.end(), r.begin(), r.end());
      continue;
    }
    LogReadResult r = read_log(p);
    for (const std::string& w : r.warnings) fmt::print(stderr, "cutune: warning: {}\n", w);
    all.insert(all.end(), r.records.begin(), r.records.end());
  }
  return all;
}

RecordFeaturizer knob_featurizer(const ConfigSpace& space,
                                 const cost_model::FeatureExtractor& features) {
  return [&space, &features](const Record& r, std::span<float> out) {
    try {
      features.extract(space.from_json(nlohmann::json{{"knobs", r.knobs}}), out);
      return true;
    } catch (const ConfigError&) {
      return false;
    }
  };
}

std::optional<std::string> log_problem(const std::filesystem::path& log, LogMode mode,
                                       const TaskKey& key) {
  namespace fs = std::filesystem;
  const std::string name = log.string();
  std::error_code ec;
  try {
    check_output({.path = log, .flag = "--log"}, OutputMode::append);
  } catch (const UserError& e) {
    return e.what();  // a directory, FIFO, device or symbolic link: never appended to
  }
  if (!fs::is_regular_file(log, ec) || fs::file_size(log, ec) == 0) return std::nullopt;
  LogReadResult read;
  try {
    read = read_log(log);
  } catch (const RecordError& e) {
    return fmt::format("{} is not a cutune tuning log ({}); name another --log", name, e.what());
  }
  if (mode == LogMode::fresh) {
    return fmt::format(
        "log {} exists ({} records); add --resume to continue it, or name a new "
        "--log",
        name, read.records.size());
  }
  if (mode == LogMode::shared || read.records.empty()) return std::nullopt;
  const TaskKey* closest = nullptr;
  size_t fewest = SIZE_MAX;
  for (const Record& r : read.records) {
    if (r.task == key) return std::nullopt;
    const size_t n = differences(r.task, key).size();
    if (n < fewest) {
      fewest = n;
      closest = &r.task;
    }
  }
  return fmt::format(
      "--resume: {} holds no records of this task; its closest task differs in "
      "{}",
      name, fmt::join(differences(*closest, key), ", "));
}

}  // namespace cutune
