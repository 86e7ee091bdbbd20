#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/ggml_type.h"

namespace kvscope {

// Writes GGUF v3 files: metadata, then tensors whose bytes are produced one
// tensor at a time when the file is written, so a multi-gigabyte model never
// sits in memory whole. Tensor data is aligned to 32 bytes (GGUF's default).
class GgufWriter {
public:
    void set_string(std::string_view key, std::string_view value);
    void set_u32(std::string_view key, std::uint32_t value);
    void set_f32(std::string_view key, float value);
    void set_bool(std::string_view key, bool value);
    void set_string_array(std::string_view key, const std::vector<std::string>& values);
    void set_f32_array(std::string_view key, const std::vector<float>& values);
    void set_i32_array(std::string_view key, const std::vector<std::int32_t>& values);

    // `fill` writes the tensor's tensor_bytes(type, dims) bytes into dst.
    using Fill = std::function<void(std::byte* dst)>;
    void add_tensor(std::string name, std::vector<std::uint64_t> dims, GgmlType type, Fill fill);

    // Throws kvscope::Error naming the path when it cannot be written.
    void write(const std::string& path) const;

private:
    struct Tensor {
        std::string name;
        std::vector<std::uint64_t> dims;
        GgmlType type;
        std::uint64_t offset;
        std::uint64_t bytes;
        Fill fill;
    };
    void key(std::string_view key, std::uint32_t value_type);

    std::string metadata_; // encoded key/value pairs
    std::uint64_t n_metadata_ = 0;
    std::vector<Tensor> tensors_;
    std::uint64_t data_bytes_ = 0;
};

} // namespace kvscope
