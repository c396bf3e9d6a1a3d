#include "cost_model/tree_ensemble.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cutune::cost_model {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("TreeEnsemble: " + what);
}

// XGBoost writes some parameters as strings ("5E-1").
float number(const nlohmann::json& j) {
  if (j.is_string()) return std::strtof(j.get_ref<const std::string&>().c_str(), nullptr);
  return j.get<float>();
}

bool flag(const nlohmann::json& j) { return j.is_boolean() ? j.get<bool>() : j.get<int>() != 0; }

}  // namespace

TreeEnsemble TreeEnsemble::from_ubjson(std::span<const uint8_t> model,
                                       std::span<const int> columns) {
  nlohmann::json j = nlohmann::json::from_ubjson(model.begin(), model.end());
  const nlohmann::json& learner = j.at("learner");
  const nlohmann::json& booster = learner.at("gradient_booster");
  if (booster.at("name").get<std::string>() != "gbtree") {
    fail("only gbtree boosters are supported, not " + booster.at("name").get<std::string>());
  }
  const nlohmann::json& trees = booster.at("model").at("trees");
  for (const nlohmann::json& g : booster.at("model").at("tree_info")) {
    if (g.get<int>() != 0) fail("models with several output groups are not supported");
  }

  TreeEnsemble out;
  out.base_score_ = number(learner.at("learner_model_param").at("base_score"));
  for (const nlohmann::json& tree : trees) {
    const auto& left = tree.at("left_children");
    const auto& right = tree.at("right_children");
    const auto& index = tree.at("split_indices");
    const auto& cond = tree.at("split_conditions");
    const auto& default_left = tree.at("default_left");
    const size_t n = left.size();
    if (right.size() != n || index.size() != n || cond.size() != n || default_left.size() != n) {
      fail("a tree's node arrays differ in length");
    }
    if (tree.contains("split_type")) {
      for (const auto& t : tree.at("split_type")) {
        if (t.get<int>() != 0) fail("categorical splits are not supported");
      }
    }
    const int32_t base = static_cast<int32_t>(out.nodes_.size());
    out.roots_.push_back(base);
    for (size_t i = 0; i < n; ++i) {
      Node node{};
      node.value = cond[i].get<float>();
      int32_t l = left[i].get<int32_t>();
      if (l < 0) {
        node.feature = -1;
      } else {
        int32_t f = index[i].get<int32_t>();
        if (!columns.empty()) {
          if (f < 0 || static_cast<size_t>(f) >= columns.size()) {
            fail(fmt::format("split on feature {} of a {}-column map", f, columns.size()));
          }
          f = columns[f];
        }
        node.feature = f;
        node.left = base + l;
        node.right = base + right[i].get<int32_t>();
        node.missing = flag(default_left[i]) ? node.left : node.right;
        out.columns_read_ = std::max(out.columns_read_, f + 1);
      }
      out.nodes_.push_back(node);
    }
  }
  out.build_complete();
  return out;
}

void TreeEnsemble::append(const TreeEnsemble& more) {
  if (std::memcmp(&base_score_, &more.base_score_, sizeof(float)) != 0 && !more.roots_.empty() &&
      !roots_.empty()) {
    throw std::invalid_argument(
        fmt::format("TreeEnsemble::append: base score {} after {}", more.base_score_, base_score_));
  }
  if (roots_.empty()) base_score_ = more.base_score_;
  const int32_t base = static_cast<int32_t>(nodes_.size());
  for (Node node : more.nodes_) {
    if (node.feature >= 0) {
      node.left += base;
      node.right += base;
      node.missing += base;
    }
    nodes_.push_back(node);
  }
  for (int32_t root : more.roots_) roots_.push_back(base + root);
  columns_read_ = std::max(columns_read_, more.columns_read_);
  build_complete();
}

void TreeEnsemble::build_complete() {
  split_feature_.clear();
  split_value_.clear();
  leaf_value_.clear();
  used_columns_.clear();
  depth_ = 0;
  // The depth of the deepest leaf.
  int depth = 0;
  for (int32_t root : roots_) {
    std::vector<std::pair<int32_t, int>> stack{{root, 0}};
    while (!stack.empty()) {
      auto [n, d] = stack.back();
      stack.pop_back();
      const Node& node = nodes_[n];
      if (node.feature < 0) {
        depth = std::max(depth, d);
      } else {
        stack.push_back({node.left, d + 1});
        stack.push_back({node.right, d + 1});
      }
    }
  }
  if (depth <= kMaxCompleteDepth) {
    depth_ = depth;
    const size_t inner = (size_t{1} << depth) - 1, leaves = size_t{1} << depth;
    split_feature_.assign(inner * roots_.size(), 0);
    split_value_.assign(inner * roots_.size(), 0.0f);
    leaf_value_.assign(leaves * roots_.size(), 0.0f);
    for (size_t t = 0; t < roots_.size(); ++t) {
      // (position in the complete tree, node); a leaf above the bottom fills every position
      // below it.
      std::vector<std::pair<size_t, int32_t>> stack{{0, roots_[t]}};
      while (!stack.empty()) {
        auto [pos, n] = stack.back();
        stack.pop_back();
        const Node& node = nodes_[n];
        if (pos >= inner) {
          leaf_value_[t * leaves + (pos - inner)] = node.value;
        } else if (node.feature < 0) {
          // Any test will do: both sides reach the leaf. Feature 0 exists in every row.
          split_feature_[t * inner + pos] = 0;
          split_value_[t * inner + pos] = 0.0f;
          stack.push_back({2 * pos + 1, n});
          stack.push_back({2 * pos + 2, n});
        } else {
          split_feature_[t * inner + pos] = node.feature;
          split_value_[t * inner + pos] = node.value;
          stack.push_back({2 * pos + 1, node.left});
          stack.push_back({2 * pos + 2, node.right});
        }
      }
    }
    used_columns_.assign(split_feature_.begin(), split_feature_.end());
    std::sort(used_columns_.begin(), used_columns_.end());
    used_columns_.erase(std::unique(used_columns_.begin(), used_columns_.end()),
                        used_columns_.end());
    for (int32_t& f : split_feature_) {
      f = static_cast<int32_t>(std::lower_bound(used_columns_.begin(), used_columns_.end(), f) -
                               used_columns_.begin());
    }
  }
}

