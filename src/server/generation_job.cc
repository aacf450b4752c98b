#include "server/generation_job.h"

#include <algorithm>

#include "base/log.h"
#include "server/json_writer.h"

namespace strata::server {
namespace {

constexpr size_t kDetokenizerContextTokens = 6;

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string quoted_json(const std::string& s) {
  std::string out = "\"";
  append_json_escaped(s, &out);
  return out + "\"";
}

}  // namespace

GenerationJob::GenerationJob(ServerContext& ctx, JobOptions options, std::vector<JobPrompt> prompts,
                             std::shared_ptr<HttpResponder> responder)
    : ctx_(ctx),
      options_(std::move(options)),
      prompts_(std::move(prompts)),
      responder_(std::move(responder)),
      arrival_(std::chrono::steady_clock::now()) {}

std::optional<ApiError> GenerationJob::start() {
  const size_t n = static_cast<size_t>(options_.n);
  choices_.resize(prompts_.size() * n);
  std::vector<engine::EngineRequest> requests;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    const std::vector<int32_t>& ids = prompts_[p].token_ids;
    std::vector<int32_t> context(ids.end() - std::min(ids.size(), kDetokenizerContextTokens),
                                 ids.end());
    for (size_t i = 0; i < n; ++i) {
      size_t idx = p * n + i;
      Choice& c = choices_[idx];
      c.request_id = options_.meta.id + "-" + std::to_string(idx);
      c.prompt_idx = p;
      c.detokenizer.emplace(*ctx_.tokenizer, options_.detokenize, context);
      c.stop = StopMatcher(options_.stop, options_.include_stop_str);
      c.text_offset = options_.echo ? static_cast<int64_t>(prompts_[p].echo_text.size()) : 0;
      if (options_.chat_output.active()) {
        c.splitter = std::make_unique<ChatOutputSplitter>(options_.chat_output);
      }
      engine::EngineRequest r = options_.base;
      r.request_id = c.request_id;
      r.prompt_token_ids = ids;
      r.stop.max_tokens = options_.max_tokens[p];
      r.sampling.seed = options_.seed ? *options_.seed + i : ctx_.rng();
      requests.push_back(std::move(r));
    }
  }
  for (size_t idx = 0; idx < requests.size(); ++idx) {
    auto self = shared_from_this();
    HttpServer* http = ctx_.http;
    Status s = ctx_.engine->add_request(
        std::move(requests[idx]), [self, http, idx](const engine::RequestOutput& out) {
          http->post([self, idx, out] { self->on_output(idx, out); });
        });
    if (!s.ok()) {
      for (size_t j = 0; j < idx; ++j) ctx_.engine->abort(choices_[j].request_id);
      for (size_t j = 0; j < idx; ++j) choices_[j].finished = true;
      cancelled_ = true;
      return ApiError::from_status(s);
    }
    ++ctx_.num_in_flight;
  }
  std::weak_ptr<GenerationJob> weak = weak_from_this();
  responder_->on_disconnect([weak] {
    if (auto job = weak.lock()) job->cancel();
  });
  return std::nullopt;
}

void GenerationJob::on_output(size_t choice_idx, const engine::RequestOutput& out) {
  Choice& c = choices_[choice_idx];
  record_metrics(c, out);
  // A P/D prefill's final output says where a decoder loads its KV from.
  if (out.kv_transfer_params) {
    options_.meta.kv_transfer_params_json = format_kv_transfer_params(*out.kv_transfer_params);
  }
  if (c.finished) return;  // stopped by a stop string or cancelled
  c.num_cached_tokens = out.num_cached_tokens;
  ChoiceOutput delta;
  delta.index = static_cast<int>(choice_idx);
  delta.has_logprobs = options_.num_logprobs >= 0;
  delta.has_token_ids = options_.return_token_ids;
  if (!c.got_prompt_logprobs) take_prompt_logprobs(c, out, delta);
  consume_tokens(c, out, delta);
  if (!c.finished && out.finished) finish_choice(c, out, delta);
  emit(c, std::move(delta));
  if (c.finished && ++num_finished_ == choices_.size()) complete();
}

void GenerationJob::record_metrics(Choice& c, const engine::RequestOutput& out) {
  auto now = std::chrono::steady_clock::now();
  int64_t num_new = 0;
  for (const engine::SampledToken& t : out.new_tokens) num_new += t.token_id >= 0;
  ctx_.metrics->record_request_phases(out);
  if (num_new > 0) {
    if (c.last_token_time == std::chrono::steady_clock::time_point()) {
      ctx_.metrics->record_first_token(seconds_between(arrival_, now));
    } else {
      ctx_.metrics->record_inter_token(seconds_between(c.last_token_time, now));
    }
    c.last_token_time = now;
    ctx_.metrics->add_generation_tokens(num_new);
  }
  if (out.finished && !c.engine_done) {
    c.engine_done = true;
    --ctx_.num_in_flight;
    const std::string reason =
        c.finished ? c.finish_reason : openai_finish_reason(out.finish_reason);
    ctx_.metrics->add_prompt_tokens(out.num_prompt_tokens);
    ctx_.metrics->record_finished(reason.empty() ? "abort" : reason, out.num_prompt_tokens,
                                  out.num_output_tokens, seconds_between(arrival_, now));
  }
}

