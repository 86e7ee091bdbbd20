// How far llama.cpp is from itself on a model: the logits of every position
// of a token list computed in one batch (as lltop scores a prompt) and one
// token at a time (as llgen generates), compared. Prints
//   self TOP1 KL
// the share of positions whose top-1 token is the same both ways and the
// mean KL divergence (batch || one token at a time) over the whole
// vocabulary. make_references.sh builds it against the llama.cpp peer's
// libraries, as ../shared/peers/llamacpp/build.sh builds lltop.
// usage: llself MODEL THREADS ID,ID,...
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

// All n positions' logits (n x vocab floats), `step` tokens per decode call.
static float *logits_of(struct llama_model *model, const llama_token *tokens, int n, int step, int threads,
                        int vocab) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n + 8;
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = step;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    float *all = malloc(sizeof(float) * (size_t)n * vocab);
    if (!ctx || !all)
        exit(3);
    for (int first = 0; first < n; first += step) {
        const int count = n - first < step ? n - first : step;
        struct llama_batch batch = llama_batch_init(count, 0, 1);
        for (int i = 0; i < count; ++i) {
            batch.token[i] = tokens[first + i];
            batch.pos[i] = first + i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        batch.n_tokens = count;
        if (llama_decode(ctx, batch))
            exit(4);
        for (int i = 0; i < count; ++i)
            memcpy(all + (size_t)(first + i) * vocab, llama_get_logits_ith(ctx, i), sizeof(float) * vocab);
        llama_batch_free(batch);
    }
    llama_free(ctx);
    return all;
}

static int argmax(const float *row, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (row[i] > row[best])
            best = i;
    return best;
}

enum { kTopK = 4 };

static double log_sum_exp(const float *row, int n) {
    const double max = row[argmax(row, n)];
    double sum = 0;
    for (int i = 0; i < n; ++i)
        sum += exp(row[i] - max);
    return max + log(sum);
}

// KL(a || b) over a's top kTopK tokens and the rest as one outcome.
static double coarse_kl(const float *a, const float *b, int n) {
    const double la = log_sum_exp(a, n), lb = log_sum_exp(b, n);
    int top[kTopK];
    for (int k = 0; k < kTopK; ++k) {
        top[k] = -1;
        for (int i = 0; i < n; ++i) {
            int taken = 0;
            for (int j = 0; j < k; ++j)
                taken |= top[j] == i;
            if (!taken && (top[k] < 0 || a[i] > a[top[k]]))
                top[k] = i;
        }
    }
    double kl = 0, p_top = 0, q_top = 0;
    for (int k = 0; k < kTopK; ++k) {
        const double log_p = a[top[k]] - la, log_q = b[top[k]] - lb;
        kl += exp(log_p) * (log_p - log_q);
        p_top += exp(log_p);
        q_top += exp(log_q);
    }
    const double p_rest = fmax(1.0 - p_top, 1e-12), q_rest = fmax(1.0 - q_top, 1e-12);
    return kl + p_rest * log(p_rest / q_rest);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL THREADS ID,ID,...\n", argv[0]);
        return 1;
    }
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(getenv("LLAMA_LIBDIR"));
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model)
        return 2;
    const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model)), threads = atoi(argv[2]);
    int n = 0, capacity = 1024;
    llama_token *tokens = malloc(sizeof(llama_token) * capacity);
    if (!tokens)
        return 3;
    for (char *t = strtok(argv[3], ","); t; t = strtok(NULL, ",")) {
        if (n == capacity)
            tokens = realloc(tokens, sizeof(llama_token) * (capacity *= 2));
        tokens[n++] = atoi(t);
    }
    float *batch = logits_of(model, tokens, n, n, threads, vocab);
    float *single = logits_of(model, tokens, n, 1, threads, vocab);
    int same = 0;
    double kl = 0;
    for (int p = 0; p < n; ++p) {
        const float *a = batch + (size_t)p * vocab, *b = single + (size_t)p * vocab;
        same += argmax(a, vocab) == argmax(b, vocab);
        kl += coarse_kl(a, b, vocab);
    }
    printf("self %.6f %.3e\n", (double)same / n, kl / n);
    return 0;
}
