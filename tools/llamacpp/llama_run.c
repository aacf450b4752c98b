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
//   llama_run quantize IN.gguf OUT.gguf FTYPE [THREADS]
//       llama_model_quantize() with llama-quantize's defaults (no imatrix, output tensor
//       quantized, per-tensor type mix chosen by llama.cpp). FTYPE is one of llama-quantize's
//       names: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S
//       Q5_K_M Q6_K IQ4_NL IQ4_XS (case-insensitive). THREADS 0 (default) = all cores.
//   llama_run dequant TYPE ROWS COLS SEED OUT.bin
//       Makes ROWS x COLS f32 test values (below), quantizes them with
//       ggml_quantize_chunk(TYPE, no imatrix), dequantizes with
//       ggml_get_type_traits(TYPE)->to_float and writes (little-endian, no padding):
//         char[4]  "SQDQ"
//         uint32   ggml_type (the enum value, e.g. 12 = q4_K)
//         uint64   rows
//         uint64   cols
//         uint64   nbytes   (= rows * ggml_row_size(TYPE, cols))
//         uint8    quantized bytes [nbytes]   (row-major, row r at r * nbytes / rows)
//         float32  dequantized values [rows * cols]   (llama.cpp's)
//       TYPE is a ggml type name (q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl
//       iq4_xs; case-insensitive); COLS must be a multiple of its block size.
//       Test values, from a splitmix64 stream seeded by SEED (same SEED -> same file):
//         row 0            all zero
//         row 1            tiny: gaussian * 1e-5 (block scales become f16 subnormals)
//         row 2            all positive: |gaussian| + 0.5 (exercises the min of *_1 / K types)
//         rows 3, 3+7, ... gaussian with ~1 % outliers (x40, random sign)
//         other rows       a mix of two gaussians: N(mu, s1) or N(0, s2) per value, with mu,
//                          s1, s2 drawn per row (s1 in [0.01, 1], s2 = 4 * s1)
//       (rows 0-2 exist only when ROWS > their index.)
//
// Backends are loaded from $LLAMA_BINS (the directory holding libggml-cpu-*.so).
#include <ctype.h>
#include <math.h>
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

static int equals_ignore_case(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b) {
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
  }
  return *a == *b;
}

