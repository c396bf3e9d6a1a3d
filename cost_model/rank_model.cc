#include "cost_model/rank_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost_model/tree_ensemble.h"

// Throws with file:line, the call as written and XGBoost's own message.
#define CUTUNE_XGB_CHECK(call)                                                               \
  do {                                                                                       \
    if ((call) != 0) {                                                                       \
      throw std::runtime_error(                                                              \
          fmt::format("{}:{}: {} failed: {}", __FILE__, __LINE__, #call, last_xgb_error())); \
    }                                                                                        \
  } while (0)

namespace cutune::cost_model {
namespace {

// XGBoost appends a stack trace of its own internals; the first line says what went wrong.
std::string last_xgb_error() {
  std::string text = XGBGetLastError();
  return text.substr(0, text.find('\n'));
}

constexpr const char* kSchemaAttr = "cutune_feature_schema";
constexpr const char* kFeatureCountAttr = "cutune_feature_count";
constexpr const char* kOptionsAttr = "cutune_options";
constexpr const char* kColumnsAttr = "cutune_columns";
constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();

// Owns one DMatrix for the duration of a call.
class DMatrix {
 public:
  // A copy of x's values.
  static DMatrix dense(const FeatureMatrix& x, int nthread) {
    DMatrix m;
    CUTUNE_XGB_CHECK(
        XGDMatrixCreateFromMat_omp(x.data.data(), x.rows, x.cols, kMissing, &m.handle_, nthread));
    return m;
  }
  // No values of its own: carries meta info (the base margin) for inplace prediction.
  static DMatrix proxy() {
    DMatrix m;
    CUTUNE_XGB_CHECK(XGProxyDMatrixCreate(&m.handle_));
    return m;
  }
  DMatrix(DMatrix&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  DMatrix& operator=(DMatrix&&) = delete;
  ~DMatrix() {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;

  void set_floats(const char* field, std::span<const float> values) {
    CUTUNE_XGB_CHECK(XGDMatrixSetFloatInfo(handle_, field, values.data(), values.size()));
  }
  void set_uints(const char* field, std::span<const unsigned> values) {
    CUTUNE_XGB_CHECK(XGDMatrixSetUIntInfo(handle_, field, values.data(), values.size()));
  }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrix() = default;

  DMatrixHandle handle_ = nullptr;
};

const char* objective_name(RankObjective objective) {
  switch (objective) {
    case RankObjective::pairwise:
      return "rank:pairwise";
    case RankObjective::regression:
      return "reg:squarederror";
    case RankObjective::ndcg:
      return "rank:ndcg";
  }
  throw std::logic_error("objective_name: unknown RankObjective");
}

nlohmann::json options_to_json(const RankModelOptions& o) {
  return {{"objective", objective_name(o.objective)},
          {"rounds", o.rounds},
          {"max_depth", o.max_depth},
          {"eta", o.eta},
          {"gamma", o.gamma},
          {"min_child_weight", o.min_child_weight},
          {"subsample", o.subsample},
          {"colsample", o.colsample},
          {"lambda", o.lambda},
          {"pairs_per_row", o.pairs_per_row},
          {"grades", o.grades},
          {"octaves", o.octaves},
          {"max_bin", o.max_bin},
          {"nthread", o.nthread},
          {"seed", o.seed},
          {"drop_redundant_columns", o.drop_redundant_columns}};
}

RankModelOptions options_from_json(const nlohmann::json& j) {
  RankModelOptions o;
  const std::string objective = j.at("objective").get<std::string>();
  o.objective = objective == objective_name(RankObjective::regression) ? RankObjective::regression
                : objective == objective_name(RankObjective::ndcg)     ? RankObjective::ndcg
                                                                       : RankObjective::pairwise;
  o.rounds = j.at("rounds").get<int>();
  o.max_depth = j.at("max_depth").get<int>();
  o.eta = j.at("eta").get<double>();
  o.gamma = j.at("gamma").get<double>();
  o.min_child_weight = j.at("min_child_weight").get<double>();
  o.subsample = j.at("subsample").get<double>();
  o.colsample = j.at("colsample").get<double>();
  o.lambda = j.at("lambda").get<double>();
  o.pairs_per_row = j.value("pairs_per_row", 1);  // older models: XGBoost's default
  o.grades = j.value("grades", 8);
  o.octaves = j.value("octaves", 4.0);
  o.max_bin = j.at("max_bin").get<int>();
  o.nthread = j.at("nthread").get<int>();
  o.seed = j.at("seed").get<uint64_t>();
  o.drop_redundant_columns = j.value("drop_redundant_columns", false);  // older models: all
  return o;
}

// What XGBoost is given as labels: the labels themselves, except for ndcg, whose gains are
// 2^g - 1 of integer grades (XGBoost 1.7 truncates a float label to int).
std::vector<float> training_labels(std::span<const float> labels, const RankModelOptions& o) {
  std::vector<float> out(labels.begin(), labels.end());
  if (o.objective == RankObjective::ndcg) {
    for (float& v : out) {
      const double g = v > 0 ? o.grades * (1.0 + std::log2(std::min(1.0, double(v))) / o.octaves) : 0;
      v = float(std::round(std::max(0.0, g)));
    }
  }
  return out;
}

void check_options(const RankModelOptions& o) {
  auto fail = [](const char* what) {
    throw std::invalid_argument(fmt::format("RankModelOptions: {}", what));
  };
  if (o.rounds < 1) fail("rounds must be >= 1");
  if (o.max_depth < 1) fail("max_depth must be >= 1");
  if (o.pairs_per_row < 1) fail("pairs_per_row must be >= 1");
  if (o.grades < 1 || o.grades > 30) fail("grades must be in [1, 30]");
  if (!(o.octaves > 0)) fail("octaves must be > 0");
  // XGBoost 1.7 weights each pair's hessian by its |delta NDCG|, which is far below 1 with more
  // than a few rows, so the default minimum of 1 stops every split and the model is constant.
  if (o.objective == RankObjective::ndcg && o.min_child_weight != 0) {
    fail("ndcg needs min_child_weight 0 (its hessians are |delta NDCG|-weighted, far below 1)");
  }
  if (!(o.eta > 0)) fail("eta must be > 0");
  if (!(o.subsample > 0 && o.subsample <= 1)) fail("subsample must be in (0, 1]");
  if (!(o.colsample > 0 && o.colsample <= 1)) fail("colsample must be in (0, 1]");
  if (o.max_bin < 2) fail("max_bin must be >= 2");
  if (o.nthread < 1) fail("nthread must be >= 1");
}

void set_param(BoosterHandle booster, const char* name, const std::string& value) {
  CUTUNE_XGB_CHECK(XGBoosterSetParam(booster, name, value.c_str()));
}

std::string get_attr(BoosterHandle booster, const char* key) {
  const char* out = nullptr;
  int found = 0;
  CUTUNE_XGB_CHECK(XGBoosterGetAttr(booster, key, &out, &found));
  return found ? std::string(out) : std::string();
}

FeatureMatrix select_columns(const FeatureMatrix& x, const std::vector<int>& columns) {
  FeatureMatrix out = FeatureMatrix::zeros(x.rows, static_cast<int>(columns.size()));
  for (int r = 0; r < x.rows; ++r) {
    const float* in = x.data.data() + static_cast<size_t>(r) * x.cols;
    float* o = out.data.data() + static_cast<size_t>(r) * out.cols;
    for (size_t k = 0; k < columns.size(); ++k) o[k] = in[columns[k]];
  }
  return out;
}

}  // namespace

// Why a dropped column changes nothing: a pair of columns that order the rows alike, each with
// at most max_bin / 2 distinct values and no NaN, gets the same bins from XGBoost's hist method
// (every distinct value its own bin), so every node's histograms of the two are the same sums
// in the same order and their best splits the same gains; XGBoost keeps the lower feature
// index on a tie, so the first of the pair is the one its trees would use, and trees trained
// without the other are the same trees (tests/cost_model/test_tree_ensemble.cc compares).
// With `among`, only those columns are looked at: a column outside it that is splittable on a
// superset of the rows would also be one of those, so the result is the same (see the header).
std::vector<int> splittable_columns(const FeatureMatrix& x, int max_bin,
                                    std::span<const int> among) {
  std::vector<int> out;
  std::unordered_map<uint64_t, std::vector<int>> by_bits, by_ranks;  // of kept columns
  std::vector<float> col(x.rows), other(x.rows), sorted;
  std::vector<int32_t> ranks(x.rows), other_ranks(x.rows);
  auto column = [&](int c, std::vector<float>& v) {
    for (int r = 0; r < x.rows; ++r) v[r] = x.data[size_t(r) * x.cols + c];
  };
  // Dense ranks of v, or false if v has NaN or more than max_bin / 2 distinct values.
  auto rank = [&](const std::vector<float>& v, std::vector<int32_t>& out_ranks) {
    sorted = v;
    if (std::any_of(sorted.begin(), sorted.end(), [](float f) { return std::isnan(f); })) {
      return false;
    }
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted.size() > static_cast<size_t>(max_bin / 2)) return false;
    for (int r = 0; r < x.rows; ++r) {
      out_ranks[r] = static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), v[r]) -
                                          sorted.begin());
    }
    return true;
  };
  auto hash = [](const void* data, size_t bytes) {
    uint64_t h = 1469598103934665603ull;
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  };
  const int count = among.empty() ? x.cols : static_cast<int>(among.size());
  for (int i = 0; i < count; ++i) {
    const int c = among.empty() ? i : among[i];
    column(c, col);
    if (std::all_of(col.begin(), col.end(),
                    [&](float v) { return std::memcmp(&v, &col[0], sizeof(float)) == 0; })) {
      continue;
    }
    std::vector<int>& same_bits = by_bits[hash(col.data(), col.size() * sizeof(float))];
    bool copy = false;
    for (int k : same_bits) {
      column(k, other);
      copy = std::memcmp(other.data(), col.data(), col.size() * sizeof(float)) == 0;
      if (copy) break;
    }
    if (copy) continue;
    std::vector<int>* same_ranks = nullptr;
    if (rank(col, ranks)) {
      same_ranks = &by_ranks[hash(ranks.data(), ranks.size() * sizeof(int32_t))];
      for (int k : *same_ranks) {
        column(k, other);
        rank(other, other_ranks);
        copy = other_ranks == ranks;
        if (copy) break;
      }
      if (copy) continue;
    }
    same_bits.push_back(c);
    if (same_ranks) same_ranks->push_back(c);
    out.push_back(c);
  }
  // Nothing to split on: keep one column, so that XGBoost still has a matrix to fit (its
  // trees are single leaves).
  if (out.empty()) out.push_back(0);
  return out;
}

FeatureMatrix FeatureMatrix::zeros(int rows, int cols) {
  if (rows < 0 || cols < 0) {
    throw std::invalid_argument(fmt::format("FeatureMatrix: bad shape {}x{}", rows, cols));
  }
  return {rows, cols, std::vector<float>(static_cast<size_t>(rows) * cols, 0.0f)};
}

FeatureMatrix select_rows(const FeatureMatrix& x, std::span<const int> indices) {
  FeatureMatrix out = FeatureMatrix::zeros(static_cast<int>(indices.size()), x.cols);
  for (size_t i = 0; i < indices.size(); ++i) {
    int r = indices[i];
    if (r < 0 || r >= x.rows) {
      throw std::invalid_argument(fmt::format("select_rows: row {} out of [0, {})", r, x.rows));
    }
    auto src = x.row(r);
    std::copy(src.begin(), src.end(), out.data.begin() + static_cast<ptrdiff_t>(i) * x.cols);
  }
  return out;
}

RankModel::RankModel(std::string schema, RankModelOptions options)
    : schema_(std::move(schema)), options_(options) {
  if (schema_.empty()) throw std::invalid_argument("RankModel: the feature schema is empty");
  check_options(options_);
}

RankModel::~RankModel() { free_booster(); }

RankModel::RankModel(RankModel&& other) noexcept
    : schema_(std::move(other.schema_)),
      options_(other.options_),
      feature_count_(std::exchange(other.feature_count_, 0)),
      trees_count_(std::exchange(other.trees_count_, 0)),
      booster_(std::exchange(other.booster_, nullptr)),
      columns_(std::move(other.columns_)),
      trees_(std::move(other.trees_)) {}

RankModel& RankModel::operator=(RankModel&& other) noexcept {
  if (this != &other) {
    free_booster();
    schema_ = std::move(other.schema_);
    options_ = other.options_;
    feature_count_ = std::exchange(other.feature_count_, 0);
    trees_count_ = std::exchange(other.trees_count_, 0);
    booster_ = std::exchange(other.booster_, nullptr);
    columns_ = std::move(other.columns_);
    trees_ = std::move(other.trees_);
  }
  return *this;
}

void RankModel::free_booster() noexcept {
  if (booster_ != nullptr) XGBoosterFree(booster_);
  booster_ = nullptr;
  feature_count_ = 0;
  trees_count_ = 0;
  columns_.clear();
  trees_.reset();
}

void RankModel::check_fit_args(const FeatureMatrix& x, std::span<const float> labels,
                               std::span<const unsigned> group_sizes,
                               std::span<const float> base_margin, const char* who) {
  if (x.rows < 1 || x.cols < 1 || x.data.size() != static_cast<size_t>(x.rows) * x.cols) {
    throw std::invalid_argument(fmt::format("{}: bad feature matrix {}x{} with {} values", who,
                                            x.rows, x.cols, x.data.size()));
  }
  if (labels.size() != static_cast<size_t>(x.rows)) {
    throw std::invalid_argument(
        fmt::format("{}: {} labels for {} rows", who, labels.size(), x.rows));
  }
  if (!base_margin.empty() && base_margin.size() != static_cast<size_t>(x.rows)) {
    throw std::invalid_argument(
        fmt::format("{}: {} base margins for {} rows", who, base_margin.size(), x.rows));
  }
  if (!group_sizes.empty()) {
    uint64_t total = std::accumulate(group_sizes.begin(), group_sizes.end(), uint64_t{0});
    if (total != static_cast<uint64_t>(x.rows)) {
      throw std::invalid_argument(
          fmt::format("{}: group sizes sum to {} but there are {} rows", who, total, x.rows));
    }
  }
}

void RankModel::fit(const FeatureMatrix& x, std::span<const float> labels,
                    std::span<const unsigned> group_sizes, std::span<const float> base_margin) {
  fit_among(x, {}, labels, group_sizes, base_margin);
}

void RankModel::fit_among(const FeatureMatrix& x, std::span<const int> candidates,
                          std::span<const float> labels, std::span<const unsigned> group_sizes,
                          std::span<const float> base_margin) {
  free_booster();
  check_fit_args(x, labels, group_sizes, base_margin, "RankModel::fit");
  for (int c : candidates) {
    if (c < 0 || c >= x.cols) {
      throw std::invalid_argument(
          fmt::format("RankModel::fit_among: candidate column {} outside [0, {})", c, x.cols));
    }
  }

  std::vector<int> columns;
  if (options_.drop_redundant_columns) {
    columns = splittable_columns(x, options_.max_bin, candidates);
  } else {
    columns.resize(x.cols);
    std::iota(columns.begin(), columns.end(), 0);
  }
  FeatureMatrix kept;
  const bool all = static_cast<int>(columns.size()) == x.cols;
  if (!all) kept = select_columns(x, columns);
  DMatrix train = DMatrix::dense(all ? x : kept, options_.nthread);
  train.set_floats("label", training_labels(labels, options_));
  if (!group_sizes.empty()) train.set_uints("group", group_sizes);
  if (!base_margin.empty()) train.set_floats("base_margin", base_margin);

  BoosterHandle booster = nullptr;
  DMatrixHandle train_handle = train.get();
  CUTUNE_XGB_CHECK(XGBoosterCreate(&train_handle, 1, &booster));
  // Owned by this from here on; a failing call below leaves the model untrained.
  booster_ = booster;
  try {
    columns_ = std::move(columns);
    train_booster(train_handle, x.cols);
    flatten();
  } catch (...) {
    free_booster();
    throw;
  }
}

void RankModel::boost(const FeatureMatrix& x, std::span<const float> labels, int rounds,
                      std::span<const unsigned> group_sizes, std::span<const float> base_margin) {
  if (!trained()) throw std::logic_error("RankModel::boost: the model is not trained");
  check_fit_args(x, labels, group_sizes, base_margin, "RankModel::boost");
  if (x.cols != feature_count_) {
    throw std::invalid_argument(
        fmt::format("RankModel::boost: a {}x{} matrix for a model of {} features", x.rows, x.cols,
                    feature_count_));
  }
  if (rounds < 1) throw std::invalid_argument("RankModel::boost: rounds must be >= 1");
  const bool all = static_cast<int>(columns_.size()) == x.cols;
  FeatureMatrix kept;
  if (!all) kept = select_columns(x, columns_);
  DMatrix train = DMatrix::dense(all ? x : kept, options_.nthread);
  train.set_floats("label", training_labels(labels, options_));
  if (!group_sizes.empty()) train.set_uints("group", group_sizes);
  if (!base_margin.empty()) train.set_floats("base_margin", base_margin);
  try {
    // A DMatrix the booster has not seen: XGBoost predicts it from every tree before the first
    // new one, so the gradients are those of the whole current model. The iteration number
    // continues the fit's (it seeds XGBoost's per-tree sampling).
    for (int i = 0; i < rounds; ++i) {
      CUTUNE_XGB_CHECK(XGBoosterUpdateOneIter(booster_, trees_count_ + i, train.get()));
    }
    // Only the new trees are copied to the flat ensemble (serialising every tree again costs
    // more than growing a few).
    BoosterHandle fresh = nullptr;
    CUTUNE_XGB_CHECK(XGBoosterSlice(booster_, trees_count_, trees_count_ + rounds, 1, &fresh));
    std::unique_ptr<void, int (*)(void*)> owned(fresh, XGBoosterFree);
    bst_ulong length = 0;
    const char* bytes = nullptr;
    CUTUNE_XGB_CHECK(XGBoosterSaveModelToBuffer(fresh, R"({"format": "ubj"})", &length, &bytes));
    trees_->append(TreeEnsemble::from_ubjson(
        {reinterpret_cast<const uint8_t*>(bytes), static_cast<size_t>(length)}, columns_));
    trees_count_ += rounds;
  } catch (...) {
    free_booster();
    throw;
  }
}

void RankModel::train_booster(void* train, int cols) {
  BoosterHandle booster = booster_;

  set_param(booster, "verbosity", "1");
  set_param(booster, "objective", objective_name(options_.objective));
  // With a reduced max_bin, hist builds trees several times faster than exact at our sizes
  // and ranks as well.
  set_param(booster, "tree_method", "hist");
  set_param(booster, "max_bin", std::to_string(options_.max_bin));
  set_param(booster, "max_depth", std::to_string(options_.max_depth));
  set_param(booster, "eta", fmt::format("{}", options_.eta));
  set_param(booster, "gamma", fmt::format("{}", options_.gamma));
  set_param(booster, "min_child_weight", fmt::format("{}", options_.min_child_weight));
  set_param(booster, "subsample", fmt::format("{}", options_.subsample));
  set_param(booster, "colsample_bytree", fmt::format("{}", options_.colsample));
  set_param(booster, "lambda", fmt::format("{}", options_.lambda));
  if (options_.objective != RankObjective::regression) {
    set_param(booster, "num_pairsample", std::to_string(options_.pairs_per_row));
  }
  set_param(booster, "nthread", std::to_string(options_.nthread));
  // XGBoost reads the seed as a signed 64-bit integer.
  set_param(booster, "seed", std::to_string(static_cast<int64_t>(options_.seed)));

  for (int round = 0; round < options_.rounds; ++round) {
    CUTUNE_XGB_CHECK(XGBoosterUpdateOneIter(booster, round, train));
  }
  trees_count_ = options_.rounds;

  CUTUNE_XGB_CHECK(XGBoosterSetAttr(booster, kSchemaAttr, schema_.c_str()));
  CUTUNE_XGB_CHECK(XGBoosterSetAttr(booster, kFeatureCountAttr, std::to_string(cols).c_str()));
  CUTUNE_XGB_CHECK(
      XGBoosterSetAttr(booster, kOptionsAttr, options_to_json(options_).dump().c_str()));
  CUTUNE_XGB_CHECK(
      XGBoosterSetAttr(booster, kColumnsAttr, nlohmann::json(columns_).dump().c_str()));
  feature_count_ = cols;
}

void RankModel::flatten() {
  bst_ulong length = 0;
  const char* bytes = nullptr;
  CUTUNE_XGB_CHECK(XGBoosterSaveModelToBuffer(booster_, R"({"format": "ubj"})", &length, &bytes));
  trees_ = std::make_unique<TreeEnsemble>(TreeEnsemble::from_ubjson(
      {reinterpret_cast<const uint8_t*>(bytes), static_cast<size_t>(length)}, columns_));
}

void RankModel::check_predict_args(const FeatureMatrix& x,
                                   std::span<const float> base_margin) const {
  if (!trained()) throw std::logic_error("RankModel::predict: the model is not trained");
  if (x.cols != feature_count_ || x.data.size() != static_cast<size_t>(x.rows) * x.cols) {
    throw std::invalid_argument(
        fmt::format("RankModel::predict: a {}x{} matrix for a model of {} features", x.rows, x.cols,
                    feature_count_));
  }
  if (!base_margin.empty() && base_margin.size() != static_cast<size_t>(x.rows)) {
    throw std::invalid_argument(
        fmt::format("RankModel::predict: {} base margins for {} rows", base_margin.size(), x.rows));
  }
}

std::vector<float> RankModel::predict(const FeatureMatrix& x,
                                      std::span<const float> base_margin) const {
  check_predict_args(x, base_margin);
  std::vector<float> out(x.rows);
  trees_->predict(x, base_margin, out);
  return out;
}

std::vector<float> RankModel::predict_with_xgboost(const FeatureMatrix& x,
                                                   std::span<const float> base_margin) const {
  check_predict_args(x, base_margin);
  FeatureMatrix kept;
  const bool all = static_cast<int>(columns_.size()) == x.cols;
  if (!all) kept = select_columns(x, columns_);
  const FeatureMatrix& in = all ? x : kept;
  if (x.rows == 0) return {};

  // Inplace prediction reads the caller's buffer directly; the proxy carries only the margin.
  std::string array =
      fmt::format(R"({{"data": [{}, true], "shape": [{}, {}], "typestr": "<f4", "version": 3}})",
                  reinterpret_cast<uintptr_t>(in.data.data()), in.rows, in.cols);
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "cache_id": 0, )"
      R"("strict_shape": false, "missing": NaN})";

  DMatrix proxy = DMatrix::proxy();
  if (!base_margin.empty()) proxy.set_floats("base_margin", base_margin);

  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  CUTUNE_XGB_CHECK(XGBoosterPredictFromDense(booster_, array.c_str(), config, proxy.get(), &shape,
                                             &dim, &result));
  return std::vector<float>(result, result + x.rows);
}

