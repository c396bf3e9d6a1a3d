#include "src/replay/kt_cache.h"

#include <fstream>
#include <algorithm>
#include <iterator>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <zlib.h>

#include "src/space/config_space.h"

namespace cutune::replay {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("cannot open cache '{}'", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string gunzip(const std::string& data, const std::string& path) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw ConfigError("zlib initialisation failed");
  std::string out;
  out.resize(data.size() * 5 + 1024);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.total_out == out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(out.size() - zs.total_out);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      throw ConfigError(
          fmt::format("cache '{}' is not valid gzip ({})", path, zs.msg ? zs.msg : "truncated"));
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace

int KtCache::key_position(std::string_view name) const {
  for (size_t i = 0; i < tune_params_keys.size(); ++i)
    if (tune_params_keys[i] == name) return static_cast<int>(i);
  return -1;
}

size_t KtCache::valid_count() const {
  size_t n = 0;
  for (const auto& e : entries) n += e.valid ? 1 : 0;
  return n;
}

namespace {

// The cache's structure, driven by the JSON reader's events (RapidJSONEvents). Depth 1 is inside
// the top-level object; the cache's entries are objects at depth 3 and their "times" arrays at
// depth 4.
class CacheReader {
 public:
  explicit CacheReader(KtCache& cache, std::string source)
      : cache_(cache), source_(std::move(source)) {}

  const std::string& error() const { return error_; }
  bool saw_cache() const { return saw_cache_; }

  bool null() { return scalar(Scalar::other, 0, 0, nullptr); }
  bool boolean(bool v) { return scalar(Scalar::other, v, 0, nullptr); }
  bool number_integer(int64_t v) {
    return scalar(Scalar::integer, v, static_cast<double>(v), nullptr);
  }
  bool number_float(double v) { return scalar(Scalar::real, 0, v, nullptr); }
  bool string(std::string& v) { return scalar(Scalar::text, 0, 0, &v); }

  bool start_object() {
    ++depth_;
    if (depth_ == 3 && top_ == Top::cache) {
      if (key_index_.empty() && !cache_.tune_params_keys.empty()) index_keys();
      if (cache_.tune_params_keys.empty())
        return fail("\"tune_params_keys\" must come before \"cache\"");
      entry_ = KtEntry{};
      entry_.values.assign(cache_.tune_params_keys.size(), 0);
      seen_.assign(cache_.tune_params_keys.size(), 0);
      has_time_ = false;
    } else if (depth_ == 2 && top_ == Top::cache) {
      saw_cache_ = true;
    }
    return true;
  }

  bool end_object() {
    if (depth_ == 3 && top_ == Top::cache) {
      for (size_t i = 0; i < seen_.size(); ++i)
        if (!seen_[i])
          return fail(fmt::format("cache entry '{}' lacks an integer '{}'", entry_key_,
                                  cache_.tune_params_keys[i]));
      if (!has_time_) return fail(fmt::format("cache entry '{}' has no time", entry_key_));
      if (!entry_.valid) entry_.times_ms.clear();
      cache_.entries.push_back(std::move(entry_));
    }
    --depth_;
    return true;
  }

  bool start_array() {
    ++depth_;
    if (depth_ == 3 && top_ == Top::params)
      params_.emplace_back(param_name_, std::vector<int64_t>{});
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }

  bool key(const std::string& k) {
    if (depth_ == 1) {
      top_ = Top::other;
      if (k == "device_name")
        top_ = Top::device_name;
      else if (k == "kernel_name")
        top_ = Top::kernel_name;
      else if (k == "objective")
        top_ = Top::objective;
      else if (k == "problem_size")
        top_ = Top::problem_size;
      else if (k == "tune_params_keys")
        top_ = Top::keys;
      else if (k == "tune_params")
        top_ = Top::params;
      else if (k == "cache")
        top_ = Top::cache;
    } else if (depth_ == 2 && top_ == Top::params) {
      param_name_ = k;
    } else if (depth_ == 2 && top_ == Top::cache) {
      entry_key_ = k;
    } else if (depth_ == 3 && top_ == Top::cache) {
      field_ = Field::other;
      if (k == "time")
        field_ = Field::time;
      else if (k == "times")
        field_ = Field::times;
      else if (k == "GFLOP/s")
        field_ = Field::gflops;
      else if (k == "GB/s")
        field_ = Field::gbs;
      else if (k == "compile_time")
        field_ = Field::compile;
      else if (k == "verification_time")
        field_ = Field::verification;
      else if (auto it = key_index_.find(k); it != key_index_.end()) {
        field_ = Field::param;
        param_ = it->second;
      }
    }
    return true;
  }

  std::vector<std::pair<std::string, std::vector<int64_t>>> params_;

 private:
  enum class Top : uint8_t {
    other,
    device_name,
    kernel_name,
    objective,
    problem_size,
    keys,
    params,
    cache
  };
  enum class Field : uint8_t { other, param, time, times, gflops, gbs, compile, verification };
  enum class Scalar : uint8_t { integer, real, text, other };

  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  void index_keys() {
    for (size_t i = 0; i < cache_.tune_params_keys.size(); ++i)
      key_index_.emplace(cache_.tune_params_keys[i], static_cast<int>(i));
  }

  bool scalar(Scalar kind, int64_t i, double d, std::string* text) {
    const bool number = kind == Scalar::integer || kind == Scalar::real;
    switch (top_) {
      case Top::device_name:
        if (depth_ == 1 && text) cache_.device_name = std::move(*text);
        return true;
      case Top::kernel_name:
        if (depth_ == 1 && text) cache_.kernel_name = std::move(*text);
        return true;
      case Top::objective:
        if (depth_ == 1 && text) cache_.objective = std::move(*text);
        return true;
      case Top::problem_size:
        if (depth_ == 2 && kind == Scalar::integer) cache_.problem_size.push_back(i);
        return true;
      case Top::keys:
        if (depth_ != 2) return true;
        if (!text) return fail("tune_params_keys holds a non-string");
        cache_.tune_params_keys.push_back(std::move(*text));
        return true;
      case Top::params:
        if (depth_ != 3) return true;
        if (kind != Scalar::integer)
          return fail(
              fmt::format("tune_params.{} holds a value that is not an integer", param_name_));
        params_.back().second.push_back(i);
        return true;
      case Top::cache:
        if (depth_ == 3) return entry_field(kind, i, d, text);
        if (depth_ == 4 && field_ == Field::times && number) entry_.times_ms.push_back(d);
        return true;
      case Top::other:
        return true;
    }
    return true;
  }

  bool entry_field(Scalar kind, int64_t i, double d, std::string* text) {
    const bool number = kind == Scalar::integer || kind == Scalar::real;
    switch (field_) {
      case Field::param:
        if (kind != Scalar::integer)
          return fail(fmt::format("cache entry '{}' lacks an integer '{}'", entry_key_,
                                  cache_.tune_params_keys[static_cast<size_t>(param_)]));
        entry_.values[static_cast<size_t>(param_)] = i;
        seen_[static_cast<size_t>(param_)] = 1;
        return true;
      case Field::time:
        has_time_ = true;
        entry_.valid = number;
        if (number)
          entry_.time_ms = d;
        else
          entry_.error = text ? std::move(*text) : std::string("non-numeric time");
        return true;
      case Field::gflops:
        if (number) entry_.gflops = d;
        return true;
      case Field::gbs:
        if (number) entry_.gbs = d;
        return true;
      case Field::compile:
        if (number) entry_.compile_ms = d;
        return true;
      case Field::verification:
        if (number) entry_.verification_ms = d;
        return true;
      case Field::times:
      case Field::other:
        return true;
    }
    return true;
  }

  KtCache& cache_;
  std::string source_;
  std::string error_;
  int depth_ = 0;
  Top top_ = Top::other;
  Field field_ = Field::other;
  int param_ = -1;
  bool saw_cache_ = false;
  bool has_time_ = false;
  std::string param_name_;
  std::string entry_key_;
  KtEntry entry_;
  std::vector<char> seen_;
  std::unordered_map<std::string, int> key_index_;
};

// RapidJSON's SAX events handed to a CacheReader. RapidJSON, not nlohmann's parser: a 16 MB
// cache takes nlohmann about a second here, and Kernel Tuner writes NaN, which nlohmann
// refuses (kParseNanAndInfFlag takes it). Integers that fit int64 arrive as integers, the rest
// as doubles.
class RapidJSONEvents : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RapidJSONEvents> {
 public:
  explicit RapidJSONEvents(CacheReader& reader) : r_(reader) {}
  bool Null() { return r_.null(); }
  bool Bool(bool v) { return r_.boolean(v); }
  bool Int(int v) { return r_.number_integer(v); }
  bool Uint(unsigned v) { return r_.number_integer(v); }
  bool Int64(int64_t v) { return r_.number_integer(v); }
  bool Uint64(uint64_t v) {
    if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return r_.number_integer(static_cast<int64_t>(v));
    return r_.number_float(static_cast<double>(v));
  }
  bool Double(double v) { return r_.number_float(v); }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    text_.assign(s, n);
    return r_.string(text_);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    text_.assign(s, n);
    return r_.key(text_);
  }
  bool StartObject() { return r_.start_object(); }
  bool EndObject(rapidjson::SizeType) { return r_.end_object(); }
  bool StartArray() { return r_.start_array(); }
  bool EndArray(rapidjson::SizeType) { return r_.end_array(); }

 private:
  CacheReader& r_;
  std::string text_;
};

}  // namespace

KtCache parse_kt_cache(const std::string& json_text, const std::string& source) {
  KtCache cache;
  cache.objective = "time";
  CacheReader reader(cache, source);
  RapidJSONEvents events(reader);
  rapidjson::Reader json;
  rapidjson::MemoryStream bytes(json_text.data(), json_text.size());
  constexpr unsigned flags = rapidjson::kParseNanAndInfFlag | rapidjson::kParseFullPrecisionFlag;
  const rapidjson::ParseResult ok = json.Parse<flags>(bytes, events);
  if (!ok) {
    if (ok.Code() != rapidjson::kParseErrorTermination)
      throw ConfigError(fmt::format("{}: not valid JSON (byte {}: {})", source, ok.Offset(),
                                    rapidjson::GetParseError_En(ok.Code())));
    throw ConfigError(fmt::format("{}: {}", source, reader.error()));
  }
  if (cache.tune_params_keys.empty())
    throw ConfigError(fmt::format("{}: missing \"tune_params_keys\"", source));
  if (!reader.saw_cache() && cache.entries.empty())
    throw ConfigError(fmt::format("{}: missing \"cache\"", source));
  for (const auto& name : cache.tune_params_keys) {
    auto it = std::find_if(reader.params_.begin(), reader.params_.end(),
                           [&](const auto& p) { return p.first == name; });
    if (it == reader.params_.end())
      throw ConfigError(fmt::format("{}: tune_params lacks '{}'", source, name));
    cache.tune_params.push_back(it->second);
  }
  return cache;
}

KtCache load_kt_cache(const std::string& path) {
  std::string data = read_file(path);
  const bool gzip = data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
                    static_cast<unsigned char>(data[1]) == 0x8b;
  if (gzip) data = gunzip(data, path);
  return parse_kt_cache(data, path);
}

}  // namespace cutune::replay
