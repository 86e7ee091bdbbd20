// Reading a whole text file named on the command line (--text-file).
#pragma once

#include <string>

namespace kvscope::cli {

// The file's bytes; throws kvscope::Error when it cannot be opened or is empty.
std::string read_text_file(const std::string& path);

} // namespace kvscope::cli
