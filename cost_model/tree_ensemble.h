#pragma once
// A trained booster's trees copied into flat arrays, for prediction on the CPU without
// XGBoost's per-call set-up (a proxy DMatrix, a JSON configuration, a dense adapter that
// copies every column of every row into a per-thread vector before walking the trees).
//
// Semantics are XGBoost's (gbtree, no categorical splits): each row starts from its base
// margin (or the model's base score) and adds, tree after tree in order and in float, the
// value of the leaf it reaches; at an internal node a row goes left when its value is less
// than the split condition, and to the node's default side when the value is NaN (missing).
// The sums are therefore the same floats XGBoost's CPU predictor returns (tests compare them
// bit for bit).
//
// Columns: a booster trained on a subset of the caller's columns (RankModel drops columns
// that cannot be split on) refers to its own feature i; `columns[i]` names the caller's
// column it is, so that prediction reads the caller's full rows directly.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "cost_model/rank_model.h"

namespace cutune::cost_model {

class TreeEnsemble {
 public:
  TreeEnsemble() = default;

  // Reads the trees of a booster saved by XGBoosterSaveModelToBuffer in the "ubj" format
  // (universal binary JSON: floats as float32, so leaf values and thresholds are exact).
  // `columns` maps the booster's features to input columns (empty: the identity).
  // Throws std::runtime_error on a model it cannot represent (categorical splits, several
  // output groups, a feature index outside `columns`).
  static TreeEnsemble from_ubjson(std::span<const uint8_t> model, std::span<const int> columns);

  // Appends the trees of `more` after this ensemble's (a warm-started booster's new trees):
  // predictions then add them last, as XGBoost does. Throws std::invalid_argument when the
  // base scores differ (not trees of one booster).
  void append(const TreeEnsemble& more);

  // out[r] for each row of x (x.cols must cover every column the trees read).
  // base_margin: empty (the base score for every row) or one entry per row.
  void predict(const FeatureMatrix& x, std::span<const float> base_margin,
               std::span<float> out) const;

  int trees() const { return static_cast<int>(roots_.size()); }
  // The largest input column the trees read, plus one (0 without splits).
  int columns_read() const { return columns_read_; }

 private:
  // Internal node: feature >= 0, children at left/right. Leaf: feature < 0, value the leaf's.
  struct Node {
    int32_t feature;
    float value;  // split condition, or leaf value
    int32_t left;
    int32_t right;
    int32_t missing;  // child taken when the value is NaN
  };

  // Fills the complete-tree arrays below from nodes_ (leaves them empty when too deep).
  void build_complete();
  // Rows [r0, r1) through the trees as linked nodes (any depth, NaN-aware).
  void predict_linked(const FeatureMatrix& x, int r0, int r1, std::span<float> out) const;
  // The same through the complete trees below (no NaN in the rows).
  void predict_complete(const FeatureMatrix& x, int r0, int r1, std::span<float> out) const;

  std::vector<Node> nodes_;     // every tree's nodes, trees one after another
  std::vector<int32_t> roots_;  // each tree's root in nodes_
  float base_score_ = 0;
  int columns_read_ = 0;

  // Each tree padded to a complete binary tree of depth_ levels (a leaf above the bottom
  // becomes splits whose two sides reach copies of it), stored level by level: a row walks
  // it without branches, i -> 2i + 1 + (v >= threshold), several rows at once. Empty when
  // the trees are deeper than kMaxCompleteDepth.
  static constexpr int kMaxCompleteDepth = 10;
  int depth_ = 0;
  std::vector<int32_t> split_feature_;  // (2^depth_ - 1) a tree; a position in used_columns_
  std::vector<float> split_value_;
  std::vector<float> leaf_value_;  // 2^depth_ a tree
  // The input columns the complete trees test, ascending: a block of rows is first gathered
  // to these (a few hundred bytes a row instead of every feature), so that the walks' loads
  // stay in L1.
  std::vector<int32_t> used_columns_;
};

}  // namespace cutune::cost_model
