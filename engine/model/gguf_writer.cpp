#include "engine/model/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/core/error.h"

namespace kvscope {
namespace {

constexpr std::uint64_t kAlignment = 32;
enum : std::uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

template <typename T>
void put(std::string& out, T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T)); // GGUF is little-endian, as is every host we build for
    out.append(bytes, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
    put<std::uint64_t>(out, s.size());
    out.append(s);
}

std::uint64_t aligned(std::uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

} // namespace

void GgufWriter::key(std::string_view key, std::uint32_t value_type) {
    put_string(metadata_, key);
    put(metadata_, value_type);
    ++n_metadata_;
}

void GgufWriter::set_string(std::string_view k, std::string_view value) {
    key(k, kString);
    put_string(metadata_, value);
}

void GgufWriter::set_u32(std::string_view k, std::uint32_t value) {
    key(k, kU32);
    put(metadata_, value);
}

void GgufWriter::set_f32(std::string_view k, float value) {
    key(k, kF32);
    put(metadata_, value);
}

void GgufWriter::set_bool(std::string_view k, bool value) {
    key(k, kBool);
    put<std::uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::set_string_array(std::string_view k, const std::vector<std::string>& values) {
    key(k, kArray);
    put(metadata_, kString);
    put<std::uint64_t>(metadata_, values.size());
    for (const std::string& v : values)
        put_string(metadata_, v);
}

void GgufWriter::set_f32_array(std::string_view k, const std::vector<float>& values) {
    key(k, kArray);
    put(metadata_, kF32);
    put<std::uint64_t>(metadata_, values.size());
    for (float v : values)
        put(metadata_, v);
}

void GgufWriter::set_i32_array(std::string_view k, const std::vector<std::int32_t>& values) {
    key(k, kArray);
    put(metadata_, kI32);
    put<std::uint64_t>(metadata_, values.size());
    for (std::int32_t v : values)
        put(metadata_, v);
}

void GgufWriter::add_tensor(std::string name, std::vector<std::uint64_t> dims, GgmlType type, Fill fill) {
    const std::uint64_t bytes = tensor_bytes(type, dims);
    const std::uint64_t offset = aligned(data_bytes_);
    tensors_.push_back({std::move(name), std::move(dims), type, offset, bytes, std::move(fill)});
    data_bytes_ = offset + bytes;
}

void GgufWriter::write(const std::string& path) const {
    std::string head = "GGUF";
    put<std::uint32_t>(head, 3);
    put<std::uint64_t>(head, tensors_.size());
    put<std::uint64_t>(head, n_metadata_);
    head += metadata_;
    for (const Tensor& t : tensors_) {
        put_string(head, t.name);
        put<std::uint32_t>(head, static_cast<std::uint32_t>(t.dims.size()));
        for (std::uint64_t d : t.dims)
            put(head, d);
        put(head, static_cast<std::uint32_t>(t.type));
        put(head, t.offset);
    }
    head.resize(aligned(head.size()), '\0');

    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!file)
        throw Error("cannot create " + path + ": " + std::strerror(errno));
    auto write_bytes = [&](const void* data, std::size_t n) {
        if (std::fwrite(data, 1, n, file.get()) != n)
            throw Error("cannot write " + path + ": " + std::strerror(errno));
    };
    write_bytes(head.data(), head.size());
    std::uint64_t written = 0;
    std::vector<std::byte> buffer;
    const std::byte zeros[kAlignment] = {};
    for (const Tensor& t : tensors_) {
        write_bytes(zeros, t.offset - written);
        buffer.assign(t.bytes, std::byte{0});
        t.fill(buffer.data());
        write_bytes(buffer.data(), buffer.size());
        written = t.offset + t.bytes;
    }
    if (std::fflush(file.get()) != 0)
        throw Error("cannot write " + path + ": " + std::strerror(errno));
}

} // namespace kvscope
