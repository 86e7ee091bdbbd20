// Prints the words of the pre-tokenizer named by argv[1] (a
// tokenizer.ggml.pre value) for each text on stdin. Texts end with \x01;
// the words of a text are separated by \x02 and end with \x01. Built and
// run by check_pre_tokenizers.py; not part of the build.
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/tokenizer/pre_tokenizer.h"

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    const kvscope::PreTokenizerKind kind = kvscope::choose_pre_tokenizer(argv[1]).kind;
    const std::string input((std::istreambuf_iterator<char>(std::cin)), {});
    std::string out;
    for (std::size_t pos = 0, end; (end = input.find('\x01', pos)) != std::string::npos; pos = end + 1) {
        std::vector<std::string_view> words;
        kvscope::pre_tokenize(kind, std::string_view(input).substr(pos, end - pos), words);
        for (std::size_t i = 0; i < words.size(); ++i) {
            if (i > 0) out += '\x02';
            out += words[i];
        }
        out += '\x01';
    }
    std::cout << out;
}
