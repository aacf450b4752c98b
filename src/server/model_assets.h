// Start-up helpers that read a model's serving assets: the chat template
// (--chat-template file or inline text, else tokenizer_config.json's
// "chat_template" (string, or the "default" entry of a list), else
// chat_template.jinja next to it, else a GGUF's tokenizer.chat_template),
// the bos/eos token strings templates see (tokenizer_config.json, else the
// tokenizer's BOS/EOS tokens), and sampling defaults from
// generation_config.json.
//
// Thread-safety: start-up only (reads files).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "chat_template/chat_template.h"
#include "model/loader/model_files.h"
#include "server/server_context.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

struct ChatAssets {
  std::optional<chat_template::ChatTemplate> chat_template;  // none: chat answers 400
  std::string source;  // where the template came from, for the log
  std::string bos_token;
  std::string eos_token;
};

// Errors: an unreadable --chat-template file, a template that does not parse.
StatusOr<ChatAssets> load_chat_assets(const model::ModelFiles& files,
                                      const tokenizer::Tokenizer& tokenizer,
                                      const std::string& chat_template_flag);

// --generation-config: "auto" (the model's generation_config.json), "vllm"
// (neutral defaults) or a directory holding a generation_config.json.
StatusOr<SamplingDefaults> load_sampling_defaults(const model::ModelFiles& files,
                                                  const std::string& mode);

}  // namespace strata::server
