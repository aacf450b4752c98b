// Reasoning parsers (vLLM's --reasoning-parser): split generated text into the
// model's reasoning (between <think> and </think>) and the answer content, for a
// whole response (parse) and while streaming (parse_partial; ReasoningStreamer in
// reasoning_streamer.h turns those into deltas).
//
//   deepseek_r1  Reasoning runs from the start (a leading <think> is stripped) to the first
//                </think>; without </think> all text is reasoning (R1's template opens
//                <think> in the prompt, so the output often has no start tag).
//   qwen3        Reasoning needs a leading <think> in the output, or prompt_opened_think;
//                otherwise all text is content (Qwen3 with enable_thinking=false). After
//                </think> the rest is content. A <think> that is never closed (generation
//                cut off) leaves all of it reasoning: vLLM's non-streaming Qwen3 parser would
//                return it as content, its streaming path as reasoning; we follow streaming
//                so both agree.
// As in vLLM, reasoning and content are verbatim: the newline after <think> and
// the blank lines after </think> are kept. Tags inside content are left alone.
// `deepseek_v3` is not offered (it switches by a chat-template flag).
//
// Thread-safety: parsers are immutable; any thread may call them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::output_parsers {

struct ReasoningResult {
  std::string reasoning;
  std::string content;
  bool has_reasoning = false;    // a reasoning section was opened (reasoning may still be "")
  bool reasoning_ended = false;  // its </think> was seen
};

class ReasoningParser {
 public:
  virtual ~ReasoningParser() = default;

  // `prompt_opened_think`: the prompt already ends inside a <think> section (DeepSeek-R1's
  // generation prompt ends with "<think>\n"; Qwen3 with enable_thinking=false has a closed
  // "<think>\n\n</think>\n\n" there, which is false).
  ReasoningResult parse(std::string_view text, bool prompt_opened_think) const {
    return scan(text, prompt_opened_think, /*at_end=*/true);
  }
  // `text` is everything generated so far. Holds back a suffix that could begin
  // </think> (or a leading <think>) and a truncated UTF-8 sequence; the result's
  // reasoning and content are prefixes of parse()'s once the text is complete.
  ReasoningResult parse_partial(std::string_view text, bool prompt_opened_think) const {
    return scan(text, prompt_opened_think, /*at_end=*/false);
  }

  virtual std::string_view name() const = 0;
  virtual std::string_view start_marker() const { return "<think>"; }
  virtual std::string_view end_marker() const { return "</think>"; }

 protected:
  // Whether text without a leading start marker (and not inside a prompt-opened
  // section) is reasoning.
  virtual bool untagged_is_reasoning() const = 0;

 private:
  ReasoningResult scan(std::string_view text, bool prompt_opened_think, bool at_end) const;
};

// deepseek_r1, qwen3. Unknown name -> invalid_argument listing the known ones.
StatusOr<std::unique_ptr<ReasoningParser>> make_reasoning_parser(std::string_view name);
std::vector<std::string> reasoning_parser_names();

}  // namespace strata::output_parsers