void GenerationJob::consume_tokens(Choice& c, const engine::RequestOutput& out,
                                   ChoiceOutput& delta) {
  for (const engine::SampledToken& tok : out.new_tokens) {
    if (tok.token_id < 0) continue;
    ++c.num_output_tokens;
    c.last_token = tok.token_id;
    if (options_.return_token_ids) delta.token_ids.push_back(tok.token_id);
    if (options_.num_logprobs >= 0) add_logprob(c, tok, delta);
    StopMatcher::Result r = c.stop.push(c.detokenizer->add(tok.token_id));
    delta.text += r.text;
    c.text_offset += static_cast<int64_t>(r.text.size());
    if (r.stopped) {
      c.finished = true;
      c.finish_reason = "stop";
      c.stop_reason_json = quoted_json(r.stop_str);
      delta.finish_reason = c.finish_reason;
      delta.stop_reason_json = c.stop_reason_json;
      if (!out.finished) ctx_.engine->finish_stopped(c.request_id);
      return;
    }
  }
}

void GenerationJob::finish_choice(Choice& c, const engine::RequestOutput& out,
                                  ChoiceOutput& delta) {
  StopMatcher::Result r = c.stop.push(c.detokenizer->finish());
  std::string tail = r.text + (r.stopped ? "" : c.stop.flush());
  delta.text += tail;
  c.text_offset += static_cast<int64_t>(tail.size());
  c.finished = true;
  c.finish_reason = r.stopped ? "stop" : openai_finish_reason(out.finish_reason);
  if (r.stopped) {
    c.stop_reason_json = quoted_json(r.stop_str);
  } else if (c.finish_reason == "stop") {
    const auto& ids = options_.base.stop.stop_token_ids;
    if (std::find(ids.begin(), ids.end(), c.last_token) != ids.end()) {
      c.stop_reason_json = std::to_string(c.last_token);
    }
  }
  delta.finish_reason = c.finish_reason;
  delta.stop_reason_json = c.stop_reason_json;
}

std::string GenerationJob::token_text(int32_t id) const {
  return ctx_.tokenizer->decode({id}, /*skip_special_tokens=*/false);
}

void GenerationJob::add_logprob(Choice& c, const engine::SampledToken& tok, ChoiceOutput& delta) {
  TokenLogprob lp;
  lp.token = token_text(tok.token_id);
  lp.logprob = tok.logprob;
  lp.text_offset = c.text_offset;
  size_t k = std::min<size_t>(tok.top_logprobs.size(), static_cast<size_t>(options_.num_logprobs));
  for (size_t i = 0; i < k; ++i) {
    lp.top.emplace_back(token_text(tok.top_logprobs[i].first), tok.top_logprobs[i].second);
  }
  delta.logprobs.push_back(std::move(lp));
}

// The engine delivers prompt logprobs with the first generated token.
void GenerationJob::take_prompt_logprobs(Choice& c, const engine::RequestOutput& out,
                                         ChoiceOutput& delta) {
  const bool echo_logprobs = options_.echo && !options_.meta.is_chat && options_.num_logprobs >= 0;
  if (options_.num_prompt_logprobs < 0 && !echo_logprobs) return;
  if (out.prompt_logprobs.empty() && out.new_tokens.empty() && !out.finished) return;
  c.got_prompt_logprobs = true;
  if (options_.num_prompt_logprobs >= 0) {
    std::vector<PromptTokenLogprobs> positions;
    for (const engine::PromptLogprob& p : out.prompt_logprobs) {
      positions.push_back(prompt_position(p));
    }
    c.prompt_logprobs_json = format_prompt_logprobs(positions);
  }
  if (echo_logprobs) add_echo_logprobs(c, out, delta);
}

// Echoed prompt tokens lead a completion's logprobs; the first has none.
void GenerationJob::add_echo_logprobs(const Choice& c, const engine::RequestOutput& out,
                                      ChoiceOutput& delta) {
  const std::vector<int32_t>& prompt = prompts_[c.prompt_idx].token_ids;
  TokenLogprob first;
  first.token = token_text(prompt[0]);
  first.is_null = true;
  int64_t offset = static_cast<int64_t>(first.token.size());
  delta.logprobs.push_back(std::move(first));
  for (const engine::PromptLogprob& p : out.prompt_logprobs) {
    TokenLogprob lp;
    lp.token = token_text(p.token_id);
    lp.logprob = p.logprob;
    lp.text_offset = offset;
    offset += static_cast<int64_t>(lp.token.size());
    size_t k = std::min(p.top_logprobs.size(), static_cast<size_t>(options_.num_logprobs));
    for (size_t i = 0; i < k; ++i) {
      lp.top.emplace_back(token_text(p.top_logprobs[i].first), p.top_logprobs[i].second);
    }
    delta.logprobs.push_back(std::move(lp));
  }
}

