// Hand-made tokenizer.json documents shared by the tokenizer unit tests.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"

namespace strata::tokenizer::testing {

// Byte-level BPE over the 256 byte characters plus `merges` (strings of raw
// text, split at the first space, mapped to byte-level characters).
inline nlohmann::json byte_level_json(
    const std::vector<std::pair<std::string, std::string>>& merges) {
  nlohmann::json vocab = nlohmann::json::object();
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    std::string c;
    byte_level_encode(std::string(1, static_cast<char>(b)), &c);
    vocab[c] = next++;
  }
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [l, r] : merges) {
    std::string left, right;
    byte_level_encode(l, &left);
    byte_level_encode(r, &right);
    if (!vocab.contains(left + right)) vocab[left + right] = next++;
    merge_list.push_back(nlohmann::json::array({left, right}));
  }
  return {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", next},
         {"content", "<|endoftext|>"},
         {"single_word", false},
         {"lstrip", false},
         {"rstrip", false},
         {"normalized", false},
         {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}},
  };
}

// Llama-2-style SentencePiece BPE: <unk>=0 <s>=1 </s>=2, <0x00>..<0xFF>=3..258,
// then single characters and the merged pieces of `merges`.
inline nlohmann::json sentencepiece_json(
    const std::vector<std::string>& chars,
    const std::vector<std::pair<std::string, std::string>>& merges) {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  int next = 3;
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = next++;
  }
  for (const auto& c : chars) {
    if (!vocab.contains(c)) vocab[c] = next++;
  }
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [l, r] : merges) {
    if (!vocab.contains(l + r)) vocab[l + r] = next++;
    merge_list.push_back(l + " " + r);
  }
  const auto special = [](int id, const char* content) {
    return nlohmann::json{{"id", id},        {"content", content}, {"single_word", false},
                          {"lstrip", false}, {"rstrip", false},    {"normalized", false},
                          {"special", true}};
  };
  return {
      {"added_tokens", {special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", merge_list}}},
  };
}

}  // namespace strata::tokenizer::testing