// llama-quantize's ftype names (tools/quantize/quantize.cpp) for the types Strata loads.
static const struct {
  const char* name;
  enum llama_ftype ftype;
} kFtypes[] = {
    {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
    {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
    {"Q3_K_L", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S},
    {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
    {"IQ4_NL", LLAMA_FTYPE_MOSTLY_IQ4_NL}, {"IQ4_XS", LLAMA_FTYPE_MOSTLY_IQ4_XS},
};

static int run_quantize(const char* in_path, const char* out_path, const char* ftype_name,
                        int threads) {
  struct llama_model_quantize_params qp = llama_model_quantize_default_params();
  size_t n = sizeof(kFtypes) / sizeof(kFtypes[0]), i;
  for (i = 0; i < n && !equals_ignore_case(kFtypes[i].name, ftype_name); ++i) {
  }
  if (i == n) {
    fprintf(stderr, "unknown ftype %s; one of:", ftype_name);
    for (i = 0; i < n; ++i) fprintf(stderr, " %s", kFtypes[i].name);
    fputc('\n', stderr);
    return 2;
  }
  qp.ftype = kFtypes[i].ftype;
  qp.nthread = threads;
  if (llama_model_quantize(in_path, out_path, &qp) != 0) {
    fprintf(stderr, "llama_model_quantize %s -> %s (%s) failed\n", in_path, out_path,
            ftype_name);
    return 1;
  }
  return 0;
}

// splitmix64: a tiny, well-mixed, portable PRNG, so one SEED gives one file everywhere.
static uint64_t next_u64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t* state) {  // in (0, 1)
  return ((next_u64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double gaussian(uint64_t* state) {  // Box-Muller, one value per call
  double u1 = uniform01(state), u2 = uniform01(state);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void make_test_values(float* x, int64_t rows, int64_t cols, uint64_t seed) {
  uint64_t st = seed;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    double s1 = 0.01 * pow(100.0, uniform01(&st)), s2 = 4.0 * s1;
    double mu = s1 * (4.0 * uniform01(&st) - 2.0);
    for (int64_t c = 0; c < cols; ++c) {
      double g = gaussian(&st), v;
      if (r == 0) {
        v = 0.0;
      } else if (r == 1) {
        v = 1e-5 * g;
      } else if (r == 2) {
        v = fabs(g) + 0.5;
      } else if (r % 7 == 3) {
        v = g * s1 * (uniform01(&st) < 0.01 ? 40.0 : 1.0);
      } else {
        v = uniform01(&st) < 0.5 ? mu + s1 * g : s2 * g;
      }
      row[c] = (float)v;
    }
  }
}

static int run_dequant(const char* type_name, int64_t rows, int64_t cols, uint64_t seed,
                       const char* out_path) {
  int t;
  for (t = 0; t < GGML_TYPE_COUNT; ++t) {
    const struct ggml_type_traits* tr = ggml_get_type_traits((enum ggml_type)t);
    if (tr->type_name && tr->is_quantized && tr->to_float &&
        equals_ignore_case(tr->type_name, type_name)) {
      break;
    }
  }
  if (t == GGML_TYPE_COUNT) {
    fprintf(stderr, "unknown quantized ggml type %s (e.g. q4_0, q4_K, iq4_xs)\n", type_name);
    return 2;
  }
  enum ggml_type type = (enum ggml_type)t;
  int64_t block = ggml_blck_size(type);
  if (rows < 1 || cols < block || cols % block != 0) {
    fprintf(stderr, "%s needs COLS a positive multiple of %lld and ROWS >= 1 (got %lld x %lld)\n",
            ggml_type_name(type), (long long)block, (long long)rows, (long long)cols);
    return 2;
  }
  if (ggml_quantize_requires_imatrix(type)) {
    fprintf(stderr, "%s requires an importance matrix; not supported here\n",
            ggml_type_name(type));
    return 2;
  }
  uint64_t nbytes = (uint64_t)rows * ggml_row_size(type, cols);
  float* x = malloc(sizeof(float) * rows * cols);
  float* y = malloc(sizeof(float) * rows * cols);
  uint8_t* q = malloc(nbytes);
  make_test_values(x, rows, cols, seed);
  size_t written = ggml_quantize_chunk(type, x, q, 0, rows, cols, NULL);
  if (written != nbytes) {
    fprintf(stderr, "ggml_quantize_chunk wrote %zu bytes, expected %llu\n", written,
            (unsigned long long)nbytes);
    return 1;
  }
  const struct ggml_type_traits* tr = ggml_get_type_traits(type);
  for (int64_t r = 0; r < rows; ++r) {
    tr->to_float(q + r * ggml_row_size(type, cols), y + r * cols, cols);
  }
  FILE* f = fopen(out_path, "wb");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", out_path);
    return 1;
  }
  uint32_t type_u32 = (uint32_t)type;
  uint64_t r64 = (uint64_t)rows, c64 = (uint64_t)cols;
  // The host is little-endian (x86-64), so fields are written as they lie in memory.
  int ok = fwrite("SQDQ", 1, 4, f) == 4 && fwrite(&type_u32, 4, 1, f) == 1 &&
           fwrite(&r64, 8, 1, f) == 1 && fwrite(&c64, 8, 1, f) == 1 &&
           fwrite(&nbytes, 8, 1, f) == 1 && fwrite(q, 1, nbytes, f) == nbytes &&
           fwrite(y, sizeof(float), rows * cols, f) == (size_t)(rows * cols);
  ok &= fclose(f) == 0;
  free(x);
  free(y);
  free(q);
  if (!ok) {
    fprintf(stderr, "short write to %s\n", out_path);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s logits MODEL OUT.bin IDS [--f16-kv]\n"
            "       %s bench MODEL PP TG REPS THREADS\n"
            "       %s quantize IN.gguf OUT.gguf FTYPE [THREADS]\n"
            "       %s dequant TYPE ROWS COLS SEED OUT.bin\n",
            argv[0], argv[0], argv[0], argv[0]);
    return 2;
  }
  llama_log_set(quiet_log, NULL);
  if (strcmp(argv[1], "dequant") == 0) {  // ggml only: no backend, no model
    if (argc != 7) {
      fprintf(stderr, "usage: %s dequant TYPE ROWS COLS SEED OUT.bin\n", argv[0]);
      return 2;
    }
    return run_dequant(argv[2], atoll(argv[3]), atoll(argv[4]), strtoull(argv[5], NULL, 10),
                       argv[6]);
  }
  const char* bins = getenv("LLAMA_BINS");
  if (bins) ggml_backend_load_all_from_path(bins);
  else ggml_backend_load_all();
  llama_backend_init();
  if (strcmp(argv[1], "quantize") == 0) {
    if (argc != 5 && argc != 6) {
      fprintf(stderr, "usage: %s quantize IN.gguf OUT.gguf FTYPE [THREADS]\n", argv[0]);
      return 2;
    }
    int rc = run_quantize(argv[2], argv[3], argv[4], argc == 6 ? atoi(argv[5]) : 0);
    llama_backend_free();
    return rc;
  }
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
