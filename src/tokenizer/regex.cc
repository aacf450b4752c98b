#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace strata::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Per-thread match data and JIT stack, shared by every Regex on that thread.
struct ThreadMatchState {
  pcre2_match_data* match_data = pcre2_match_data_create(4, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  ThreadMatchState() { pcre2_jit_stack_assign(context, nullptr, jit_stack); }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(match_data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

StatusOr<Regex> Regex::compile(std::string_view pattern, bool is_literal) {
  // PCRE2_LITERAL does not combine with UCP (which literals do not need).
  const uint32_t options =
      PCRE2_UTF | PCRE2_NO_UTF_CHECK | (is_literal ? PCRE2_LITERAL : PCRE2_UCP);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return invalid_argument("regex '" + std::string(pattern) + "' does not compile at offset " +
                            std::to_string(error_offset) + ": " + pcre2_message(error_code));
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  holder->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return Regex(std::string(pattern), std::move(holder));
}

void Regex::find_all(std::string_view text, std::vector<ByteRange>* matches) const {
  matches->clear();
  ThreadMatchState& state = thread_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    int rc = code_->jit ? pcre2_jit_match(code_->code, subject, text.size(), pos,
                                          PCRE2_NO_UTF_CHECK, state.match_data, state.context)
                        : PCRE2_ERROR_JIT_BADOPTION;
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_JIT_BADOPTION) {
      rc = pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       state.match_data, nullptr);
    }
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: no further matches
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.match_data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end > begin) {
      matches->push_back({begin, end});
      pos = end;
      continue;
    }
    // Empty match: step over one character so the scan always advances.
    if (begin >= text.size()) break;
    pos = begin + utf8_lead_length(static_cast<uint8_t>(text[begin]));
  }
}

}  // namespace strata::tokenizer
