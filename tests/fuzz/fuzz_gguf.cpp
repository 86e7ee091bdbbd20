// The GGUF reader on arbitrary bytes: every input either loads, with every
// tensor inside the file and every metadata value readable, or throws
// kvscope::Error. Anything else (a crash, another exception, an ASan or
// UBSan report) is a finding. The bytes are read through a memfd, so the
// reader maps them as it maps a real file.
#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"
#include "fuzz_support.h"

namespace {

using kvscope::GgufFile;
using kvscope::fuzz::require;

// Calls every getter on the key; all but the one of its type throw.
template <typename Get>
void try_get(Get get) {
    try {
        get();
    } catch (const kvscope::Error&) {
    }
}

void use(const GgufFile& file) {
    for (const auto& t : file.tensors()) {
        require(file.data_offset() + t.offset + t.n_bytes <= file.file_size(), "every tensor lies inside the file");
        if (t.n_bytes > 0) {
            volatile std::byte first = t.data[0];
            volatile std::byte last = t.data[t.n_bytes - 1];
            (void)first;
            (void)last;
        }
    }
    for (std::string_view key : file.metadata_keys()) {
        file.describe_value(key);
        try_get([&] { file.get_string(key); });
        try_get([&] { file.get_uint(key); });
        try_get([&] { file.get_float(key); });
        try_get([&] { file.get_bool(key); });
        try_get([&] { file.get_string_array(key); });
        try_get([&] { file.get_float_array(key); });
        try_get([&] { file.get_int_array(key); });
        try_get([&] { file.get_array_length(key); });
    }
    kvscope::tensor_stats(file);
    try_get([&] { kvscope::read_model_config(file); });
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    kvscope::set_log_level("off");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
    require(fd >= 0, "memfd_create works");
    require(write(fd, data, size) == static_cast<ssize_t>(size), "the input is written whole");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
        use(GgufFile(path));
    } catch (const kvscope::Error& e) {
        require(std::string(e.what()).rfind(path, 0) == 0, "a GGUF error starts with the file's path");
    }
    close(fd);
    return 0;
}
