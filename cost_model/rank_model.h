#pragma once
// The learned ranker: gradient-boosted trees (XGBoost) that order candidate configurations
// by predicted throughput. It sees only float feature matrices, never kernels or CUDA.
//
// Labels convention: a label is the candidate's throughput normalised within its task, so
// that the best measured configuration of the task has 1.0 and every other lies in [0, 1];
// configurations that failed (compile, launch, timeout, wrong answer) have 0. Higher
// predictions mean "expected to be faster"; only their order is meaningful.
//
// Groups: rows are laid out task by task; group_sizes[i] is the number of consecutive rows
// of the i-th task. Pairs are only formed within a group, so throughputs of different
// tasks are never compared. An empty group list means one group holding every row.
//
// Base margin: a per-row offset added to the trees' output before the loss is taken.
// Transfer learning fits a local model on top of a global model's predictions by passing
// them as the base margin to both fit() and predict(). A model fitted with a base margin
// predicts only the correction; pass the same kind of margin when predicting.
//
// Schema: a model records the name/version of the feature extraction that produced its
// inputs (e.g. "cutune-loop-features/3") and its column count; load() refuses a model made
// under another schema, since its columns would mean something else.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cutune::cost_model {

// A dense row-major matrix of features: data[r * cols + c]. NaN marks a missing value.
// Invariant: data.size() == rows * cols.
struct FeatureMatrix {
  int rows = 0;
  int cols = 0;
  std::vector<float> data;

  static FeatureMatrix zeros(int rows, int cols);

  float& at(int r, int c) { return data[static_cast<size_t>(r) * cols + c]; }
  float at(int r, int c) const { return data[static_cast<size_t>(r) * cols + c]; }
  std::span<const float> row(int r) const {
    return {data.data() + static_cast<size_t>(r) * cols, static_cast<size_t>(cols)};
  }
};

// The rows of x at the given indices, in that order.
FeatureMatrix select_rows(const FeatureMatrix& x, std::span<const int> indices);

// The columns of x a tree can split on, in order, each once: dropped are columns constant
// over the rows, columns equal bit for bit to an earlier kept one, and columns that order the
// rows exactly as an earlier kept one does (the same ranks, ties included) where both have
// at most max_bin / 2 distinct values and no NaN. Trees fitted on the kept columns are the
// trees fitted on all (rank_model.cc says why). With `among` not empty only those columns
// are examined; when `among` is this function's result for a matrix holding every row of x
// (x a subset or a bootstrap resample of its rows), the result is the same as examining all
// columns, since a column constant or a copy over more rows is one over fewer.
std::vector<int> splittable_columns(const FeatureMatrix& x, int max_bin,
                                    std::span<const int> among = {});

// rank:pairwise minimises the pairwise logistic loss within each group,
//   L = sum over pairs (i, j) with c_i != c_j of log(1 + exp(-sign(c_i - c_j) (f(x_i) - f(x_j)))),
// and uses the float labels only through their order (checked in tests/cost_model; the
// NDCG and MAP objectives would need integer relevance grades instead). regression
// (reg:squarederror) fits the labels themselves and ignores groups; it is kept as the
// alternative to compare. ndcg (rank:ndcg, LambdaMART) samples the same pairs but weights each
// by how much swapping it would change the NDCG of the current order, with gains 2^g - 1 of
// integer grades g = round(grades x label): pairs between two rows of grade 0 weigh nothing,
// swaps near the top weigh most.
enum class RankObjective { pairwise, regression, ndcg };

// Boosting parameters. Defaults follow AutoTVM's XGBoost cost model.
struct RankModelOptions {
  RankObjective objective = RankObjective::pairwise;
  int rounds = 150;  // boosting rounds (trees)
  int max_depth = 6;
  double eta = 0.3;               // learning rate
  double gamma = 1e-4;            // minimum loss reduction to split a node
  double min_child_weight = 1.0;  // minimum hessian sum in a leaf
  double subsample = 1.0;         // share of rows sampled per tree, in (0, 1]
  double colsample = 1.0;         // share of columns sampled per tree, in (0, 1]
  double lambda = 1.0;            // L2 regularisation of leaf weights
  // pairwise: partners drawn per row and tree, each from the rows of another label (XGBoost's
  // num_pairsample). One pair a row gives a tree few comparisons when rows are few.
  int pairs_per_row = 1;
  // ndcg: relevance grades 0..grades (XGBoost 1.7 casts labels to int and takes 2^g - 1).
  int grades = 8;
  // ndcg: grade g = round(grades x (1 + log2(label) / octaves)), at least 0: a label 2^-octaves
  // of the best or less is grade 0.
  double octaves = 4;
  // Histogram bins per feature. Split search costs bins x features x nodes per tree and
  // dominates fitting; 64 keeps 1000x100 under a second single-threaded (256, XGBoost's
  // default, is 3-4x slower) and loses no held-out accuracy at a few thousand rows.
  int max_bin = 64;
  int nthread = 1;
  uint64_t seed = 0;  // fitting twice with the same seed gives the same model
  // Train on the columns a tree can split on only: those not constant over the training rows,
  // each once (the first of identical columns). The trees are the same as with every column
  // (XGBoost breaks ties between equal gains towards the lower column; tests check the
  // predictions bit for bit), and fitting costs in proportion to the columns kept (IR
  // features: about 150 of 462 vary over a GEMM template's records).
  bool drop_redundant_columns = true;
};

