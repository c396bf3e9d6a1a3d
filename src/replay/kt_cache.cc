#include "src/replay/kt_cache.h"

#include <fstream>
#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
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

// A minimal JSON scanner that feeds a handler event by event. nlohmann's parser (DOM or SAX)
// takes about a second for a 16 MB cache here; this one, with std::from_chars for numbers,
// takes a fraction of that. Strings are decoded into a reused buffer.
template <typename Handler>
class JsonScanner {
 public:
  JsonScanner(std::string_view text, Handler& handler) : text_(text), h_(handler) {}

  // False on a syntax error or when the handler stops; error_position() says where.
  bool run() {
    skip_ws();
    if (!value()) return false;
    skip_ws();
    if (at_ != text_.size()) return syntax();
    return true;
  }
  size_t error_position() const { return at_; }
  bool syntax_error() const { return syntax_error_; }

 private:
  bool syntax() {
    syntax_error_ = true;
    return false;
  }
  void skip_ws() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return syntax();
    at_ += word.size();
    return true;
  }

  bool value() {
    if (at_ >= text_.size()) return syntax();
    switch (text_[at_]) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        if (!string()) return false;
        return h_.string(buffer_);
      case 't':
        return literal("true") && h_.boolean(true);
      case 'f':
        return literal("false") && h_.boolean(false);
      case 'n':
        return literal("null") && h_.null();
      case 'N':
        return literal("NaN") && h_.number_float(std::numeric_limits<double>::quiet_NaN());
      default:
        return number();
    }
  }

  bool object() {
    ++at_;
    if (!h_.start_object()) return false;
    skip_ws();
    if (at_ < text_.size() && text_[at_] == '}') {
      ++at_;
      return h_.end_object();
    }
    for (;;) {
      skip_ws();
      if (at_ >= text_.size() || text_[at_] != '"' || !string()) return syntax();
      if (!h_.key(buffer_)) return false;
      skip_ws();
      if (at_ >= text_.size() || text_[at_] != ':') return syntax();
      ++at_;
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (at_ >= text_.size()) return syntax();
      if (text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (text_[at_] != '}') return syntax();
      ++at_;
      return h_.end_object();
    }
  }

  bool array() {
    ++at_;
    if (!h_.start_array()) return false;
    skip_ws();
    if (at_ < text_.size() && text_[at_] == ']') {
      ++at_;
      return h_.end_array();
    }
    for (;;) {
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (at_ >= text_.size()) return syntax();
      if (text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (text_[at_] != ']') return syntax();
      ++at_;
      return h_.end_array();
    }
  }

  // Decodes the string at at_ into buffer_. \\uXXXX escapes outside ASCII become '?': no name
  // or value the loader reads uses them.
  bool string() {
    ++at_;
    buffer_.clear();
    for (;;) {
      size_t run = at_;
      while (run < text_.size() && text_[run] != '"' && text_[run] != '\\') ++run;
      buffer_.append(text_.data() + at_, run - at_);
      at_ = run;
      if (at_ >= text_.size()) return syntax();
      if (text_[at_] == '"') {
        ++at_;
        return true;
      }
      if (++at_ >= text_.size()) return syntax();
      const char c = text_[at_++];
      switch (c) {
        case '"':
        case '\\':
        case '/':
          buffer_ += c;
          break;
        case 'b':
          buffer_ += '\b';
          break;
        case 'f':
          buffer_ += '\f';
          break;
        case 'n':
          buffer_ += '\n';
          break;
        case 'r':
          buffer_ += '\r';
          break;
        case 't':
          buffer_ += '\t';
          break;
        case 'u': {
          if (at_ + 4 > text_.size()) return syntax();
          unsigned code = 0;
          auto [end, ec] = std::from_chars(text_.data() + at_, text_.data() + at_ + 4, code, 16);
          if (ec != std::errc() || end != text_.data() + at_ + 4) return syntax();
          buffer_ += code < 0x80 ? static_cast<char>(code) : '?';
          at_ += 4;
          break;
        }
        default:
          return syntax();
      }
    }
  }

  bool number() {
    const char* begin = text_.data() + at_;
    const char* end = text_.data() + text_.size();
    const char* p = begin;
    if (p < end && *p == '-') ++p;
    while (p < end && *p >= '0' && *p <= '9') ++p;
    const bool integral = !(p < end && (*p == '.' || *p == 'e' || *p == 'E'));
    if (integral) {
      int64_t v = 0;
      auto [stop, ec] = std::from_chars(begin, end, v);
      if (ec == std::errc() && stop == p && stop != begin) {
        at_ += static_cast<size_t>(stop - begin);
        return h_.number_integer(v);
      }
    }
    double d = 0;
    auto [stop, ec] = std::from_chars(begin, end, d);
    if (ec != std::errc() || stop == begin) return syntax();
    at_ += static_cast<size_t>(stop - begin);
    return h_.number_float(d);
  }

  std::string_view text_;
  Handler& h_;
  size_t at_ = 0;
  bool syntax_error_ = false;
  std::string buffer_;
};

// The cache's structure, driven by JsonScanner's events. Depth 1 is inside the top-level
// object; the cache's entries are objects at depth 3 and their "times" arrays at depth 4.
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
  enum class Field : uint8_t { other, param, time, times, gflops, gbs };
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

}  // namespace

KtCache parse_kt_cache(const std::string& json_text, const std::string& source) {
  KtCache cache;
  cache.objective = "time";
  CacheReader reader(cache, source);
  JsonScanner<CacheReader> scanner(json_text, reader);
  if (!scanner.run()) {
    if (scanner.syntax_error())
      throw ConfigError(
          fmt::format("{}: not valid JSON (byte {})", source, scanner.error_position()));
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
