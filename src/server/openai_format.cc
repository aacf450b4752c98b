#include "server/openai_format.h"

#include "server/json_writer.h"

namespace strata::server {
namespace {

void write_usage(JsonWriter& w, const Usage& u) {
  w.begin_object();
  w.key("prompt_tokens").value(u.prompt_tokens);
  w.key("total_tokens").value(u.prompt_tokens + u.completion_tokens);
  w.key("completion_tokens").value(u.completion_tokens);
  w.key("prompt_tokens_details").begin_object().key("cached_tokens").value(u.cached_tokens);
  w.end_object();
  w.end_object();
}

void write_bytes(JsonWriter& w, const std::string& s) {
  w.begin_array();
  for (char c : s) w.value(static_cast<int64_t>(static_cast<unsigned char>(c)));
  w.end_array();
}

void write_chat_logprobs(JsonWriter& w, const std::vector<TokenLogprob>& lps) {
  w.begin_object().key("content").begin_array();
  for (const TokenLogprob& lp : lps) {
    w.begin_object();
    w.key("token").value(lp.token);
    w.key("logprob").value(static_cast<double>(lp.logprob));
    w.key("bytes");
    write_bytes(w, lp.token);
    w.key("top_logprobs").begin_array();
    for (const auto& [tok, val] : lp.top) {
      w.begin_object().key("token").value(tok).key("logprob").value(static_cast<double>(val));
      w.key("bytes");
      write_bytes(w, tok);
      w.end_object();
    }
    w.end_array().end_object();
  }
  w.end_array().end_object();
}

void write_completion_logprobs(JsonWriter& w, const std::vector<TokenLogprob>& lps) {
  w.begin_object();
  w.key("text_offset").begin_array();
  for (const TokenLogprob& lp : lps) w.value(lp.text_offset);
  w.end_array().key("token_logprobs").begin_array();
  for (const TokenLogprob& lp : lps) {
    if (lp.is_null) {
      w.null();
    } else {
      w.value(static_cast<double>(lp.logprob));
    }
  }
  w.end_array().key("tokens").begin_array();
  for (const TokenLogprob& lp : lps) w.value(lp.token);
  w.end_array().key("top_logprobs").begin_array();
  for (const TokenLogprob& lp : lps) {
    if (lp.is_null) {
      w.null();
      continue;
    }
    w.begin_object();
    for (const auto& [tok, val] : lp.top) w.key(tok).value(static_cast<double>(val));
    w.end_object();
  }
  w.end_array().end_object();
}

void write_logprobs(JsonWriter& w, const ResponseMeta& meta, const ChoiceOutput& c) {
  w.key("logprobs");
  if (!c.has_logprobs) {
    w.null();
  } else if (meta.is_chat) {
    write_chat_logprobs(w, c.logprobs);
  } else {
    write_completion_logprobs(w, c.logprobs);
  }
}

void write_finish(JsonWriter& w, const ChoiceOutput& c) {
  w.key("finish_reason");
  if (c.finish_reason.empty()) {
    w.null();
  } else {
    w.value(c.finish_reason);
  }
  w.key("stop_reason").raw(c.stop_reason_json);
}

void write_header(JsonWriter& w, const ResponseMeta& meta, const char* object) {
  w.key("id").value(meta.id);
  w.key("object").value(object);
  w.key("created").value(meta.created);
  w.key("model").value(meta.model);
}

void write_token_ids(JsonWriter& w, const ChoiceOutput& c) {
  if (!c.has_token_ids) return;
  if (c.prompt_token_ids != nullptr) {
    w.key("prompt_token_ids").begin_array();
    for (int32_t id : *c.prompt_token_ids) w.value(static_cast<int64_t>(id));
    w.end_array();
  }
  w.key("token_ids").begin_array();
  for (int32_t id : c.token_ids) w.value(static_cast<int64_t>(id));
  w.end_array();
}

// message.tool_calls, or a delta's pieces of them.
void write_tool_calls(JsonWriter& w, const std::vector<ToolCallOutput>& calls, bool is_delta) {
  w.key("tool_calls").begin_array();
  for (const ToolCallOutput& t : calls) {
    w.begin_object();
    if (is_delta) w.key("index").value(t.index);
    if (!is_delta || !t.id.empty()) w.key("id").value(t.id).key("type").value("function");
    w.key("function").begin_object();
    if (!is_delta || !t.name.empty()) w.key("name").value(t.name);
    w.key("arguments").value(t.arguments);
    w.end_object().end_object();
  }
  w.end_array();
}

void write_stream_choice(JsonWriter& w, const ResponseMeta& meta, const ChoiceOutput& c) {
  w.begin_object().key("index").value(c.index);
  if (meta.is_chat) {
    w.key("delta").begin_object();
    if (c.with_role) w.key("role").value("assistant");
    if (c.with_role || !c.text.empty()) w.key("content").value(c.text);
    if (!c.reasoning.empty()) {
      w.key("reasoning").value(c.reasoning).key("reasoning_content").value(c.reasoning);
    }
    if (!c.tool_calls.empty()) write_tool_calls(w, c.tool_calls, true);
    w.end_object();
  } else {
    w.key("text").value(c.text);
  }
  write_logprobs(w, meta, c);
  write_finish(w, c);
  write_token_ids(w, c);
  w.end_object();
}

void write_full_choice(JsonWriter& w, const ResponseMeta& meta, const ChoiceOutput& c) {
  w.begin_object().key("index").value(c.index);
  if (meta.is_chat) {
    w.key("message").begin_object();
    w.key("role").value("assistant").key("content");
    if (c.content_null) {
      w.null();
    } else {
      w.value(c.text);
    }
    write_tool_calls(w, c.tool_calls, false);
    for (const char* key : {"reasoning", "reasoning_content"}) {
      w.key(key);
      if (c.has_reasoning) {
        w.value(c.reasoning);
      } else {
        w.null();
      }
    }
    w.end_object();
  } else {
    w.key("text").value(c.text);
  }
  write_logprobs(w, meta, c);
  write_finish(w, c);
  write_token_ids(w, c);
  if (!meta.is_chat) {
    w.key("prompt_logprobs");
    if (c.prompt_logprobs_json.empty()) {
      w.null();
    } else {
      w.raw(c.prompt_logprobs_json);
    }
  }
  w.end_object();
}

}  // namespace

std::string format_prompt_logprobs(const std::vector<PromptTokenLogprobs>& positions) {
  JsonWriter w;
  w.begin_array().null();
  for (const PromptTokenLogprobs& p : positions) {
    w.begin_object();
    for (const PromptTokenLogprobs::Entry& e : p.entries) {
      w.key(std::to_string(e.token_id)).begin_object();
      w.key("logprob").value(static_cast<double>(e.logprob));
      w.key("rank").value(e.rank);
      w.key("decoded_token").value(e.token);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  return w.take();
}

const char* openai_finish_reason(engine::FinishReason reason) {
  switch (reason) {
    case engine::FinishReason::kStop: return "stop";
    case engine::FinishReason::kLength: return "length";
    case engine::FinishReason::kAbort: return "abort";
    case engine::FinishReason::kNone: break;
  }
  return "";
}

std::string format_kv_transfer_params(const engine::KvTransferParams& params) {
  JsonWriter w;
  w.begin_object();
  w.key("do_remote_prefill").value(params.do_remote_prefill);
  w.key("do_remote_decode").value(params.do_remote_decode);
  w.key("remote_host").value(params.remote_host);
  w.key("remote_port").value(params.remote_port);
  w.end_object();
  return w.take();
}

std::string sse_event(const std::string& json) {
  std::string out;
  out.reserve(json.size() + 8);
  out.append("data: ").append(json).append("\n\n");
  return out;
}

std::string format_stream_chunk(const ResponseMeta& meta, const ChoiceOutput& choice,
                                const Usage* usage) {
  JsonWriter w;
  w.begin_object();
  write_header(w, meta, meta.is_chat ? "chat.completion.chunk" : "text_completion");
  w.key("choices").begin_array();
  write_stream_choice(w, meta, choice);
  w.end_array();
  if (usage != nullptr) {
    w.key("usage");
    write_usage(w, *usage);
  }
  if (!choice.finish_reason.empty() && !meta.kv_transfer_params_json.empty()) {
    w.key("kv_transfer_params").raw(meta.kv_transfer_params_json);
  }
  w.end_object();
  return sse_event(w.str());
}

std::string format_usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  JsonWriter w;
  w.begin_object();
  write_header(w, meta, meta.is_chat ? "chat.completion.chunk" : "text_completion");
  w.key("choices").begin_array().end_array();
  w.key("usage");
  write_usage(w, usage);
  w.end_object();
  return sse_event(w.str());
}

std::string format_response(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                            const Usage& usage) {
  JsonWriter w;
  w.begin_object();
  write_header(w, meta, meta.is_chat ? "chat.completion" : "text_completion");
  w.key("choices").begin_array();
  for (const ChoiceOutput& c : choices) write_full_choice(w, meta, c);
  w.end_array();
  w.key("usage");
  write_usage(w, usage);
  w.key("system_fingerprint").null();
  if (!meta.kv_transfer_params_json.empty()) {
    w.key("kv_transfer_params").raw(meta.kv_transfer_params_json);
  }
  if (meta.is_chat) {
    w.key("prompt_logprobs");
    if (choices.empty() || choices[0].prompt_logprobs_json.empty()) {
      w.null();
    } else {
      w.raw(choices[0].prompt_logprobs_json);
    }
  }
  w.end_object();
  return w.take();
}

}  // namespace strata::server
