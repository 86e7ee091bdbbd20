#include "app/cli/text_file.h"

#include <fstream>
#include <iterator>

#include "engine/core/error.h"

namespace kvscope::cli {

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot open the text file " + path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.empty())
        throw Error("the text file " + path + " is empty");
    return text;
}

} // namespace kvscope::cli