void RankModel::save(const std::filesystem::path& path) const {
  if (!trained()) throw std::logic_error("RankModel::save: the model is not trained");
  bst_ulong length = 0;
  const char* bytes = nullptr;
  CUTUNE_XGB_CHECK(XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &length, &bytes));

  // Write beside the target and rename so a crash never leaves a half-written model.
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes, static_cast<std::streamsize>(length));
    out.close();
    if (!out) {
      throw std::runtime_error(fmt::format("cannot write model file {}", tmp.string()));
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    std::filesystem::remove(tmp, error);
    throw std::runtime_error(fmt::format("cannot write model file {}", path.string()));
  }
}

RankModel RankModel::load(const std::filesystem::path& path, std::string_view expected_schema,
                          int expected_cols) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read model file {}", path.string()));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  RankModel model{std::string(expected_schema)};
  BoosterHandle booster = nullptr;
  CUTUNE_XGB_CHECK(XGBoosterCreate(nullptr, 0, &booster));
  model.booster_ = booster;
  if (XGBoosterLoadModelFromBuffer(booster, bytes.data(), bytes.size()) != 0) {
    throw std::runtime_error(
        fmt::format("{} is not a cutune cost model: {}", path.string(), last_xgb_error()));
  }

  std::string schema = get_attr(booster, kSchemaAttr);
  std::string cols_text = get_attr(booster, kFeatureCountAttr);
  std::string options_text = get_attr(booster, kOptionsAttr);
  if (schema.empty() || cols_text.empty() || options_text.empty()) {
    throw std::runtime_error(fmt::format(
        "{} is not a cutune cost model: it has no feature schema attributes", path.string()));
  }
  int cols = std::stoi(cols_text);
  if (schema != expected_schema || cols != expected_cols) {
    throw std::runtime_error(
        fmt::format("{} was trained on feature schema '{}' with {} features, expected '{}' with {}",
                    path.string(), schema, cols, expected_schema, expected_cols));
  }
  model.options_ = options_from_json(nlohmann::json::parse(options_text));
  model.feature_count_ = cols;
  std::string columns_text = get_attr(booster, kColumnsAttr);
  if (columns_text.empty()) {  // a model from before columns were dropped: all of them
    model.columns_.resize(cols);
    std::iota(model.columns_.begin(), model.columns_.end(), 0);
  } else {
    model.columns_ = nlohmann::json::parse(columns_text).get<std::vector<int>>();
    for (int c : model.columns_) {
      if (c < 0 || c >= cols) {
        throw std::runtime_error(fmt::format(
            "{} is not a cutune cost model: column {} of {} features", path.string(), c, cols));
      }
    }
  }
  CUTUNE_XGB_CHECK(XGBoosterBoostedRounds(booster, &model.trees_count_));
  model.flatten();
  return model;
}

}  // namespace cutune::cost_model