// The prompt token, then the top alternatives. The prompt token's rank is
// exact when it is among them, else a lower bound (alternatives + 1).
PromptTokenLogprobs GenerationJob::prompt_position(const engine::PromptLogprob& p) const {
  PromptTokenLogprobs pos;
  const size_t k =
      std::min(p.top_logprobs.size(), static_cast<size_t>(options_.num_prompt_logprobs));
  int64_t rank = static_cast<int64_t>(k) + 1;
  for (size_t i = 0; i < k; ++i) {
    if (p.top_logprobs[i].first == p.token_id) rank = static_cast<int64_t>(i) + 1;
  }
  pos.entries.push_back({p.token_id, token_text(p.token_id), p.logprob, rank});
  for (size_t i = 0; i < k; ++i) {
    const auto& [id, lp] = p.top_logprobs[i];
    if (id != p.token_id)
      pos.entries.push_back({id, token_text(id), lp, static_cast<int64_t>(i) + 1});
  }
  return pos;
}

void GenerationJob::split_delta(Choice& c, ChoiceOutput& delta) {
  std::string text = std::move(delta.text);
  delta.text.clear();
  c.splitter->add(text, delta);
  if (delta.finish_reason.empty()) return;
  c.splitter->finish(delta);
  delta.finish_reason = c.splitter->finish_reason(delta.finish_reason);
  c.finish_reason = delta.finish_reason;
}

void GenerationJob::split_whole(Choice& c, ChoiceOutput& out) {
  const size_t echo = options_.echo ? prompts_[c.prompt_idx].echo_text.size() : 0;
  const std::string prefix = out.text.substr(0, echo);
  c.splitter->split_whole(std::string_view(out.text).substr(echo), out);
  out.text = prefix + out.text;
  if (!prefix.empty()) out.content_null = false;
  out.finish_reason = c.splitter->finish_reason(out.finish_reason);
}

void GenerationJob::emit(Choice& c, ChoiceOutput delta) {
  if (cancelled_) return;
  if (c.splitter != nullptr && options_.stream) split_delta(c, delta);
  const bool first = !c.sent_first;
  if (first && options_.echo) delta.text = prompts_[c.prompt_idx].echo_text + delta.text;
  if (!options_.stream) {
    c.text += delta.text;
    for (TokenLogprob& lp : delta.logprobs) c.logprobs.push_back(std::move(lp));
    c.token_ids.insert(c.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
    c.sent_first = true;
    return;
  }
  if (first && delta.has_token_ids) delta.prompt_token_ids = &prompts_[c.prompt_idx].token_ids;
  if (first) {
    c.sent_first = true;
    responder_->begin_stream("text/event-stream");
    if (options_.meta.is_chat) {
      ChoiceOutput role;
      role.index = delta.index;
      role.with_role = true;
      responder_->write(format_stream_chunk(options_.meta, role, nullptr));
    }
  }
  if (delta.text.empty() && delta.logprobs.empty() && delta.token_ids.empty() &&
      delta.finish_reason.empty() && delta.reasoning.empty() && delta.tool_calls.empty()) {
    return;
  }
  Usage u;
  if (options_.continuous_usage) u = usage();
  responder_->write(
      format_stream_chunk(options_.meta, delta, options_.continuous_usage ? &u : nullptr));
}

Usage GenerationJob::usage() const {
  Usage u;
  for (const JobPrompt& p : prompts_) u.prompt_tokens += static_cast<int64_t>(p.token_ids.size());
  for (size_t i = 0; i < choices_.size(); ++i) {
    u.completion_tokens += choices_[i].num_output_tokens;
    if (i % static_cast<size_t>(options_.n) == 0) u.cached_tokens += choices_[i].num_cached_tokens;
  }
  return u;
}

void GenerationJob::complete() {
  if (completed_ || cancelled_) return;
  completed_ = true;
  if (options_.stream) {
    responder_->begin_stream("text/event-stream");  // no-op unless nothing was sent
    if (options_.include_usage) responder_->write(format_usage_chunk(options_.meta, usage()));
    responder_->write(sse_done());
    responder_->end_stream();
    return;
  }
  std::vector<ChoiceOutput> out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    ChoiceOutput co;
    co.index = static_cast<int>(i);
    co.text = std::move(c.text);
    co.has_logprobs = options_.num_logprobs >= 0;
    co.logprobs = std::move(c.logprobs);
    co.has_token_ids = options_.return_token_ids;
    co.token_ids = std::move(c.token_ids);
    co.prompt_token_ids = &prompts_[c.prompt_idx].token_ids;
    co.finish_reason = c.finish_reason;
    co.stop_reason_json = c.stop_reason_json;
    co.prompt_logprobs_json = std::move(c.prompt_logprobs_json);
    if (c.splitter != nullptr) split_whole(c, co);
    out.push_back(std::move(co));
  }
  responder_->reply(200, "application/json", format_response(options_.meta, out, usage()));
}

void GenerationJob::cancel() {
  if (completed_ || cancelled_) return;
  cancelled_ = true;
  for (Choice& c : choices_) {
    if (!c.engine_done) ctx_.engine->abort(c.request_id);
    c.finished = true;
  }
  STRATA_LOG(kInfo) << "client disconnected; aborted " << options_.meta.id;
}

}  // namespace strata::server
