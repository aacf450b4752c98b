// Internal pieces shared by the tool-call parsers (not part of the module's API):
// the result builder that applies the content rules, marker search, the
// {"name": ..., "arguments": ...} object scanner, and the parser factories.
//
// Every parser is one function scan(text, at_end): parse() is scan(text, true)
// and parse_partial() is scan(text, false), so the streaming and whole-text
// results come from the same code and agree by construction.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "output_parsers/tool_call_parser.h"
#include "output_parsers/value_scanner.h"

namespace strata::output_parsers::internal {

// Collects content and calls in text order and applies the content rules
// (whitespace right after a call dropped; whitespace-only content -> "";
// partial results hold back a truncated UTF-8 sequence).
class ResultBuilder {
 public:
  explicit ResultBuilder(bool at_end) : at_end_(at_end) {}
  void add_content(std::string_view text);
  void add_call(std::string name, std::string arguments);
  ToolParseResult take();

 private:
  bool at_end_;
  bool after_call_ = false;
  ToolParseResult result_;
};

// Earliest occurrence at or after `pos` of any of `markers`; npos when none.
// *marker_idx tells which.
size_t find_marker(std::string_view text, size_t pos, const std::vector<std::string>& markers,
                   size_t* marker_idx);

// Length of the longest suffix of text[pos..] that is a proper prefix of one
// of `markers` (text that may turn into a marker once more arrives).
size_t held_marker_suffix(std::string_view text, size_t pos,
                          const std::vector<std::string>& markers);

bool starts_with_at(std::string_view text, size_t pos, std::string_view word);

// A JSON object naming a call: {"name": "f", "arguments": {...}} (key order
// free; other keys skipped; the first of `argument_keys` present is used).
struct CallObjectScan {
  ScanState state = ScanState::kIncomplete;  // of the whole object
  size_t end = 0;                            // as in ValueScan
  bool has_name = false;                     // the "name" string is complete
  std::string name;
  bool has_arguments = false;  // an argument key was seen and its value began
  ValueScan arguments;
};
CallObjectScan scan_call_object(std::string_view text, size_t pos, bool at_end,
                                std::initializer_list<std::string_view> argument_keys);

// The arguments text to report for a call whose name is complete. `final`: the
// call will not continue (end of text, or its object broke).
std::string call_object_arguments(const CallObjectScan& call, bool final);

// Formats whose calls begin with a marker anywhere in the text (hermes,
// mistral, qwen3_xml): content runs up to a marker, then call_at() reads the
// call(s) there.
class MarkerParser : public ToolCallParser {
 public:
  std::vector<std::string> call_markers() const override { return markers_; }

 protected:
  explicit MarkerParser(std::vector<std::string> markers) : markers_(std::move(markers)) {}

  struct Step {
    enum Kind {
      kNotCall,   // no call here: the marker is content, scanning goes on after it
      kStop,      // a call runs to the end of the text (or may: hold everything from here)
      kContinue,  // call(s) added; content scanning resumes at `next`
    };
    Kind kind = kNotCall;
    size_t next = 0;
  };
  // Reads the call(s) at a marker; adds committed calls to `out`.
  virtual Step call_at(std::string_view text, size_t marker_pos, size_t marker_idx, bool at_end,
                       const nlohmann::ordered_json* tools, ResultBuilder& out) const = 0;

  ToolParseResult scan(std::string_view text, bool at_end,
                       const nlohmann::ordered_json* tools) const final;

  std::vector<std::string> markers_;
};

std::unique_ptr<ToolCallParser> make_hermes_parser();
std::unique_ptr<ToolCallParser> make_llama3_json_parser();
std::unique_ptr<ToolCallParser> make_mistral_parser();
std::unique_ptr<ToolCallParser> make_pythonic_parser();
std::unique_ptr<ToolCallParser> make_qwen3_xml_parser();

}  // namespace strata::output_parsers::internal
