// GGUF model files (versions 2 and 3): a validated, read-only view of a
// memory-mapped file.
//
// The constructor checks every count, length, offset and size in the file
// before anything is used, so a truncated, corrupted or hostile file gives a
// kvscope::Error naming the file and the problem instead of a crash, an
// out-of-bounds read or a huge allocation. Once constructed, every tensor's
// bytes lie inside the mapping and every metadata value can be read safely.
//
// Format: "GGUF" magic, u32 version, u64 tensor count, u64 metadata count;
// then the metadata entries (string key, u32 value type, value); then one
// entry per tensor (string name, u32 n_dims, u64 dims[n_dims], u32 ggml
// type, u64 offset); then, at the next multiple of general.alignment
// (default 32), the data section that the tensor offsets are relative to.
// Strings are a u64 byte length and that many bytes. All little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/ggml_type.h"
#include "engine/model/mapped_file.h"

namespace kvscope {

struct GgufTensorInfo {
    std::string name;
    std::vector<std::uint64_t> dims; // ggml order: dims[0] is the row length
    GgmlType type;
    std::uint64_t offset;  // within the data section
    std::uint64_t n_bytes; // tensor_bytes(type, dims)
    const std::byte* data; // into the mapping, valid while the GgufFile lives
};

// The value types of GGUF metadata, numbered as in the file.
enum class GgufValueType : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

std::string_view to_string(GgufValueType type); // "u32", "string", "array", ...

class GgufFile {
public:
    // Maps and validates the file; throws kvscope::Error.
    explicit GgufFile(const std::string& path);

    GgufFile(GgufFile&&) noexcept = default;
    GgufFile& operator=(GgufFile&&) noexcept = default;
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return path_; }
    std::uint32_t version() const { return version_; }
    std::uint64_t file_size() const { return mapping_.size(); }
    std::uint32_t alignment() const { return alignment_; }
    // Byte where the tensor data section starts; tensor offsets count from
    // here. For a file without tensors it may lie past the end.
    std::uint64_t data_offset() const { return data_offset_; }

    // Metadata. Each getter returns nullopt when the key is absent and throws
    // kvscope::Error naming the key when its value has another type.
    bool has(std::string_view key) const;
    std::vector<std::string_view> metadata_keys() const; // in file order
    std::optional<std::string> get_string(std::string_view key) const;
    // Any integer type; a negative value throws.
    std::optional<std::uint64_t> get_uint(std::string_view key) const;
    // f32, f64 or any integer type.
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
    // Arrays of f32 or f64.
    std::optional<std::vector<float>> get_float_array(std::string_view key) const;
    // Arrays of any integer type whose values fit in int32.
    std::optional<std::vector<std::int32_t>> get_int_array(std::string_view key) const;
    // Arrays of bool (Gemma's per-layer sliding_window_pattern).
    std::optional<std::vector<bool>> get_bool_array(std::string_view key) const;
    // Element count of an array, without reading its elements.
    std::optional<std::uint64_t> get_array_length(std::string_view key) const;
    // One line for people: the value, or for arrays their type and length
    // and the first few elements. Throws for an absent key.
    std::string describe_value(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    // Drops the resident pages of mapped bytes the caller has copied
    // (MappedFile::release); returns the bytes dropped.
    std::size_t release_pages(const void* from, std::size_t bytes) const {
        return mapping_.release(static_cast<const std::byte*>(from), bytes);
    }
    const GgufTensorInfo* find_tensor(std::string_view name) const; // nullptr if absent

private:
    // Where a validated metadata value lies in the mapping.
    struct Value {
        GgufValueType type;
        GgufValueType element_type; // arrays only
        std::uint64_t count;        // arrays only
        const std::byte* payload;   // the value, or an array's first element
    };

    const Value* find_value(std::string_view key) const;
    const Value* find_value(std::string_view key, GgufValueType wanted) const;
    const Value* find_array(std::string_view key, std::string_view wanted) const;
    [[noreturn]] void wrong_type(std::string_view key, const Value& value,
                                 std::string_view wanted) const;

    std::string path_;
    MappedFile mapping_;
    std::uint32_t version_ = 0;
    std::uint32_t alignment_ = 32;
    std::uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, Value>> metadata_; // file order
    std::map<std::string, std::size_t, std::less<>> metadata_index_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, std::size_t, std::less<>> tensor_index_;

    friend class GgufParser;
};

} // namespace kvscope
