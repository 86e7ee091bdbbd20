// kvscope-cli tokenize: a text's token ids and pieces with a model's
// tokenizer. Reads only the vocabulary, so vocabulary-only GGUF files (no
// tensors) work too.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace kvscope::cli {
namespace {

// All of standard input, byte for byte (a final newline included).
std::string read_stdin() {
    std::string text;
    char buffer[1 << 16];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0)
        text.append(buffer, n);
    if (std::ferror(stdin))
        throw Error("could not read the text from standard input");
    return text;
}

// Text for a terminal, in `quote`s: control characters escaped, bytes that
// are not (yet) UTF-8 characters as \xNN.
std::string display(std::string_view bytes, char quote) {
    std::string out(1, quote);
    for (std::size_t pos = 0; pos < bytes.size();) {
        const utf8::ScanResult r = utf8::scan(bytes.substr(pos));
        const char c = bytes[pos];
        const auto b = static_cast<unsigned char>(c);
        if (r.kind == utf8::Scan::complete && r.length > 1) {
            out.append(bytes.substr(pos, r.length));
            pos += r.length;
            continue;
        }
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\\' || c == quote)
            out += std::string("\\") + c;
        else if (b < 0x20 || b >= 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", b);
            out += hex;
        } else
            out += c;
        ++pos;
    }
    return out + quote;
}

// `text` padded with spaces to `width` characters (UTF-8 aware).
std::string padded(std::string text, std::size_t width) {
    std::size_t chars = 0;
    for (const char c : text)
        chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (chars < width)
        text.append(width - chars, ' ');
    return text;
}

} // namespace

int run_tokenize(Args& args) {
    const std::string path = required_model_path(args);
    const auto text_arg = args.value("--text");
    const bool json = args.flag("--json");
    const bool no_bos = args.flag("--no-bos");
    const bool parse_special = args.flag("--parse-special");
    args.finish();
    if (!text_arg)
        throw Error("tokenize needs --text TEXT (or --text - to read standard input)");
    const std::string text = *text_arg == "-" ? read_stdin() : *text_arg;

    const GgufFile file(path);
    const Tokenizer tokenizer(read_vocabulary(file));
    const Vocabulary& vocab = tokenizer.vocabulary();
    // BOS exactly when the file asks for it (add_bos_token, or the model's
    // default), unless --no-bos; EOS when it asks for that.
    const bool add_bos = vocab.add_bos && !no_bos;
    std::vector<std::int32_t> ids;
    if (add_bos)
        ids.push_back(tokenizer.bos());
    const std::vector<std::int32_t> body = tokenizer.encode(text, {.add_special = false, .parse_special = parse_special});
    ids.insert(ids.end(), body.begin(), body.end());
    if (vocab.add_eos)
        ids.push_back(tokenizer.eos());

    std::vector<std::string> pieces;
    pieces.reserve(ids.size());
    for (const std::int32_t id : ids)
        pieces.push_back(tokenizer.token_text(id));

    if (json) {
        nlohmann::ordered_json j;
        j["ids"] = ids;
        j["pieces"] = pieces;
        j["n_tokens"] = ids.size();
        j["text_bytes"] = text.size();
        j["tokenizer"] = vocab.model;
        if (vocab.model == "gpt2")
            j["pre_tokenizer"] = std::string(to_string(choose_pre_tokenizer(vocab.pre).kind));
        j["add_bos"] = add_bos;
        j["parse_special"] = parse_special;
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    // id, the token as the vocabulary stores it, and the text it stands for.
    for (std::size_t i = 0; i < ids.size(); ++i)
        std::printf("%8d  %s %s\n", ids[i], padded(display(pieces[i], '\''), 18).c_str(),
                    display(tokenizer.token_piece(ids[i], true), '"').c_str());
    std::fprintf(stderr, "[%zu tokens for %zu bytes; %s tokenizer%s%s]\n", ids.size(), text.size(), vocab.model.c_str(),
                 add_bos ? ", BOS added" : "", parse_special ? ", special tokens parsed" : "");
    return 0;
}

} // namespace kvscope::cli
