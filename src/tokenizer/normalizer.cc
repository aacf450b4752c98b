#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(utf8proc_option_t options) : options_(options) {}
  void normalize(std::string* text) const override {
    bool ascii = true;
    for (char c : *text) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
    if (ascii) return;  // every Unicode normal form leaves ASCII unchanged
    utf8proc_uint8_t* out = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text->data()),
                                static_cast<utf8proc_ssize_t>(text->size()), &out, options_);
    if (n >= 0) text->assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
  }

 private:
  utf8proc_option_t options_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string* text) const override {
    if (text->empty()) return;
    std::string out;
    out.reserve(prefix_.size() + text->size());
    out.append(prefix_).append(*text);
    *text = std::move(out);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string* text) const override {
    *text = regex_replace_all(pattern_, *text, content_);
  }

 private:
  Regex pattern_;
  std::string content_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string* text) const override {
    size_t begin = 0, end = text->size();
    char32_t c = 0;
    while (left_ && begin < end) {
      const int n = utf8_decode(*text, begin, &c);
      if (n == 0 || !is_unicode_whitespace(c)) break;
      begin += n;
    }
    while (right_ && end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<uint8_t>((*text)[start]) & 0xC0) == 0x80) --start;
      const int n = utf8_decode(*text, start, &c);
      if (n == 0 || !is_unicode_whitespace(c)) break;
      end = start;
    }
    *text = text->substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void normalize(std::string* text) const override {
    std::string out;
    out.reserve(text->size());
    char32_t c = 0;
    for (size_t pos = 0; pos < text->size();) {
      const int n = utf8_decode(*text, pos, &c);
      utf8_append(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))), &out);
      pos += n == 0 ? 1 : n;
    }
    *text = std::move(out);
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void normalize(std::string* text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

utf8proc_option_t unicode_form(const std::string& type) {
  const int base = UTF8PROC_STABLE;
  if (type == "NFC") return static_cast<utf8proc_option_t>(base | UTF8PROC_COMPOSE);
  if (type == "NFD") return static_cast<utf8proc_option_t>(base | UTF8PROC_DECOMPOSE);
  if (type == "NFKC")
    return static_cast<utf8proc_option_t>(base | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  return static_cast<utf8proc_option_t>(base | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
}

StatusOr<std::unique_ptr<Normalizer>> make_sequence(const nlohmann::json& config) {
  auto it = config.find("normalizers");
  if (it == config.end() || !it->is_array()) {
    return invalid_argument("normalizer Sequence: missing 'normalizers' array");
  }
  std::vector<std::unique_ptr<Normalizer>> steps;
  for (const auto& child : *it) {
    STRATA_ASSIGN_OR_RETURN(auto step, make_normalizer(child));
    if (step) steps.push_back(std::move(step));
  }
  return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(steps)));
}

}  // namespace

StatusOr<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& config) {
  if (config.is_null()) return std::unique_ptr<Normalizer>();
  const std::string type = json_type(config);
  if (type == "Sequence") return make_sequence(config);
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode_form(type)));
  }
  if (type == "Prepend") return make_prepend_normalizer(json_string(config, "prepend", ""));
  if (type == "Replace") {
    STRATA_ASSIGN_OR_RETURN(Regex pattern, json_pattern(config, "normalizer Replace"));
    return std::unique_ptr<Normalizer>(
        new ReplaceNormalizer(std::move(pattern), json_string(config, "content", "")));
  }
  if (type == "Strip") {
    return std::unique_ptr<Normalizer>(new StripNormalizer(json_bool(config, "strip_left", true),
                                                           json_bool(config, "strip_right", true)));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  return unimplemented("normalizer type '" + type +
                       "' is not supported (supported: NFC, NFD, NFKC, NFKD, Prepend, Replace, "
                       "Strip, Lowercase, Sequence)");
}

std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix) {
  return std::make_unique<PrependNormalizer>(std::move(prefix));
}

std::unique_ptr<Normalizer> make_replace_normalizer(std::string from, std::string to) {
  auto pattern = Regex::compile(from, /*is_literal=*/true);
  STRATA_CHECK(pattern.ok()) << pattern.status().to_string();
  return std::make_unique<ReplaceNormalizer>(std::move(pattern).value(), std::move(to));
}

std::unique_ptr<Normalizer> make_sequence_normalizer(std::unique_ptr<Normalizer> first,
                                                     std::unique_ptr<Normalizer> second) {
  std::vector<std::unique_ptr<Normalizer>> steps;
  steps.push_back(std::move(first));
  steps.push_back(std::move(second));
  return std::make_unique<SequenceNormalizer>(std::move(steps));
}

}  // namespace strata::tokenizer
