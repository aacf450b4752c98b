#include "tokenizer/decoder.h"

#include <utility>

#include "base/hex.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/utf8.h"

namespace strata::tokenizer {
namespace {

const char* const kMetaspace = "\xE2\x96\x81";  // U+2581

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>* tokens) const override {
    std::string bytes;
    for (const std::string& token : *tokens) {
      if (!byte_level_decode(token, &bytes)) bytes += token;
    }
    tokens->assign(1, utf8_lossy(bytes));
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& token = (*tokens)[i];
      std::string out;
      for (size_t pos = 0; pos < token.size();) {
        if (!replacement_.empty() && token.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && strip_first_)) out.push_back(' ');
          pos += replacement_.size();
        } else {
          out.push_back(token[pos++]);
        }
      }
      token = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (std::string& token : *tokens) token = regex_replace_all(pattern_, token, content_);
  }

 private:
  Regex pattern_;
  std::string content_;
};

}  // namespace

int parse_byte_token(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    const int digit = hex_digit_value(static_cast<unsigned char>(token[i]));
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

namespace {

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>* tokens) const override {
    std::vector<std::string> out;
    std::string run;
    const auto flush = [&] {
      if (run.empty()) return;
      if (is_valid_utf8(run)) {
        out.push_back(run);
      } else {
        for (size_t i = 0; i < run.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
    };
    for (std::string& token : *tokens) {
      const int byte = parse_byte_token(token);
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    *tokens = std::move(out);
  }
  bool has_byte_fallback() const override { return true; }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>* tokens) const override {
    std::string joined;
    for (const std::string& token : *tokens) joined += token;
    tokens->assign(1, std::move(joined));
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (std::string& token : *tokens) token = strip(token);
  }

 private:
  std::string strip(const std::string& token) const {
    std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, code point)
    char32_t c = 0;
    for (size_t pos = 0; pos < token.size();) {
      int n = utf8_decode(token, pos, &c);
      chars.emplace_back(pos, n == 0 ? kReplacementChar : c);
      pos += n == 0 ? 1 : n;
    }
    size_t begin = 0, end = chars.size();
    for (size_t i = 0; i < start_ && i < chars.size() && chars[i].second == content_; ++i)
      begin = i + 1;
    for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
      const size_t idx = chars.size() - i - 1;
      if (chars[idx].second != content_) break;
      end = idx;
    }
    if (begin >= end) return "";
    const size_t b = chars[begin].first;
    const size_t e = end < chars.size() ? chars[end].first : token.size();
    return token.substr(b, e - b);
  }
  char32_t content_;
  size_t start_, stop_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  bool has_byte_fallback() const override {
    for (const auto& step : steps_) {
      if (step->has_byte_fallback()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

using DecoderOr = StatusOr<std::unique_ptr<Decoder>>;

DecoderOr make_sequence(const nlohmann::json& config) {
  auto it = config.find("decoders");
  if (it == config.end() || !it->is_array()) {
    return invalid_argument("decoder Sequence: missing 'decoders' array");
  }
  std::vector<std::unique_ptr<Decoder>> steps;
  for (const auto& child : *it) {
    STRATA_ASSIGN_OR_RETURN(auto step, make_decoder(child));
    if (step) steps.push_back(std::move(step));
  }
  return std::unique_ptr<Decoder>(new SequenceDecoder(std::move(steps)));
}

DecoderOr make_metaspace(const nlohmann::json& config) {
  std::string scheme = json_string(config, "prepend_scheme", "");
  if (scheme.empty()) scheme = json_bool(config, "add_prefix_space", true) ? "always" : "never";
  return std::unique_ptr<Decoder>(
      new MetaspaceDecoder(json_string(config, "replacement", kMetaspace), scheme != "never"));
}

DecoderOr make_strip(const nlohmann::json& config) {
  const std::string content = json_string(config, "content", " ");
  char32_t c = ' ';
  if (!content.empty() && utf8_decode(content, 0, &c) == 0) c = ' ';
  const auto count = [&](const char* key) {
    auto it = config.find(key);
    return (it != config.end() && it->is_number_unsigned()) ? it->get<size_t>() : size_t{0};
  };
  return std::unique_ptr<Decoder>(new StripDecoder(c, count("start"), count("stop")));
}

}  // namespace

DecoderOr make_decoder(const nlohmann::json& config) {
  if (config.is_null()) return std::unique_ptr<Decoder>();
  const std::string type = json_type(config);
  if (type == "Sequence") return make_sequence(config);
  if (type == "ByteLevel") return make_byte_level_decoder();
  if (type == "Metaspace") return make_metaspace(config);
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(new ByteFallbackDecoder());
  if (type == "Fuse") return std::unique_ptr<Decoder>(new FuseDecoder());
  if (type == "Strip") return make_strip(config);
  if (type == "Replace") {
    STRATA_ASSIGN_OR_RETURN(Regex pattern, json_pattern(config, "decoder Replace"));
    return std::unique_ptr<Decoder>(
        new ReplaceDecoder(std::move(pattern), json_string(config, "content", "")));
  }
  return unimplemented("decoder type '" + type +
                       "' is not supported (supported: ByteLevel, Metaspace, Replace, "
                       "ByteFallback, Fuse, Strip, Sequence)");
}

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }

std::unique_ptr<Decoder> make_sentencepiece_decoder() {
  std::vector<std::unique_ptr<Decoder>> steps;
  auto space = Regex::compile(kMetaspace, /*is_literal=*/true);
  STRATA_CHECK(space.ok()) << space.status().to_string();
  steps.push_back(std::make_unique<ReplaceDecoder>(std::move(space).value(), " "));
  steps.push_back(std::make_unique<ByteFallbackDecoder>());
  steps.push_back(std::make_unique<FuseDecoder>());
  steps.push_back(std::make_unique<StripDecoder>(U' ', 1, 0));
  return std::make_unique<SequenceDecoder>(std::move(steps));
}

}  // namespace strata::tokenizer