void TreeEnsemble::predict_linked(const FeatureMatrix& x, int r0, int r1,
                                  std::span<float> out) const {
  const Node* nodes = nodes_.data();
  for (int32_t root : roots_) {
    for (int r = r0; r < r1; ++r) {
      const float* row = x.data.data() + static_cast<size_t>(r) * x.cols;
      const Node* n = nodes + root;
      while (n->feature >= 0) {
        float v = row[n->feature];
        n = nodes + (std::isnan(v) ? n->missing : v < n->value ? n->left : n->right);
      }
      out[r] += n->value;
    }
  }
}

void TreeEnsemble::predict_complete(const FeatureMatrix& x, int r0, int r1,
                                    std::span<float> out) const {
  const size_t inner = (size_t{1} << depth_) - 1, leaves = size_t{1} << depth_;
  const int32_t* feature = split_feature_.data();
  const float* value = split_value_.data();
  const float* leaf = leaf_value_.data();
  // The block's rows, only the columns the trees test.
  const size_t width = used_columns_.size();
  thread_local std::vector<float> compact;
  compact.resize(static_cast<size_t>(r1 - r0) * width);
  for (int r = r0; r < r1; ++r) {
    const float* in = x.data.data() + static_cast<size_t>(r) * x.cols;
    float* o = compact.data() + static_cast<size_t>(r - r0) * width;
    for (size_t k = 0; k < width; ++k) o[k] = in[used_columns_[k]];
  }
  // Sixteen rows at a time walk one tree together: their walks are independent, so the loads
  // and compares of one level overlap.
  constexpr int kLanes = 16;
  const int n = r1 - r0;
  for (size_t t = 0; t < roots_.size(); ++t) {
    const int32_t* f = feature + t * inner;
    const float* v = value + t * inner;
    const float* l = leaf + t * leaves;
    int r = 0;
    for (; r + kLanes <= n; r += kLanes) {
      const float* row[kLanes];
      size_t pos[kLanes];
      for (int k = 0; k < kLanes; ++k) {
        row[k] = compact.data() + static_cast<size_t>(r + k) * width;
        pos[k] = 0;
      }
      for (int d = 0; d < depth_; ++d) {
        for (int k = 0; k < kLanes; ++k) {
          pos[k] = 2 * pos[k] + 1 + (row[k][f[pos[k]]] >= v[pos[k]]);
        }
      }
      for (int k = 0; k < kLanes; ++k) out[r0 + r + k] += l[pos[k] - inner];
    }
    for (; r < n; ++r) {
      const float* row = compact.data() + static_cast<size_t>(r) * width;
      size_t pos = 0;
      for (int d = 0; d < depth_; ++d) pos = 2 * pos + 1 + (row[f[pos]] >= v[pos]);
      out[r0 + r] += l[pos - inner];
    }
  }
}

void TreeEnsemble::predict(const FeatureMatrix& x, std::span<const float> base_margin,
                           std::span<float> out) const {
  if (x.cols < columns_read_ || out.size() != static_cast<size_t>(x.rows) ||
      (!base_margin.empty() && base_margin.size() != out.size())) {
    throw std::invalid_argument(
        fmt::format("TreeEnsemble::predict: {}x{} rows, {} margins, {} outputs for trees reading "
                    "{} columns",
                    x.rows, x.cols, base_margin.size(), out.size(), columns_read_));
  }
  for (size_t r = 0; r < out.size(); ++r)
    out[r] = base_margin.empty() ? base_score_ : base_margin[r];
  // Blocks of rows, trees outer within a block: the trees stay in cache while the block
  // walks them, and each row's sum still adds the trees in XGBoost's order. Rows with a
  // missing value take the linked walk, which knows each node's default side.
  constexpr int kBlock = 64;
  for (int r0 = 0; r0 < x.rows; r0 += kBlock) {
    const int r1 = std::min(x.rows, r0 + kBlock);
    const float* begin = x.data.data() + static_cast<size_t>(r0) * x.cols;
    const float* end = x.data.data() + static_cast<size_t>(r1) * x.cols;
    bool missing = std::any_of(begin, end, [](float v) { return std::isnan(v); });
    if (missing || leaf_value_.empty()) {
      predict_linked(x, r0, r1, out);
    } else {
      predict_complete(x, r0, r1, out);
    }
  }
}

}  // namespace cutune::cost_model
