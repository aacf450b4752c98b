#include "bench_serve/conversation_runner.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "bench_serve/arrival.h"
#include "bench_serve/progress_bar.h"
#include "bench_serve/server_probe.h"

namespace strata::bench {
namespace {

struct ConversationState {
  std::vector<int32_t> history_ids;   // completions
  std::vector<ChatMessage> messages;  // chat
  int64_t num_tokens = 0;             // conversation length so far (server's count when known)
  size_t next_turn = 0;
};

// The shared state of one run: the queue of conversations whose next turn is
// ready, and the bookkeeping of which are open.
class TurnQueue {
 public:
  TurnQueue(int64_t num_conversations, int64_t max_active) : num_(num_conversations) {
    const int64_t open = max_active > 0 ? std::min(max_active, num_) : num_;
    for (next_unopened_ = 0; next_unopened_ < open; ++next_unopened_)
      ready_.push_back(next_unopened_);
  }
  // The next conversation to advance, or -1 when every conversation is done.
  int64_t take() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty() || num_done_ == num_; });
    if (ready_.empty()) return -1;
    int64_t c = ready_.front();
    ready_.pop_front();
    return c;
  }
  void requeue(int64_t c) {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(c);
    cv_.notify_one();
  }
  void close(int64_t) {
    std::lock_guard<std::mutex> lock(mu_);
    ++num_done_;
    if (next_unopened_ < num_) ready_.push_back(next_unopened_++);
    cv_.notify_all();
  }

 private:
  const int64_t num_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> ready_;
  int64_t next_unopened_ = 0;
  int64_t num_done_ = 0;
};

class ConversationDriver {
 public:
  ConversationDriver(const RunOptions& o, const ConversationOptions& c,
                     const std::vector<Conversation>& conversations)
      : o_(o), c_(c), conversations_(conversations), states_(conversations.size()) {
    for (const Conversation& conv : conversations)
      total_turns_ += static_cast<int64_t>(conv.user_turns.size());
    due_ = make_arrival_times(total_turns_, o.request_rate, o.burstiness, o.seed);
  }

  ConversationRunResult run() {
    const int64_t n = static_cast<int64_t>(conversations_.size());
    TurnQueue queue(n, c_.max_active_conversations);
    const int64_t open =
        c_.max_active_conversations > 0 ? std::min(c_.max_active_conversations, n) : n;
    const int64_t workers = o_.max_concurrency > 0 ? std::min(o_.max_concurrency, open) : open;
    ProgressBar bar("benchmark", total_turns_, o_.show_progress);
    epoch_ = Clock::now();
    run_workers(workers, [&](int64_t) {
      for (int64_t conv = queue.take(); conv >= 0; conv = queue.take()) {
        const Step step = advance(conv);
        bar.advance(step.turns_counted);
        if (step.is_over) {
          queue.close(conv);
        } else {
          queue.requeue(conv);
        }
      }
    });
    result_.run.duration_s = std::chrono::duration<double>(Clock::now() - epoch_).count();
    bar.finish();
    result_.num_answers_streamed_ids = streamed_ids_;
    result_.num_answers_tokenized = tokenized_;
    result_.num_answers_filler = filler_;
    return std::move(result_);
  }

 private:
  struct Step {
    int64_t turns_counted;  // turns sent or given up on (for the progress bar)
    bool is_over;           // the conversation has ended
  };

  // Sends the next turn of `conv`, unless it would not fit the context.
  Step advance(int64_t conv) {
    const Conversation& spec = conversations_[static_cast<size_t>(conv)];
    ConversationState& s = states_[static_cast<size_t>(conv)];
    const size_t turn = s.next_turn;
    const PromptText& user = spec.user_turns[turn];
    const int64_t max_tokens = spec.output_lens[turn];
    const int64_t remaining = static_cast<int64_t>(spec.user_turns.size() - turn);
    if (c_.max_model_len > 0 && s.num_tokens + user.num_tokens + max_tokens > c_.max_model_len) {
      std::lock_guard<std::mutex> lock(mu_);
      ++result_.num_truncated_conversations;
      return {remaining, true};
    }
    std::string body;
    if (o_.client.is_chat) {
      s.messages.push_back({"user", user.text});
      body = make_chat_body(o_.client, s.messages, max_tokens);
    } else {
      s.history_ids.insert(s.history_ids.end(), user.token_ids.begin(), user.token_ids.end());
      PromptText prompt;
      prompt.token_ids = s.history_ids;
      body = make_completion_body(o_.client, prompt, max_tokens);
    }
    wait_for_schedule();
    RequestRecord r = send_streamed(
        o_.client, body, s.num_tokens + user.num_tokens, epoch_,
        o_.request_id_prefix + "c" + std::to_string(conv) + "-t" + std::to_string(turn));
    r.conversation_idx = conv;
    r.turn_idx = static_cast<int64_t>(turn);
    ++s.next_turn;
    const bool ok = r.success;
    if (ok) append_answer(conv, r, &s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      result_.run.records.push_back(std::move(r));
    }
    if (!ok) return {remaining, true};
    return {1, s.next_turn == spec.user_turns.size()};
  }

  void wait_for_schedule() {
    const size_t k = static_cast<size_t>(next_dispatch_++);
    if (k >= due_.size() || due_[k] <= 0) return;
    std::this_thread::sleep_until(epoch_ + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(due_[k])));
  }

  void append_answer(int64_t conv, const RequestRecord& r, ConversationState* s) {
    s->num_tokens = r.prompt_len + r.output_tokens;
    if (o_.client.is_chat) {
      s->messages.push_back({"assistant", r.generated_text});
      return;
    }
    std::vector<int32_t> ids = answer_ids(conv, r);
    s->history_ids.insert(s->history_ids.end(), ids.begin(), ids.end());
    s->num_tokens = static_cast<int64_t>(s->history_ids.size());
  }

  std::vector<int32_t> answer_ids(int64_t conv, const RequestRecord& r) {
    if (!r.output_token_ids.empty()) {
      ++streamed_ids_;
      return r.output_token_ids;
    }
    if (tokenize_works_.load()) {
      StatusOr<std::vector<int32_t>> ids = tokenize_text(o_.client, r.generated_text);
      if (ids.ok()) {
        ++tokenized_;
        return *ids;
      }
      tokenize_works_ = false;
    }
    ++filler_;
    std::mt19937_64 rng(o_.seed * 1000003u + static_cast<uint64_t>(conv) * 131u + r.turn_idx);
    PromptSource source(false, c_.filler_range, 1.0);
    return source.make(r.output_tokens, rng).token_ids;
  }

  const RunOptions& o_;
  const ConversationOptions& c_;
  const std::vector<Conversation>& conversations_;
  std::vector<ConversationState> states_;  // each touched by one worker at a time
  int64_t total_turns_ = 0;
  std::vector<double> due_;
  std::atomic<int64_t> next_dispatch_{0};
  Clock::time_point epoch_;
  std::atomic<bool> tokenize_works_{true};
  std::atomic<int64_t> streamed_ids_{0}, tokenized_{0}, filler_{0};
  std::mutex mu_;  // guards result_
  ConversationRunResult result_;
};

}  // namespace

ConversationRunResult run_conversations(const RunOptions& o, const ConversationOptions& c,
                                        const std::vector<Conversation>& conversations) {
  ConversationDriver driver(o, c, conversations);
  return driver.run();
}

}  // namespace strata::bench
