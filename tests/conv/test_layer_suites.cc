#include "kernels/layer_suites.h"

#include <catch2/catch.hpp>

#include "kernels/conv_shape.h"
#include "kernels/template.h"
#include "src/lower/lower.h"

using namespace cutune;

namespace {

// Every reference configuration of every template for the layer lowers and verifies.
void check_layer_templates(const SuiteLayer& layer) {
  std::vector<std::string> names = layer.op == "conv2d"
                                       ? std::vector<std::string>{"conv2d_nchw", "conv2d_nhwc"}
                                       : std::vector<std::string>{""};
  for (const std::string& name : names) {
    INFO(layer.name << " " << layer.description << " " << name);
    std::unique_ptr<Template> tmpl;
    REQUIRE_NOTHROW(tmpl = make_template(layer.op, layer.shape, name));
    std::vector<Config> refs = tmpl->reference_configs();
    REQUIRE_FALSE(refs.empty());
    for (const Config& c : refs) {
      INFO(c.to_string());
      Lowered l = lower(*tmpl, c, ir::TargetLimits{});
      for (const std::string& e : l.verify.errors) UNSCOPED_INFO(e);
      CHECK(l.ok());
    }
  }
}

}  // namespace

TEST_CASE("resnet18 lists C1-C12 with the AutoTVM paper's shapes", "[conv][suite]") {
  std::vector<SuiteLayer> layers = suite_layers("resnet18");
  REQUIRE(layers.size() == 12);
  CHECK(layers[0].name == "C1");
  CHECK(layers[0].shape == std::vector<int64_t>{1, 3, 224, 224, 64, 7, 7, 2, 3, 1});
  CHECK(layers[2].shape == std::vector<int64_t>{1, 64, 56, 56, 64, 1, 1, 1, 0, 1});
  CHECK(layers[11].name == "C12");
  CHECK(layers[11].shape == std::vector<int64_t>{1, 512, 7, 7, 512, 3, 3, 1, 1, 1});
  // Output sizes: 112 for C1, then halved by every stride-2 layer.
  const int64_t expect_p[] = {112, 56, 56, 28, 28, 28, 14, 14, 14, 7, 7, 7};
  for (size_t i = 0; i < layers.size(); ++i) {
    CHECK(layers[i].op == "conv2d");
    CHECK(conv2d_shape(layers[i].shape).p == expect_p[i]);
  }
  for (const SuiteLayer& l : suite_layers("resnet18", 16)) CHECK(l.shape[0] == 16);
}

TEST_CASE("mobilenet lists MobileNet v1's depthwise layers", "[conv][suite]") {
  std::vector<SuiteLayer> layers = suite_layers("mobilenet");
  REQUIRE(layers.size() == 9);
  int total = 0;
  for (const SuiteLayer& l : layers) {
    CHECK(l.op == "depthwise_conv2d");
    total += l.repeat;
  }
  CHECK(total == 13);
  CHECK(depthwise_shape(layers.front().shape).p == 112);
  CHECK(depthwise_shape(layers.back().shape).p == 7);
  CHECK(layers.back().shape[1] == 1024);
}

TEST_CASE("unknown suites and bad batches are TaskErrors", "[conv][suite]") {
  CHECK_THROWS_AS(suite_layers("vgg16"), TaskError);
  CHECK_THROWS_AS(suite_layers("resnet18", 0), TaskError);
  CHECK(list_suites().size() == 5);  // resnet18, mobilenet, resnet50, mobilenet_v2, llama3-8b
}

TEST_CASE("every ResNet-18 layer's reference configurations verify, batch 1", "[conv][suite]") {
  for (const SuiteLayer& l : suite_layers("resnet18", 1)) check_layer_templates(l);
}

TEST_CASE("every ResNet-18 layer's reference configurations verify, batch 16", "[conv][suite]") {
  for (const SuiteLayer& l : suite_layers("resnet18", 16)) check_layer_templates(l);
}

TEST_CASE("every MobileNet layer's reference configurations verify", "[conv][suite]") {
  for (int64_t batch : {1, 16}) {
    for (const SuiteLayer& l : suite_layers("mobilenet", batch)) check_layer_templates(l);
  }
}

TEST_CASE("resnet50 and mobilenet_v2 list their distinct layers with the network's repeats",
          "[conv][suite]") {
  const std::vector<SuiteLayer> r50 = suite_layers("resnet50", 32);
  CHECK(r50.size() == 23);
  int convs = 0;
  for (const SuiteLayer& l : r50) {
    convs += l.repeat;
    CHECK(l.shape[0] == 32);
    CHECK(l.op == "conv2d");
    CHECK_NOTHROW(conv2d_shape(l.shape));
  }
  CHECK(convs == 53);  // 1 + 16 blocks x 3 + 4 projection shortcuts
  // The first downsampling block of stage 3: its 3x3 strides (v1.5), the shortcut too.
  CHECK(r50[6].shape == std::vector<int64_t>{32, 128, 56, 56, 128, 3, 3, 2, 1, 1});
  CHECK(r50[8].shape == std::vector<int64_t>{32, 256, 56, 56, 512, 1, 1, 2, 0, 1});

  const std::vector<SuiteLayer> v2 = suite_layers("mobilenet_v2");
  int dense = 0, depthwise = 0, distinct_depthwise = 0;
  for (const SuiteLayer& l : v2) {
    (l.op == "conv2d" ? dense : depthwise) += l.repeat;
    distinct_depthwise += l.op == "depthwise_conv2d";
  }
  CHECK(v2.size() == 30);
  CHECK(distinct_depthwise == 10);
  CHECK(depthwise == 17);  // one a block
  CHECK(dense == 35);      // the stem, 16 expansions, 17 projections, the last 1x1
  CHECK(v2.back().shape == std::vector<int64_t>{1, 960, 7, 7, 3, 3, 1, 1, 1});
}
