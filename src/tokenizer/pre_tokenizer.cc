#include "tokenizer/pre_tokenizer.h"

#include <functional>
#include <utility>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/split.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// prefix + text (std::string::insert(0, ...) trips g++ 12's -Wrestrict).
std::string prepend(const std::string& prefix, const std::string& text) {
  std::string out;
  out.reserve(prefix.size() + text.size());
  out.append(prefix).append(text);
  return out;
}

// Applies `split_one` to every piece and collects the sub-pieces.
template <typename Fn>
void split_each(std::vector<Piece>* pieces, Fn&& split_one) {
  std::vector<Piece> out;
  out.reserve(pieces->size() * 2);
  for (const Piece& piece : *pieces) split_one(piece, &out);
  *pieces = std::move(out);
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::optional<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  void pre_tokenize(std::vector<Piece>* pieces) const override {
    split_each(pieces, [&](const Piece& piece, std::vector<Piece>* out) {
      Piece p = piece;
      if (add_prefix_space_ && (p.text.empty() || p.text[0] != ' ')) p.text = prepend(" ", p.text);
      const size_t first = out->size();
      if (regex_) {
        split_by_regex(p, *regex_, SplitBehavior::kIsolated, false, out);
      } else if (!p.text.empty()) {
        out->push_back(std::move(p));
      }
      for (size_t i = first; i < out->size(); ++i) {
        std::string mapped;
        mapped.reserve((*out)[i].text.size() * 2);
        byte_level_encode((*out)[i].text, &mapped);
        (*out)[i].text = std::move(mapped);
      }
    });
  }

 private:
  bool add_prefix_space_;
  std::optional<Regex> regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Regex regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>* pieces) const override {
    split_each(pieces, [&](const Piece& piece, std::vector<Piece>* out) {
      split_by_regex(piece, regex_, behavior_, invert_, out);
    });
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

  void pre_tokenize(std::vector<Piece>* pieces) const override {
    split_each(pieces, [&](const Piece& piece, std::vector<Piece>* out) {
      Piece p{replace_spaces(piece.text), piece.at_input_start};
      const bool starts = p.text.compare(0, replacement_.size(), replacement_) == 0;
      const bool should_prepend = scheme_ == PrependScheme::kAlways ||
                                  (scheme_ == PrependScheme::kFirst && p.at_input_start);
      if (should_prepend && !starts) p.text = prepend(replacement_, p.text);
      if (!split_) {
        if (!p.text.empty()) out->push_back(std::move(p));
        return;
      }
      const char32_t rep = first_char(replacement_);
      split_by_char(
          p, [rep](char32_t c) { return c == rep; }, SplitBehavior::kMergedWithNext, out);
    });
  }

 private:
  std::string replace_spaces(const std::string& text) const {
    std::string out;
    out.reserve(text.size() + 8);
    for (char c : text) {
      if (c == ' ') {
        out += replacement_;
      } else {
        out.push_back(c);
      }
    }
    return out;
  }
  static char32_t first_char(const std::string& s) {
    char32_t c = 0;
    return (!s.empty() && utf8_decode(s, 0, &c) > 0) ? c : U'\u2581';
  }

  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

// Digits, Whitespace and WhitespaceSplit: character-class splitters.
class CharClassPreTokenizer final : public PreTokenizer {
 public:
  CharClassPreTokenizer(std::function<bool(char32_t)> predicate, SplitBehavior behavior)
      : predicate_(std::move(predicate)), behavior_(behavior) {}
  void pre_tokenize(std::vector<Piece>* pieces) const override {
    split_each(pieces, [&](const Piece& piece, std::vector<Piece>* out) {
      split_by_char(piece, predicate_, behavior_, out);
    });
  }

 private:
  std::function<bool(char32_t)> predicate_;
  SplitBehavior behavior_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Piece>* pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

using PreTokenizerOr = StatusOr<std::unique_ptr<PreTokenizer>>;

PreTokenizerOr make_byte_level(const nlohmann::json& config) {
  std::optional<Regex> regex;
  if (json_bool(config, "use_regex", true)) {
    STRATA_ASSIGN_OR_RETURN(Regex compiled, Regex::compile(kGpt2Pattern));
    regex = std::move(compiled);
  }
  return std::unique_ptr<PreTokenizer>(
      new ByteLevelPreTokenizer(json_bool(config, "add_prefix_space", true), std::move(regex)));
}

PreTokenizerOr make_split(const nlohmann::json& config) {
  STRATA_ASSIGN_OR_RETURN(Regex regex, json_pattern(config, "pre_tokenizer Split"));
  const std::string name = json_string(config, "behavior", "");
  STRATA_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_split_behavior(name));
  return std::unique_ptr<PreTokenizer>(
      new SplitPreTokenizer(std::move(regex), behavior, json_bool(config, "invert", false)));
}

PreTokenizerOr make_metaspace(const nlohmann::json& config) {
  std::string scheme_name = json_string(config, "prepend_scheme", "");
  if (scheme_name.empty())
    scheme_name = json_bool(config, "add_prefix_space", true) ? "always" : "never";
  PrependScheme scheme = PrependScheme::kAlways;
  if (scheme_name == "first") {
    scheme = PrependScheme::kFirst;
  } else if (scheme_name == "never") {
    scheme = PrependScheme::kNever;
  } else if (scheme_name != "always") {
    return invalid_argument("pre_tokenizer Metaspace: unknown prepend_scheme '" + scheme_name +
                            "'");
  }
  return std::unique_ptr<PreTokenizer>(
      new MetaspacePreTokenizer(json_string(config, "replacement", "\xE2\x96\x81"), scheme,
                                json_bool(config, "split", true)));
}

PreTokenizerOr make_sequence(const nlohmann::json& config) {
  auto it = config.find("pretokenizers");
  if (it == config.end() || !it->is_array()) {
    return invalid_argument("pre_tokenizer Sequence: missing 'pretokenizers' array");
  }
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (const auto& child : *it) {
    STRATA_ASSIGN_OR_RETURN(auto step, make_pre_tokenizer(child));
    if (step) steps.push_back(std::move(step));
  }
  return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(steps)));
}

