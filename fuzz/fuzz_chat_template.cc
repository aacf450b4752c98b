// Fuzz target: chat-template parsing and rendering (templates ship inside
// downloaded model repos). The input is the template source; a parsed
// template is rendered over a small fixed conversation with tight limits so
// that each run stays cheap.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "chat_template/chat_template.h"

namespace {

nlohmann::ordered_json fuzz_messages() {
  return nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi <b>there</b>"},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": [{"type": "text", "text": "2+2?"}]}
  ])");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ct = strata::chat_template;
  static const nlohmann::ordered_json messages = fuzz_messages();
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = ct::ChatTemplate::parse(source);
  if (!tmpl.ok()) return 0;
  ct::RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_steps = 1 << 16;
  (void)ct::apply_chat_template(tmpl.value(), messages, /*add_generation_prompt=*/true,
                                nlohmann::ordered_json(), "<s>", "</s>",
                                nlohmann::ordered_json::object(), limits);
  return 0;
}
