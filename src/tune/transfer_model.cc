#include "src/tune/transfer_model.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "kernels/template.h"
#include "src/records/tuning_log.h"
#include "src/tune/search_policy.h"

namespace cutune {

RecordFeaturizer template_featurizer(const cost_model::FeatureExtractor& features,
                                     const ir::TargetLimits& limits) {
  struct Other {
    std::unique_ptr<Template> tmpl;
    std::unique_ptr<cost_model::FeatureExtractor> features;  // null: the names differ
  };
  auto others = std::make_shared<std::map<TaskKey, Other>>();
  return [others, names = features.names(), limits](const Record& r, std::span<float> out) {
    auto it = others->find(r.task);
    if (it == others->end()) {
      Other o;
      try {
        o.tmpl = make_template(r.task.op, r.task.shape, r.task.template_name);
      } catch (const TaskError&) {
        return false;
      }
      // The features' names, not the schema, which names the template too: a template with
      // the same features (the same kernel for another element type) places its records too.
      o.features = cost_model::make_ir_features(*o.tmpl, limits);
      if (o.features->names() != names) o.features.reset();
      it = others->emplace(r.task, std::move(o)).first;
    }
    const Other& o = it->second;
    if (!o.features || r.config_index >= o.tmpl->space().size()) return false;
    o.features->extract(o.tmpl->space().get(r.config_index), out);
    return true;
  };
}

std::vector<float> normalised_labels(std::span<const double> throughput) {
  double best = 0;
  for (double t : throughput) best = std::max(best, t);
  std::vector<float> out(throughput.size(), 0.0f);
  if (best <= 0) return out;
  for (size_t i = 0; i < throughput.size(); ++i) out[i] = static_cast<float>(throughput[i] / best);
  return out;
}

TransferModel TransferModel::train(const std::vector<Record>& records, const TaskKey& exclude,
                                   const RecordFeaturizer& featurize, int cols, std::string schema,
                                   cost_model::RankModelOptions options) {
  std::vector<float> data;
  std::vector<float> labels;
  std::vector<unsigned> groups;
  std::vector<float> row(cols);
  for (const auto& [task, task_records] : group_by_task(records)) {
    if (task == exclude) continue;
    std::vector<double> throughput;
    size_t start = data.size();
    for (const Record& r : task_records) {
      if (!featurize(r, row)) continue;
      data.insert(data.end(), row.begin(), row.end());
      throughput.push_back(throughput_of(r.result));
    }
    std::vector<float> l = normalised_labels(throughput);
    bool any_ok = std::any_of(l.begin(), l.end(), [](float v) { return v > 0; });
    if (throughput.size() < 2 || !any_ok) {
      data.resize(start);
      continue;
    }
    labels.insert(labels.end(), l.begin(), l.end());
    groups.push_back(static_cast<unsigned>(throughput.size()));
  }
  if (groups.empty()) {
    throw std::invalid_argument(
        "no usable records of another task with this task's features (of its template, or of "
        "one with the same features)");
  }
  cost_model::FeatureMatrix x;
  x.rows = static_cast<int>(labels.size());
  x.cols = cols;
  x.data = std::move(data);
  TransferModel t;
  t.model_ = std::make_shared<cost_model::RankModel>(std::move(schema), options);
  t.model_->fit(x, labels, groups);
  t.tasks_ = static_cast<int>(groups.size());
  t.rows_ = x.rows;
  return t;
}

std::vector<float> TransferModel::predict(const cost_model::FeatureMatrix& x) const {
  std::lock_guard lock(*predict_mutex_);
  return model_->predict(x);
}

}  // namespace cutune
