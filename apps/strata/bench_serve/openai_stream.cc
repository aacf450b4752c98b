#include "bench_serve/openai_stream.h"

#include <nlohmann/json.hpp>

namespace strata::bench {
namespace {

using nlohmann::json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t int_or(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

void append_string(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) out->append(it->get_ref<const std::string&>());
}

// Keeps the text and streamed token ids of a token chunk's first choice.
void append_choice(const json& choice, bool is_chat, RequestRecord* out) {
  if (!choice.is_object()) return;
  if (is_chat) {
    if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
      append_string(*delta, "content", &out->generated_text);
    }
  } else {
    append_string(choice, "text", &out->generated_text);
  }
  if (auto ids = choice.find("token_ids"); ids != choice.end() && ids->is_array()) {
    for (const json& id : *ids) {
      if (id.is_number_integer()) out->output_token_ids.push_back(id.get<int32_t>());
    }
  }
}

}  // namespace

void StreamAccumulator::on_bytes(std::string_view bytes, Clock::time_point when) {
  if (raw_prefix_.size() < 2000) raw_prefix_.append(bytes.substr(0, 2000 - raw_prefix_.size()));
  std::vector<std::string> events;
  reader_.feed(bytes, &events);
  for (const std::string& e : events) on_event(e, when);
}

void StreamAccumulator::on_token_chunk(Clock::time_point when) {
  if (!got_token_) {
    got_token_ = true;
    first_token_ = when;
  } else {
    partial_.itl_s.push_back(seconds(when - last_token_));
  }
  last_token_ = when;
  ++partial_.num_chunks;
}

void StreamAccumulator::on_event(const std::string& data, Clock::time_point when) {
  if (data == "[DONE]" || !error_.empty()) return;
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error_ = "unparseable SSE event: " + data.substr(0, 200);
    return;
  }
  if (auto err = j.find("error"); err != j.end() && !err->is_null()) {
    error_ = "server error in stream: " + err->dump().substr(0, 500);
    return;
  }
  if (auto choices = j.find("choices");
      choices != j.end() && choices->is_array() && !choices->empty()) {
    on_token_chunk(when);
    append_choice((*choices)[0], is_chat_, &partial_);
  }
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
    usage_prompt_tokens_ = int_or(*usage, "prompt_tokens", usage_prompt_tokens_);
    usage_completion_tokens_ = int_or(*usage, "completion_tokens", usage_completion_tokens_);
    if (auto d = usage->find("prompt_tokens_details"); d != usage->end() && d->is_object()) {
      partial_.cached_tokens = int_or(*d, "cached_tokens", partial_.cached_tokens);
    }
  }
}

void StreamAccumulator::finish(int http_status, const std::string& transport_error,
                               RequestRecord* record) {
  if (auto last = reader_.finish()) on_event(*last, last_token_);
  record->itl_s = std::move(partial_.itl_s);
  record->num_chunks = partial_.num_chunks;
  record->generated_text = std::move(partial_.generated_text);
  record->output_token_ids = std::move(partial_.output_token_ids);
  record->cached_tokens = partial_.cached_tokens;
  if (usage_prompt_tokens_ >= 0) record->prompt_len = usage_prompt_tokens_;
  record->success = false;
  if (http_status == 0) {
    record->error = transport_error;
  } else if (http_status != 200) {
    record->error = "HTTP " + std::to_string(http_status) + ": " + raw_prefix_.substr(0, 500);
  } else if (!error_.empty()) {
    record->error = error_;
  } else if (!got_token_) {
    record->error = "never received a chunk with choices to measure TTFT";
  } else {
    record->success = true;
    record->ttft_s = seconds(first_token_ - start_);
    record->latency_s = seconds(last_token_ - start_);
    record->output_tokens =
        usage_completion_tokens_ >= 0 ? usage_completion_tokens_ : record->num_chunks;
  }
}

}  // namespace strata::bench
