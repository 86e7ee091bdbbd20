// kvscope-cli: the engine from the command line. See docs/command-line.md.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/core/error.h"
#include "engine/core/log.h"

namespace {

constexpr const char* kUsage = R"(usage: kvscope-cli [--log-level LEVEL] COMMAND [OPTIONS]

commands:
  calc         KV cache memory calculator: bytes per token, per sequence, total,
               and how many sequences fit on a GPU, for every KV dtype; window layers
               hold W - 1 + a chunk of tokens (vLLM's cap), per kind of layer
               --preset NAME | --model FILE | --layers L --kv-heads H --head-dim D
               [--tokens N] [--seqs N] [--kv-dtype D] [--block-size B] [--chunk N]
               [--swa-full] [--gpu NAME | --gpu-mem-gib G] [--weights TYPE] [--gpu-util F] [--json]
               calc --list  shows the model and GPU presets (and calculator-only models:
               gpt-oss-120b, DeepSeek-V3, Kimi-K2, ...) and their KV at 32k tokens
  chat         a terminal chat through the model's chat template (Llama 2/3, ChatML,
               Mistral, Zephyr, Gemma); each line on stdin is a user message, the
               reply streams out; without a known template: plain completion
               --model FILE [--system TEXT] [-n N] [--temp T] [--top-k K] [--top-p P]
               [--min-p P] [--repeat-penalty R] [--seed S] [--kv-dtype D]
               [--block-size B] [--swa-full] [--threads N] [--backend B]
  generate     stream a completion of a prompt, through the paged KV cache
               --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [-n N] [--temp T]
               [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S]
               [--kv-dtype D] [--block-size B] [--swa-full] [--threads N] [--backend B]
               [--ignore-eos] [--json]
  info         a GGUF model's architecture, shape, tensor types and KV bytes
               FILE.gguf [--json]
  models       the GGUFs downloaded into the Hugging Face cache (pull's, llama.cpp -hf's),
               with size, quant, architecture and whether kvscope runs each  [--json]
  make-model   a GGUF with random weights of a real model's shape (meaningless text)
               --preset NAME [--type T] [--seed S] [--chat-template FILE] -o FILE
               (T: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, iq4_xs;
               mxfp4 for gpt-oss-20b/qwen3-30b-a3b: experts in MXFP4, every other matrix Q8_0,
               as gpt-oss's own files)
               [--layers N] [--vocab N] [--window N] [--ffn N] [--context N] [--experts N]: a model
               of a NON-REAL shape for fast tests: the first N layers (kinds kept), N tokens, an
               N-token window, N-wide FFN (experts' for MoE), an N-token context, N experts (each
               token still routed to as many as the preset's)
  perplexity   what each KV dtype costs in accuracy on a text: perplexity, KL divergence
               and top-1 agreement against f32 KV, with bytes per token and saving vs f16
               --model FILE --text-file F [--kv-dtype D[,D...]] [--ctx N] [--block-size B]
               [--threads N] [--backend B] [--json]   (default: every KV dtype this build and
               backend can run; the backend each ran on is listed)
  pull         a model from the Hugging Face Hub into the cache llama.cpp's -hf uses
               (docs/command-line.md#pull): ORG/NAME[:QUANT] [--json] (default quant Q4_K_M,
               else the closest); resumed when interrupted, its SHA-256 checked
  serve        an OpenAI-compatible HTTP server over the paged engine (docs/serving.md):
               /v1/completions, /v1/chat/completions, /v1/models, /tokenize, /detokenize,
               /health, /metrics (Prometheus), /kv/snapshot and /kv/stream (the KV pool)
               --model FILE [--host 127.0.0.1] [--port 8000 (0: any free port)]
               [--served-model-name NAME] [--api-key KEY (or env KVSCOPE_API_KEY)]
               [--max-waiting N] [--drain-seconds S] [--metrics-names kvscope|vllm]
               [--http-threads N] [--max-connections-per-client N] [--log-format text|json]
               [--kv-dtype D] [--block-size B] [--kv-budget-mib M] [--max-seqs N]
               [--max-batched-tokens N] [--preemption swap|recompute] [--swa-full]
               [--threads N] [--backend B]
  top          a running server's KV cache and load, live: kvscope-cli serve, llama.cpp's
               llama-server or vLLM (docs/attaching.md); redrawn
               in place on a terminal, one block (or JSON line) per interval otherwise
               --url URL (or the URL alone; http:// or https://) [--server-kind kvscope|llama.cpp|vllm] [--api-key KEY]
               [--kv-events tcp://HOST:PORT[,...]] [--kv-replay tcp://HOST:PORT[,...]]
               [--kv-topic T] [--kv-dtype f16] [--kv-unified yes|no|auto]
               [--interval S] [--once] [--json]
  tokenize     token ids and pieces of a text; works on vocabulary-only GGUFs
               --model FILE --text TEXT|- [--json] [--no-bos] [--parse-special]
               (--text - reads stdin byte for byte; BOS as the file asks; special-
               token strings are plain text unless --parse-special)
  bench decode prefill and decode tok/s, and decode's share of the memory bandwidth
               --model FILE [--threads N] [--kv-dtype D] [--backend B] [--repeats R] [--swa-full] [--json]
  bench serve  one workload through paged and contiguous KV allocation, side by side;
               several KV dtypes: each in the same budget, compared with f16
               (--model FILE | --preset NAME [--type q8_0|f16|q4_0]) [--requests N]
               [--kv-budget-mib M] [--mode paged|contiguous|both] [--kv-dtype D[,D...]]
               [--block-size B] [--lengths sharegpt|uniform|fixed] [--prompt-len N]
               [--output-len N] [--max-total N] [--oracle-lengths] [--rate R]
               [--shared-prefix K] [--n N] [--seed S] [--max-seqs N] [--max-batched-tokens N]
               [--preemption swap|recompute] [--swa window|full|both] [--threads N] [--backend B] [--json]
               (--swa both: sliding-window layers freeing their old blocks, then kept whole as
               llama.cpp's --swa-full, side by side, with whether the outputs are identical)
  bench attention  the attention kernel alone per KV dtype and context, paged
               (shuffled blocks, block table) and contiguous (same data, no table)
               [--context N[,N...]] [--kv-dtype D[,D...]] [--heads H] [--kv-heads K]
               [--head-dim D] [--block-size B] [--batch B] [--queries N] [--repeats R]
               [--threads N] [--backend B] [--json]
  bench batch  llama.cpp's llama-batched-bench experiment and table (PP, TG, B, N_KV,
               T_PP s, S_PP t/s, T_TG s, S_TG t/s, T s, S t/s): B sequences, each with its
               own PP-token prompt, prefilled together, then TG decode steps of all B
               (EOS ignored); one row per PP x TG x B, after an untimed warm-up
               --model FILE -npp P[,P...] -ntg T[,T...] -npl N[,N...] (or --npp --ntg --npl)
               [--threads N] [--kv-dtype D] [--backend B] [--block-size N]
               [--kv-budget-mib M] [--max-batched-tokens N] [--json]
               set: prefix caching off, no admission watermark, max seqs = largest B,
               KV pool = exactly the largest row's blocks (unless --kv-budget-mib),
               tokens per step = largest B*PP (unless --max-batched-tokens), so every
               row's prompts run in one step and nothing is preempted (a row that
               would be is an error)
  bench client  load on any OpenAI-compatible server (kvscope-cli serve, llama.cpp's
               llama-server, vLLM): streamed requests, TTFT, inter-token and end-to-end
               latency, tokens/s; prompts as token ids, so every server gets the same
               --url URL [--requests N] [--concurrency C] [--lengths sharegpt|fixed|uniform]
               [--prompt-len P] [--output-len O] [--max-total T] [--seed S] [--vocab N]
               [--api completions|chat] [--model NAME] [--api-key KEY] [--json]
  bench tokenizer  encoding speed (MB/s, one thread) of a model's tokenizer
               --model FILE [--text-file F] [--json] (default: 4 MB of generated English)

MODEL: wherever --model FILE is taken, --model hf://ORG/NAME[:QUANT] or -hf ORG/NAME[:QUANT]
  runs a Hugging Face model: the cached file when there, else pulled first (info takes hf://...)
LEVEL: trace, debug, info, warn, error, critical, off (default info)
B (backend): auto (CUDA when built with it and a GPU answers, else CPU), cpu, cuda
--swa-full: sliding-window layers (Gemma 2/3) keep the whole context instead of freeing
  the blocks their window has left (llama.cpp's --swa-full); outputs are the same either way
D (KV dtype): f32, f16, bf16, fp8-e4m3, int8, int4, int4-kivi, int2-kivi (every command
  that runs the model runs all of them)
)";

int dispatch(const std::string& command, kvscope::cli::Args& args) {
    using namespace kvscope::cli;
    if (command == "calc")
        return run_calc(args);
    if (command == "generate")
        return run_generate(args);
    if (command == "info")
        return run_info(args);
    if (command == "make-model")
        return run_make_model(args);
    if (command == "tokenize")
        return run_tokenize(args);
    if (command == "chat")
        return run_chat(args);
    if (command == "perplexity")
        return run_perplexity(args);
    if (command == "serve")
        return run_serve(args);
    if (command == "top")
        return run_top(args);
    if (command == "pull")
        return run_pull(args);
    if (command == "models")
        return run_models(args);
    if (command == "bench") {
        const auto which = args.subcommand();
        if (which == "paint") // the one that needs Qt Widgets, which kvscope-cli does not link
            throw kvscope::Error("bench paint is now part of the desktop app: kvscope --bench-paint");
        if (which == "tokenizer")
            return run_bench_tokenizer(args);
        if (which == "decode")
            return run_bench_decode(args);
        if (which == "serve")
            return run_bench_serve(args);
        if (which == "attention")
            return run_bench_attention(args);
        if (which == "client")
            return run_bench_client(args);
        if (which == "batch")
            return run_bench_batch(args);
        throw kvscope::Error("bench needs a benchmark name: decode, serve, attention, batch, tokenizer or client");
    }
    throw kvscope::Error("unknown command '" + command + "'");
}

// --log-level LEVEL is global: before the command as the usage shows it, or
// anywhere after it, where people put options (`serve --log-level debug`).
void take_log_level(std::vector<std::string>& words) {
    const auto it = std::find(words.begin(), words.end(), "--log-level");
    if (it == words.end())
        return;
    if (it + 1 == words.end())
        throw kvscope::Error("--log-level needs a level: trace, debug, info, warn, error, critical or off");
    kvscope::set_log_level(*(it + 1));
    words.erase(it, it + 2);
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> words(argv + 1, argv + argc);
    if (words.empty() || words[0] == "--help" || words[0] == "-h") {
        std::fputs(kUsage, words.empty() ? stderr : stdout);
        return words.empty() ? 2 : 0;
    }
    try {
        take_log_level(words);
        if (words.empty())
            throw kvscope::Error("missing command");
        const std::string command = words[0];
        kvscope::cli::Args args(std::vector<std::string>(words.begin() + 1, words.end()));
        if (args.flag("--help")) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        return dispatch(command, args);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvscope-cli: %s\n", e.what());
        return 1;
    }
}