PreTokenizerOr make_char_class(const std::string& type, const nlohmann::json& config) {
  if (type == "Digits") {
    const auto behavior = json_bool(config, "individual_digits", false)
                              ? SplitBehavior::kIsolated
                              : SplitBehavior::kContiguous;
    return std::unique_ptr<PreTokenizer>(new CharClassPreTokenizer(is_numeric_char, behavior));
  }
  // WhitespaceSplit: split on whitespace, dropping it.
  return std::unique_ptr<PreTokenizer>(
      new CharClassPreTokenizer(is_unicode_whitespace, SplitBehavior::kRemoved));
}

}  // namespace

PreTokenizerOr make_pre_tokenizer(const nlohmann::json& config) {
  if (config.is_null()) return std::unique_ptr<PreTokenizer>();
  const std::string type = json_type(config);
  if (type == "ByteLevel") return make_byte_level(config);
  if (type == "Split") return make_split(config);
  if (type == "Metaspace") return make_metaspace(config);
  if (type == "Sequence") return make_sequence(config);
  if (type == "Digits" || type == "WhitespaceSplit") return make_char_class(type, config);
  if (type == "Whitespace") {
    STRATA_ASSIGN_OR_RETURN(Regex regex, Regex::compile(R"(\w+|[^\w\s]+)"));
    return std::unique_ptr<PreTokenizer>(
        new SplitPreTokenizer(std::move(regex), SplitBehavior::kRemoved, /*invert=*/true));
  }
  return unimplemented("pre_tokenizer type '" + type +
                       "' is not supported (supported: ByteLevel, Split, Metaspace, Digits, "
                       "Whitespace, WhitespaceSplit, Sequence)");
}

PreTokenizerOr make_byte_level_split(const std::string& regex) {
  STRATA_ASSIGN_OR_RETURN(Regex compiled, Regex::compile(regex));
  return std::unique_ptr<PreTokenizer>(
      new ByteLevelPreTokenizer(/*add_prefix_space=*/false, std::move(compiled)));
}

}  // namespace strata::tokenizer
