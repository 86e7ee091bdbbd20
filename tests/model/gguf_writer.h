// tests/model: a minimal GGUF writer, written from the format description
// (not from the reader), for hand-built test files with chosen contents.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::test {

class GgufWriter {
public:
    // GGUF value type numbers.
    enum : std::uint32_t { U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6,
                           Bool = 7, String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12 };

    std::uint32_t version = 3;
    std::uint32_t alignment = 32; // where tensor data is placed; general.alignment is up to the test

    void add_u32(std::string_view key, std::uint32_t v) { scalar(key, U32, v); }
    void add_i32(std::string_view key, std::int32_t v) { scalar(key, I32, v); }
    void add_u64(std::string_view key, std::uint64_t v) { scalar(key, U64, v); }
    void add_i64(std::string_view key, std::int64_t v) { scalar(key, I64, v); }
    void add_u8(std::string_view key, std::uint8_t v) { scalar(key, U8, v); }
    void add_i8(std::string_view key, std::int8_t v) { scalar(key, I8, v); }
    void add_u16(std::string_view key, std::uint16_t v) { scalar(key, U16, v); }
    void add_i16(std::string_view key, std::int16_t v) { scalar(key, I16, v); }
    void add_f32(std::string_view key, float v) { scalar(key, F32, v); }
    void add_f64(std::string_view key, double v) { scalar(key, F64, v); }
    void add_bool(std::string_view key, bool v) { scalar(key, Bool, std::uint8_t{v}); }
    void add_string(std::string_view key, std::string_view v) {
        key_and_type(key, String);
        put_string(kv_, v);
    }
    void add_string_array(std::string_view key, const std::vector<std::string>& values) {
        array_header(key, String, values.size());
        for (const auto& v : values)
            put_string(kv_, v);
    }
    template <typename T>
    void add_array(std::string_view key, std::uint32_t element_type, const std::vector<T>& values) {
        array_header(key, element_type, values.size());
        for (const T& v : values)
            put(kv_, v);
    }
    // Appends raw bytes to the metadata section: for entries a test wants
    // to be malformed. `entries` is how many entries they count as.
    void add_raw_metadata(const std::string& bytes, std::uint64_t entries = 1) {
        kv_ += bytes;
        n_kv_ += entries;
    }

    // Adds a tensor with the given ggml dims, type number and data bytes.
    // Data is placed at the next multiple of `alignment` unless `offset` is
    // given.
    void add_tensor(std::string_view name, const std::vector<std::uint64_t>& dims,
                    std::uint32_t type, const std::string& data, std::uint64_t offset = ~0ull) {
        if (offset == ~0ull) {
            offset = padded(data_.size());
            data_.resize(offset, '\0');
            data_ += data;
        } else {
            if (data_.size() < offset + data.size())
                data_.resize(offset + data.size(), '\0');
            data_.replace(offset, data.size(), data);
        }
        put_string(tensors_, name);
        put(tensors_, static_cast<std::uint32_t>(dims.size()));
        for (std::uint64_t d : dims)
            put(tensors_, d);
        put(tensors_, type);
        put(tensors_, offset);
        ++n_tensors_;
    }

    std::string bytes() const {
        std::string out = "GGUF";
        put(out, version);
        put(out, n_tensors_);
        put(out, n_kv_);
        out += kv_;
        out += tensors_;
        if (n_tensors_ > 0) {
            out.resize(padded(out.size()), '\0');
            out += data_;
        }
        return out;
    }

    void write(const std::string& path) const {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes();
    }

    template <typename T>
    static void put(std::string& out, T v) {
        char raw[sizeof(T)];
        std::memcpy(raw, &v, sizeof(T));
        out.append(raw, sizeof(T));
    }
    static void put_string(std::string& out, std::string_view s) {
        put(out, static_cast<std::uint64_t>(s.size()));
        out += s;
    }

private:
    std::uint64_t padded(std::uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }

    void key_and_type(std::string_view key, std::uint32_t type) {
        put_string(kv_, key);
        put(kv_, type);
        ++n_kv_;
    }
    template <typename T>
    void scalar(std::string_view key, std::uint32_t type, T v) {
        key_and_type(key, type);
        put(kv_, v);
    }
    void array_header(std::string_view key, std::uint32_t element_type, std::uint64_t n) {
        key_and_type(key, Array);
        put(kv_, element_type);
        put(kv_, n);
    }

    std::string kv_;
    std::string tensors_;
    std::string data_;
    std::uint64_t n_kv_ = 0;
    std::uint64_t n_tensors_ = 0;
};

// A float as the bytes a tensor stores.
inline std::string f32_bytes(const std::vector<float>& values) {
    std::string out;
    for (float v : values)
        GgufWriter::put(out, v);
    return out;
}

} // namespace kvscope::test
