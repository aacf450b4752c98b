// Small driver over llama.cpp's C API (prebuilt libllama from @node-llama-cpp/linux-x64),
// used as an independent oracle and benchmark baseline for Strata.
//
//   llama_run logits MODEL.gguf OUT.bin IDS [--f16-kv]
//       Decodes IDS (comma separated) in one batch and writes the logits of positions
//       0..n-2 (row i predicts token i+1) as: int64 rows, int64 vocab, rows*vocab f32.
//       KV cache is F32 unless --f16-kv, flash attention off, 1 thread.
//   llama_run bench MODEL.gguf PP TG REPS THREADS
//       Per rep: prompt processing of PP tokens in one batch, then TG single-token
//       decode steps (fixed token ids, no sampling, like llama-bench). Prints one
//       line per rep: "pp<PP> <tok/s> tg<TG> <tok/s>".
//
// Backends are loaded from $LLAMA_BINS (the directory holding libggml-cpu-*.so).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char* text, void* user_data) {
  (void)user_data;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int parse_ids(const char* s, llama_token** out) {
  int cap = 16, n = 0;
  llama_token* ids = malloc(sizeof(llama_token) * cap);
  while (*s) {
    char* end;
    long v = strtol(s, &end, 10);
    if (end == s) break;
    if (n == cap) ids = realloc(ids, sizeof(llama_token) * (cap *= 2));
    ids[n++] = (llama_token)v;
    s = *end == ',' ? end + 1 : end;
  }
  *out = ids;
  return n;
}

static struct llama_context* make_context(struct llama_model* model, int n_ctx, int n_batch,
                                          int threads, int f16_kv) {
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_ubatch = n_batch < 512 ? n_batch : 512;
  cp.n_seq_max = 1;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.type_k = f16_kv ? GGML_TYPE_F16 : GGML_TYPE_F32;
  cp.type_v = f16_kv ? GGML_TYPE_F16 : GGML_TYPE_F32;
  cp.no_perf = 1;
  return llama_init_from_model(model, cp);
}

static void fill_batch(struct llama_batch* b, const llama_token* ids, int n, int pos0,
                       int all_logits) {
  b->n_tokens = n;
  for (int i = 0; i < n; ++i) {
    b->token[i] = ids[i];
    b->pos[i] = pos0 + i;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = 0;
    b->logits[i] = all_logits || i == n - 1;
  }
}

static int run_logits(struct llama_model* model, const char* out_path, const char* ids_arg,
                      int f16_kv) {
  llama_token* ids;
  int n = parse_ids(ids_arg, &ids);
  if (n < 2) {
    fprintf(stderr, "need at least 2 ids\n");
    return 1;
  }
  int rows = n - 1;
  struct llama_context* ctx = make_context(model, rows < 256 ? 256 : rows, rows, 1, f16_kv);
  struct llama_batch b = llama_batch_init(rows, 0, 1);
  fill_batch(&b, ids, rows, 0, 1);
  if (llama_decode(ctx, b) != 0) {
    fprintf(stderr, "llama_decode failed\n");
    return 1;
  }
  int64_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  int64_t r64 = rows;
  FILE* f = fopen(out_path, "wb");
  fwrite(&r64, 8, 1, f);
  fwrite(&vocab, 8, 1, f);
  for (int i = 0; i < rows; ++i) fwrite(llama_get_logits_ith(ctx, i), 4, vocab, f);
  fclose(f);
  llama_batch_free(b);
  llama_free(ctx);
  free(ids);
  return 0;
}

static int run_bench(struct llama_model* model, int pp, int tg, int reps, int threads) {
  int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_token* ids = malloc(sizeof(llama_token) * (pp + tg));
  for (int i = 0; i < pp + tg; ++i) ids[i] = (llama_token)((i * 7919 + 13) % n_vocab);
  struct llama_context* ctx = make_context(model, pp + tg, pp, threads, 1);
  struct llama_batch b = llama_batch_init(pp, 0, 1);
  for (int r = 0; r < reps; ++r) {
    llama_memory_clear(llama_get_memory(ctx), 1);
    fill_batch(&b, ids, pp, 0, 0);
    int64_t t0 = llama_time_us();
    if (llama_decode(ctx, b) != 0) return 1;
    int64_t t1 = llama_time_us();
    for (int i = 0; i < tg; ++i) {
      fill_batch(&b, ids + pp + i, 1, pp + i, 1);
      if (llama_decode(ctx, b) != 0) return 1;
      (void)llama_get_logits_ith(ctx, -1);
    }
    int64_t t2 = llama_time_us();
    printf("pp%d %.2f tg%d %.2f\n", pp, pp * 1e6 / (double)(t1 - t0), tg,
           tg * 1e6 / (double)(t2 - t1));
    fflush(stdout);
  }
  llama_batch_free(b);
  llama_free(ctx);
  free(ids);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s logits MODEL OUT.bin IDS [--f16-kv]\n"
            "       %s bench MODEL PP TG REPS THREADS\n",
            argv[0], argv[0]);
    return 2;
  }
  llama_log_set(quiet_log, NULL);
  const char* bins = getenv("LLAMA_BINS");
  if (bins) ggml_backend_load_all_from_path(bins);
  else ggml_backend_load_all();
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) {
    fprintf(stderr, "failed to load %s\n", argv[2]);
    return 1;
  }
  int rc;
  if (strcmp(argv[1], "logits") == 0 && argc >= 5) {
    rc = run_logits(model, argv[3], argv[4], argc > 5 && strcmp(argv[5], "--f16-kv") == 0);
  } else if (strcmp(argv[1], "bench") == 0 && argc >= 7) {
    rc = run_bench(model, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
  } else {
    fprintf(stderr, "bad arguments\n");
    rc = 2;
  }
  llama_model_free(model);
  llama_backend_free();
  return rc;
}
