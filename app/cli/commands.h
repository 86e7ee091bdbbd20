// The kvscope-cli subcommands. Each takes the arguments after its own name,
// prints to stdout, and returns the process exit code; kvscope::Error
// escaping one is printed by main() as "kvscope-cli: <message>" (exit 1).
#pragma once

#include "app/cli/args.h"

namespace kvscope::cli {

int run_calc(Args& args);        // calc_command.cpp
int run_generate(Args& args);    // generate_command.cpp
int run_info(Args& args);        // info_command.cpp
int run_make_model(Args& args);  // make_model_command.cpp
int run_bench_decode(Args& args); // bench_decode_command.cpp: tok/s and bandwidth
int run_bench_serve(Args& args);  // bench_serve_command.cpp: paged vs contiguous serving
int run_bench_attention(Args& args); // bench_attention_command.cpp: the attention kernel, paged vs contiguous
int run_bench_batch(Args& args);     // bench_batch_command.cpp: llama-batched-bench's table
int run_bench_client(Args& args);    // bench_client_command.cpp: load on an OpenAI-compatible server
int run_tokenize(Args& args);        // tokenize_command.cpp: ids and pieces of a text
int run_chat(Args& args);            // chat_command.cpp: terminal chat via the chat template
int run_bench_tokenizer(Args& args); // bench_tokenizer_command.cpp: encode MB/s
int run_perplexity(Args& args);      // perplexity_command.cpp: KV dtype accuracy on a text
int run_serve(Args& args);           // serve_command.cpp: the OpenAI-compatible HTTP server
int run_top(Args& args);             // top_command.cpp: a running server's KV cache, live
int run_pull(Args& args);            // pull_command.cpp: a model from the Hugging Face Hub
int run_models(Args& args);          // models_command.cpp: the GGUFs in the hub cache

} // namespace kvscope::cli
