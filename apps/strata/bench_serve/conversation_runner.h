// Drives multi-turn conversations: every turn's prompt is the whole
// conversation so far (all earlier user turns and the model's answers) plus
// the next user turn, so each turn's prompt extends the previous one and a
// prefix cache can serve everything but the new tokens.
//
// Scheduling: `max_active_conversations` conversations are open at once (0 =
// all of them); their next turns wait in one FIFO queue, and
// `max_concurrency` workers (0 = one per open conversation) each take the
// conversation at the head, send its next turn and, when the answer is back,
// requeue it at the tail. A conversation's turns are therefore sequential,
// different conversations interleave round-robin, and the distance between
// two turns of one conversation grows with the number of open
// conversations: the reuse-after-eviction pattern tiered KV caches are for.
// A finished (or failed, or too long) conversation makes room for the next.
// With a finite --request-rate, turns leave no earlier than the arrival
// schedule (arrival.h) over all turns.
//
// Answers join the history as follows. Chat: an assistant message with the
// generated text. Completions (token-id prompts): the answer's token ids,
// taken from, in order of preference, the ids the server streamed
// (`return_token_ids`, vLLM), the server's POST /tokenize of the generated
// text (vLLM, Strata, llama.cpp; re-encoding may differ from the sampled ids
// in a few tokens), or filler ids of the reported length when neither works.
//
// A turn that would not fit (prompt + max_tokens > max_model_len) ends its
// conversation instead; such conversations are counted as truncated.
//
// Thread-safety: call from one thread; it starts and joins its workers.
#pragma once

#include <cstdint>
#include <vector>

#include "bench_serve/datasets.h"
#include "bench_serve/runner.h"

namespace strata::bench {

struct ConversationOptions {
  int64_t max_model_len = 0;             // 0 = unknown: never truncate
  int64_t max_active_conversations = 0;  // 0 = all
  TokenRange filler_range;               // ids for answers when nothing else works
};

struct ConversationRunResult {
  RunResult run;  // records carry conversation_idx and turn_idx
  int64_t num_truncated_conversations = 0;
  int64_t num_answers_streamed_ids = 0;  // answer ids as streamed by the server
  int64_t num_answers_tokenized = 0;     // answer ids from POST /tokenize
  int64_t num_answers_filler = 0;        // filler ids (neither available)
};

ConversationRunResult run_conversations(const RunOptions& o, const ConversationOptions& c,
                                        const std::vector<Conversation>& conversations);

}  // namespace strata::bench
