#pragma once
// Transfer learning: a global ranking model trained on the records of other tasks of the same
// template (or, for replayed caches, of the same space measured on other GPUs). Features are
// shape-invariant for one schema, so the global model's scores carry over; the model-based
// tuner adds them, weighted, as the base margin of its local model:
//
//   margin(x) = w(n) · global(x),   w(n) = 1 / (1 + n / half_weight_at),
//
// n being the number of local measurements, so the global model guides the first rounds and
// fades as local data accumulates (w = 1/2 at n = half_weight_at).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cost_model/features.h"
#include "cost_model/rank_model.h"
#include "src/ir/verify.h"
#include "src/records/record.h"
#include "src/tune/margin_source.h"

namespace cutune {

// Throughputs scaled so the task's best is 1; failures (0) stay 0. All zeros if none is
// positive.
std::vector<float> normalised_labels(std::span<const double> throughput);

// Fills `out` (the schema's length) with the features of a record's configuration, or returns
// false when the record cannot be placed in the schema (another template, a knob value the
// space lacks): such records are skipped.
using RecordFeaturizer = std::function<bool(const Record& record, std::span<float> out)>;

// Featurizes records of other tasks by the IR features of their own configurations (each
// task's template built once, on first sight, with `limits`): tasks of any template whose IR
// features have the same names as `features`, i.e. the same template at other shapes, and its
// variants for other element types (gemm_fp16_wgmma_nt's records serve gemm_bf16_wgmma_nt).
// Records of tasks no template accepts, of templates with other features, or of
// configurations outside their space are skipped. Only the names of `features` are kept.
RecordFeaturizer template_featurizer(const cost_model::FeatureExtractor& features,
                                     const ir::TargetLimits& limits);

class TransferModel final : public MarginSource {
 public:
  // One query group per task; records of `exclude` (the task being tuned) are left out, as are
  // tasks with fewer than two usable records or no ok one. std::invalid_argument (one line)
  // when nothing is left to train on.
  static TransferModel train(const std::vector<Record>& records, const TaskKey& exclude,
                             const RecordFeaturizer& featurize, int cols, std::string schema,
                             cost_model::RankModelOptions options = {});

  // Safe to call from several threads at once (one model may serve many tuning runs, as in
  // a replay study); calls are serialised.
  std::vector<float> predict(const cost_model::FeatureMatrix& x) const override;
  double weight(int local_measurements) const override {
    return fading_weight(local_measurements, half_weight_at_);
  }
  void set_half_weight_at(double n) { half_weight_at_ = n; }

  int tasks() const { return tasks_; }
  int rows() const { return rows_; }
  const std::string& schema() const { return model_->schema(); }

 private:
  std::shared_ptr<cost_model::RankModel> model_;
  std::shared_ptr<std::mutex> predict_mutex_ = std::make_shared<std::mutex>();
  int tasks_ = 0;
  int rows_ = 0;
  double half_weight_at_ = 64;
};

}  // namespace cutune