class TreeEnsemble;

// A move-only owner of one XGBoost booster. fit() trains from scratch; boost() continues a
// trained booster with more trees (warm start). Predictions
// come from a flat copy of its trees (cost_model/tree_ensemble.h), the same floats as
// XGBoost's predictor at a fraction of its per-call cost.
// Calls on one model must not overlap; distinct models may be used from different threads.
class RankModel {
 public:
  // An untrained model for features of the given schema (a name/version string, non-empty).
  explicit RankModel(std::string schema, RankModelOptions options = {});
  ~RankModel();
  RankModel(RankModel&& other) noexcept;
  RankModel& operator=(RankModel&& other) noexcept;
  RankModel(const RankModel&) = delete;
  RankModel& operator=(const RankModel&) = delete;

  // Discards the current model and trains a fresh one; if fitting throws, the model is left
  // untrained. labels and base_margin (if not empty) have one entry per row; group_sizes
  // sum to x.rows (or is empty: one group). x.rows >= 1, x.cols >= 1.
  // Throws std::invalid_argument on inconsistent sizes, std::runtime_error if XGBoost fails.
  void fit(const FeatureMatrix& x, std::span<const float> labels,
           std::span<const unsigned> group_sizes = {}, std::span<const float> base_margin = {});

  // fit() when the rows of x are drawn from a larger matrix whose splittable_columns (at this
  // model's max_bin) are `candidates`: only those columns are examined for the ones to keep,
  // which gives the same columns, hence the same model, at a fraction of the cost when x is
  // wide (a bootstrap member of an ensemble). Empty candidates: fit(). Throws
  // std::invalid_argument, in addition, on a candidate outside [0, x.cols).
  void fit_among(const FeatureMatrix& x, std::span<const int> candidates,
                 std::span<const float> labels, std::span<const unsigned> group_sizes = {},
                 std::span<const float> base_margin = {});

  // Warm start: adds `rounds` trees to the trained booster, each fitted (as in fit) to the
  // loss's gradient at the current predictions of all its trees on these rows, which may be
  // other rows than the last fit's (more records, another bootstrap resample). The booster
  // keeps reading the columns chosen at the last fit(): a column constant then but varying
  // now is not split on until the next fit(). Predictions then come from every tree, old and
  // new. Same argument rules and exceptions as fit(); requires trained() and
  // x.cols == feature_count(). If XGBoost fails the model is left untrained.
  void boost(const FeatureMatrix& x, std::span<const float> labels, int rounds,
             std::span<const unsigned> group_sizes = {}, std::span<const float> base_margin = {});

  // Trees in the booster (options().rounds after fit(), more after boost()); 0 untrained.
  int trees() const { return trees_count_; }

  // One score per row of x; higher means expected faster. Requires trained() and
  // x.cols == feature_count(); base_margin, if not empty, has one entry per row.
  std::vector<float> predict(const FeatureMatrix& x, std::span<const float> base_margin = {}) const;
  // The same through XGBoost's own predictor (XGBoosterPredictFromDense), for comparison.
  std::vector<float> predict_with_xgboost(const FeatureMatrix& x,
                                          std::span<const float> base_margin = {}) const;

  // Writes the model (trees, parameters, schema and feature count) as XGBoost JSON.
  void save(const std::filesystem::path& path) const;

  // Reads a model written by save(). Throws std::runtime_error with a one-line message if
  // the file is unreadable or not a model, or if its schema or feature count differ from
  // the expected ones.
  static RankModel load(const std::filesystem::path& path, std::string_view expected_schema,
                        int expected_cols);

  bool trained() const { return booster_ != nullptr; }
  // Number of columns the model was trained on; 0 while untrained.
  int feature_count() const { return feature_count_; }
  const std::string& schema() const { return schema_; }
  const RankModelOptions& options() const { return options_; }
  // The input columns the booster was trained on, in its feature order (all, unless
  // drop_redundant_columns dropped some); empty while untrained.
  const std::vector<int>& columns() const { return columns_; }

 private:
  void free_booster() noexcept;
  // Sets the parameters of booster_, boosts options_.rounds trees on the DMatrix `train`
  // and records the schema attributes.
  void train_booster(void* train, int cols);
  // Checks fit/boost arguments (throws std::invalid_argument).
  static void check_fit_args(const FeatureMatrix& x, std::span<const float> labels,
                             std::span<const unsigned> group_sizes,
                             std::span<const float> base_margin, const char* who);
  // Copies booster_'s trees into trees_.
  void flatten();
  void check_predict_args(const FeatureMatrix& x, std::span<const float> base_margin) const;

  std::string schema_;
  RankModelOptions options_;
  int feature_count_ = 0;
  int trees_count_ = 0;
  void* booster_ = nullptr;   // XGBoost's BoosterHandle; null while untrained
  std::vector<int> columns_;  // booster feature -> input column
  std::unique_ptr<TreeEnsemble> trees_;
};

}  // namespace cutune::cost_model
