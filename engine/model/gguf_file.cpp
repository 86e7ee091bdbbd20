#include "engine/model/gguf_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/model/message_format.h"

namespace kvscope {
namespace {

constexpr std::uint32_t kMaxDims = 4; // ggml's GGML_MAX_DIMS
constexpr std::uint64_t kMaxAlignment = 1u << 30;
// Smallest possible encodings, used to reject absurd counts before reading.
constexpr std::uint64_t kMinMetadataEntryBytes = 8 + 4 + 1; // key length, type, u8 value
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8; // name length, 1 dim

template <typename T>
T load(const std::byte* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

// Bytes of a fixed-size value; 0 for strings and arrays.
std::uint64_t scalar_size(GgufValueType type) {
    switch (type) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::Bool: return 1;
    case GgufValueType::U16:
    case GgufValueType::I16: return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32: return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64: return 8;
    case GgufValueType::String:
    case GgufValueType::Array: return 0;
    }
    return 0;
}

bool is_known(std::uint32_t raw) { return raw <= static_cast<std::uint32_t>(GgufValueType::F64); }

bool is_integer(GgufValueType type) {
    return scalar_size(type) != 0 && type != GgufValueType::Bool &&
           type != GgufValueType::F32 && type != GgufValueType::F64;
}

// An integer of any width and signedness, without losing range.
struct Integer {
    bool negative;
    std::uint64_t magnitude;
};

std::optional<Integer> load_integer(GgufValueType type, const std::byte* at) {
    const auto from_signed = [](std::int64_t v) {
        return Integer{v < 0, v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v)};
    };
    switch (type) {
    case GgufValueType::U8: return Integer{false, load<std::uint8_t>(at)};
    case GgufValueType::U16: return Integer{false, load<std::uint16_t>(at)};
    case GgufValueType::U32: return Integer{false, load<std::uint32_t>(at)};
    case GgufValueType::U64: return Integer{false, load<std::uint64_t>(at)};
    case GgufValueType::I8: return from_signed(load<std::int8_t>(at));
    case GgufValueType::I16: return from_signed(load<std::int16_t>(at));
    case GgufValueType::I32: return from_signed(load<std::int32_t>(at));
    case GgufValueType::I64: return from_signed(load<std::int64_t>(at));
    default: return std::nullopt;
    }
}

std::optional<double> load_float(GgufValueType type, const std::byte* at) {
    if (type == GgufValueType::F32)
        return load<float>(at);
    if (type == GgufValueType::F64)
        return load<double>(at);
    return std::nullopt;
}

// A string value whose length was validated at load time.
std::string_view load_string(const std::byte* at) {
    const auto length = load<std::uint64_t>(at);
    return {reinterpret_cast<const char*>(at + 8), static_cast<std::size_t>(length)};
}

std::string scalar_text(GgufValueType type, const std::byte* at) {
    if (type == GgufValueType::String)
        return quoted(load_string(at));
    if (type == GgufValueType::Bool)
        return load<std::uint8_t>(at) != 0 ? "true" : "false";
    if (const auto number = load_float(type, at))
        return decimal(*number);
    const Integer integer = *load_integer(type, at);
    return (integer.negative ? "-" : "") + std::to_string(integer.magnitude);
}

// Steps over one array element already validated.
const std::byte* next_element(GgufValueType type, const std::byte* at) {
    return at + (type == GgufValueType::String ? 8 + load<std::uint64_t>(at) : scalar_size(type));
}

} // namespace

std::string_view to_string(GgufValueType type) {
    switch (type) {
    case GgufValueType::U8: return "u8";
    case GgufValueType::I8: return "i8";
    case GgufValueType::U16: return "u16";
    case GgufValueType::I16: return "i16";
    case GgufValueType::U32: return "u32";
    case GgufValueType::I32: return "i32";
    case GgufValueType::F32: return "f32";
    case GgufValueType::Bool: return "bool";
    case GgufValueType::String: return "string";
    case GgufValueType::Array: return "array";
    case GgufValueType::U64: return "u64";
    case GgufValueType::I64: return "i64";
    case GgufValueType::F64: return "f64";
    }
    return "unknown";
}

// Reads the file front to back with a bounds-checked cursor, filling the
// GgufFile. Nothing is allocated for a count or length before the bytes it
// claims are known to exist in the file.
class GgufParser {
public:
    explicit GgufParser(GgufFile& file)
        : file_(file), base_(file.mapping_.data()), size_(file.mapping_.size()) {}

    void parse() {
        read_header();
        for (std::uint64_t i = 0; i < n_metadata_; ++i)
            read_metadata_entry(i);
        read_alignment();
        for (std::uint64_t i = 0; i < n_tensors_; ++i)
            read_tensor_info(i);
        place_tensor_data();
    }

private:
    [[noreturn]] void fail(const std::string& problem) const {
        throw Error(file_.path_ + ": " + problem);
    }

    std::uint64_t remaining() const { return size_ - pos_; }

    // "the key of metadata entry 3": names the part being read in errors.
    std::string part(std::string_view what) const {
        return std::string(what) + (subject_.empty() ? "" : " of " + subject_);
    }

    // Every read goes through here.
    const std::byte* take(std::uint64_t n, std::string_view what) {
        if (n > remaining())
            fail("truncated: " + part(what) + " needs " + grouped(n) + " bytes at byte " +
                 grouped(pos_) + ", but the file ends at byte " + grouped(size_));
        const std::byte* at = base_ + pos_;
        pos_ += n;
        return at;
    }
    std::uint32_t u32(std::string_view what) { return load<std::uint32_t>(take(4, what)); }
    std::uint64_t u64(std::string_view what) { return load<std::uint64_t>(take(8, what)); }

    std::string_view string(std::string_view what) {
        const std::uint64_t start = pos_;
        const std::uint64_t length = u64(what);
        if (length > remaining())
            fail(part(what) + " at byte " + grouped(start) + " claims " + grouped(length) +
                 " bytes, but only " + grouped(remaining()) + " bytes follow in the file");
        take(length, what);
        return load_string(base_ + start);
    }

    void read_header() {
        const std::byte* magic = take(4, "the GGUF magic");
        if (std::memcmp(magic, "GGUF", 4) != 0)
            fail("not a GGUF file (it starts with bytes " + hex_bytes(magic, 4) +
                 ", expected 47 47 55 46 \"GGUF\")");
        const std::uint32_t version = u32("the version");
        if (version != 2 && version != 3) {
            const bool big_endian = version == 0x02000000u || version == 0x03000000u;
            fail(big_endian
                     ? "big-endian GGUF files are not supported"
                     : "GGUF version " + std::to_string(version) +
                           " is not supported (expected 2 or 3)");
        }
        file_.version_ = version;
        subject_ = "the header";
        n_tensors_ = u64("the tensor count");
        n_metadata_ = u64("the metadata count");
        if (n_metadata_ > remaining() / kMinMetadataEntryBytes)
            fail("header claims " + grouped(n_metadata_) + " metadata entries, but only " +
                 grouped(remaining()) + " bytes follow");
        if (n_tensors_ > remaining() / kMinTensorInfoBytes)
            fail("header claims " + grouped(n_tensors_) + " tensors, but only " +
                 grouped(remaining()) + " bytes follow");
    }

    void read_metadata_entry(std::uint64_t index) {
        subject_ = "metadata entry " + grouped(index);
        const std::string_view key = string("the key");
        if (key.empty())
            fail(subject_ + " has an empty key");
        if (file_.metadata_index_.contains(key))
            fail("metadata key " + quoted(key) + " appears twice");
        subject_ = "metadata " + quoted(key);
        GgufFile::Value value{value_type("the value type"), GgufValueType::U8, 0, nullptr};
        if (value.type == GgufValueType::Array) {
            value.element_type = value_type("the array element type");
            if (value.element_type == GgufValueType::Array)
                fail(subject_ + " is an array of arrays, which GGUF readers do not support");
            value.count = u64("the array length");
            value.payload = base_ + pos_;
            skip_array(value.element_type, value.count);
        } else {
            value.payload = base_ + pos_;
            skip_value(value.type);
        }
        file_.metadata_index_.emplace(std::string(key), file_.metadata_.size());
        file_.metadata_.emplace_back(std::string(key), value);
    }

    GgufValueType value_type(std::string_view what) {
        const std::uint32_t raw = u32(what);
        if (!is_known(raw))
            fail(part(what) + " is " + std::to_string(raw) + ", not a GGUF value type (0 to 12)");
        return static_cast<GgufValueType>(raw);
    }

    void skip_value(GgufValueType type) {
        if (type == GgufValueType::String)
            string("the value");
        else
            check_bools(take(scalar_size(type), "the value"), type, 1);
    }

    void skip_array(GgufValueType type, std::uint64_t count) {
        // Even an empty string takes its 8-byte length.
        const std::uint64_t min_size = type == GgufValueType::String ? 8 : scalar_size(type);
        if (count > remaining() / min_size)
            fail("the array of " + subject_ + " claims " + grouped(count) + " elements of type " +
                 std::string(to_string(type)) + ", but only " + grouped(remaining()) +
                 " bytes follow");
        if (type != GgufValueType::String) {
            check_bools(take(count * min_size, "the array"), type, count);
            return;
        }
        for (std::uint64_t i = 0; i < count; ++i)
            string("an array element");
    }

    // Bools are one byte, 0 or 1; anything else means corruption.
    void check_bools(const std::byte* at, GgufValueType type, std::uint64_t count) const {
        if (type != GgufValueType::Bool)
            return;
        for (std::uint64_t i = 0; i < count; ++i) {
            const auto byte = load<std::uint8_t>(at + i);
            if (byte > 1)
                fail("a bool of " + subject_ + " at byte " +
                     grouped(static_cast<std::uint64_t>(at + i - base_)) + " is " +
                     std::to_string(byte) + ", expected 0 or 1");
        }
    }

    void read_alignment() {
        const auto alignment = file_.get_uint("general.alignment");
        if (!alignment)
            return;
        if (*alignment == 0 || *alignment > kMaxAlignment || !std::has_single_bit(*alignment))
            fail("general.alignment is " + grouped(*alignment) +
                 ", expected a power of two up to " + grouped(kMaxAlignment));
        file_.alignment_ = static_cast<std::uint32_t>(*alignment);
    }

    void read_tensor_info(std::uint64_t index) {
        subject_ = "tensor info " + grouped(index);
        const std::string_view name = string("the name");
        if (name.empty())
            fail(subject_ + " has an empty name");
        if (file_.tensor_index_.contains(name))
            fail("tensor " + quoted(name) + " appears twice");
        subject_ = "tensor " + quoted(name);
        GgufTensorInfo info{std::string(name), read_dims(), read_type(), 0, 0, nullptr};
        info.offset = u64("the data offset");
        if (info.offset % file_.alignment_ != 0)
            fail(subject_ + ": data offset " + grouped(info.offset) +
                 " is not a multiple of the alignment " + grouped(file_.alignment_));
        try {
            info.n_bytes = tensor_bytes(info.type, info.dims);
        } catch (const Error& e) {
            fail(subject_ + " (" + std::string(to_string(info.type)) + "): " + e.what());
        }
        file_.tensor_index_.emplace(info.name, file_.tensors_.size());
        file_.tensors_.push_back(std::move(info));
    }

    std::vector<std::uint64_t> read_dims() {
        const std::uint32_t n_dims = u32("the dimension count");
        if (n_dims == 0 || n_dims > kMaxDims)
            fail(subject_ + " has " + std::to_string(n_dims) +
                 " dimensions, expected 1 to " + std::to_string(kMaxDims));
        std::vector<std::uint64_t> dims(n_dims);
        for (auto& dim : dims) {
            dim = u64("a dimension");
            if (dim == 0)
                fail(subject_ + " has a zero dimension");
        }
        return dims;
    }

    GgmlType read_type() {
        const std::uint32_t raw = u32("the type");
        const GgmlTypeTraits* traits = find_ggml_type(raw);
        if (traits == nullptr)
            fail(subject_ + " has unknown ggml type " + std::to_string(raw));
        return traits->type;
    }

    // The data section starts at the next multiple of the alignment after
    // the tensor infos; every tensor must lie inside the file and apart from
    // the others.
    void place_tensor_data() {
        const std::uint64_t data_start = (pos_ + file_.alignment_ - 1) / file_.alignment_ *
                                         file_.alignment_;
        file_.data_offset_ = data_start;
        if (file_.tensors_.empty())
            return; // vocabulary-only files may end right after the metadata
        if (data_start > size_)
            fail("the tensor data section would start at byte " + grouped(data_start) +
                 ", but the file has " + grouped(size_) + " bytes");
        for (GgufTensorInfo& t : file_.tensors_) {
            check_inside_file(t, data_start);
            t.data = base_ + data_start + t.offset;
        }
        check_no_overlap();
    }

    void check_inside_file(const GgufTensorInfo& t, std::uint64_t data_start) const {
        const std::uint64_t available = size_ - data_start;
        if (t.offset <= available && t.n_bytes <= available - t.offset)
            return;
        if (t.offset > available)
            fail("tensor " + quoted(t.name) + ": data starts at offset " + grouped(t.offset) +
                 " of the data section (byte " + grouped(data_start) +
                 "), past the end of the file (" + grouped(size_) + " bytes)");
        fail("tensor " + quoted(t.name) + ": data ends at byte " +
             grouped(data_start + t.offset + t.n_bytes) + " but the file has " +
             grouped(size_) + " bytes");
    }

    void check_no_overlap() const {
        const auto& tensors = file_.tensors_;
        std::vector<std::size_t> order(tensors.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return tensors[a].offset < tensors[b].offset;
        });
        for (std::size_t i = 1; i < order.size(); ++i) {
            const GgufTensorInfo& before = tensors[order[i - 1]];
            const GgufTensorInfo& after = tensors[order[i]];
            if (before.offset + before.n_bytes > after.offset)
                fail("tensors " + quoted(before.name) + " (data bytes " + grouped(before.offset) +
                     " to " + grouped(before.offset + before.n_bytes) + ") and " +
                     quoted(after.name) + " (from data byte " + grouped(after.offset) +
                     ") overlap");
        }
    }

    static std::string hex_bytes(const std::byte* at, std::size_t n) {
        static constexpr char kDigits[] = "0123456789ABCDEF";
        std::string out;
        for (std::size_t i = 0; i < n; ++i) {
            const auto b = static_cast<unsigned>(at[i]);
            out += (i ? " " : "");
            out += kDigits[b >> 4];
            out += kDigits[b & 15];
        }
        return out;
    }

    GgufFile& file_;
    const std::byte* base_;
    std::uint64_t size_;
    std::uint64_t pos_ = 0;
    std::uint64_t n_tensors_ = 0;
    std::uint64_t n_metadata_ = 0;
    std::string subject_; // what is being read: "tensor 'x'", "metadata 'y'", ...
};

GgufFile::GgufFile(const std::string& path) : path_(path), mapping_(path) {
    GgufParser(*this).parse();
    logger("model")->debug("{}: GGUF v{}, {} metadata entries, {} tensors, {} bytes", path_,
                           version_, metadata_.size(), tensors_.size(), mapping_.size());
}

bool GgufFile::has(std::string_view key) const { return find_value(key) != nullptr; }

std::vector<std::string_view> GgufFile::metadata_keys() const {
    std::vector<std::string_view> keys;
    keys.reserve(metadata_.size());
    for (const auto& [key, value] : metadata_)
        keys.emplace_back(key);
    return keys;
}

const GgufFile::Value* GgufFile::find_value(std::string_view key) const {
    const auto it = metadata_index_.find(key);
    return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

void GgufFile::wrong_type(std::string_view key, const Value& value,
                          std::string_view wanted) const {
    const std::string found = value.type == GgufValueType::Array
                                  ? "array of " + std::string(to_string(value.element_type))
                                  : std::string(to_string(value.type));
    throw Error(path_ + ": metadata " + quoted(key) + " has type " + found + ", expected " +
                std::string(wanted));
}

const GgufFile::Value* GgufFile::find_array(std::string_view key, std::string_view wanted) const {
    const Value* value = find_value(key);
    if (value != nullptr && value->type != GgufValueType::Array)
        wrong_type(key, *value, wanted);
    return value;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const Value* value = find_value(key);
    if (value == nullptr)
        return std::nullopt;
    if (value->type != GgufValueType::String)
        wrong_type(key, *value, "a string");
    return std::string(load_string(value->payload));
}

std::optional<std::uint64_t> GgufFile::get_uint(std::string_view key) const {
    const Value* value = find_value(key);
    if (value == nullptr)
        return std::nullopt;
    const auto integer = load_integer(value->type, value->payload);
    if (!integer)
        wrong_type(key, *value, "an integer");
    if (integer->negative)
        throw Error(path_ + ": metadata " + quoted(key) + " is -" +
                    grouped(integer->magnitude) + ", expected a non-negative integer");
    return integer->magnitude;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const Value* value = find_value(key);
    if (value == nullptr)
        return std::nullopt;
    if (const auto number = load_float(value->type, value->payload))
        return number;
    const auto integer = load_integer(value->type, value->payload);
    if (!integer)
        wrong_type(key, *value, "a number");
    const auto magnitude = static_cast<double>(integer->magnitude);
    return integer->negative ? -magnitude : magnitude;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const Value* value = find_value(key);
    if (value == nullptr)
        return std::nullopt;
    if (value->type != GgufValueType::Bool)
        wrong_type(key, *value, "a bool");
    return load<std::uint8_t>(value->payload) != 0;
}

std::optional<std::uint64_t> GgufFile::get_array_length(std::string_view key) const {
    const Value* value = find_array(key, "an array");
    return value ? std::optional(value->count) : std::nullopt;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    const Value* value = find_array(key, "an array of string");
    if (value == nullptr)
        return std::nullopt;
    if (value->element_type != GgufValueType::String)
        wrong_type(key, *value, "an array of string");
    std::vector<std::string> strings;
    strings.reserve(value->count); // validated: at least 8 file bytes per element
    const std::byte* at = value->payload;
    for (std::uint64_t i = 0; i < value->count; ++i, at = next_element(GgufValueType::String, at))
        strings.emplace_back(load_string(at));
    return strings;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
    const Value* value = find_array(key, "an array of f32");
    if (value == nullptr)
        return std::nullopt;
    if (value->element_type != GgufValueType::F32 && value->element_type != GgufValueType::F64)
        wrong_type(key, *value, "an array of f32");
    std::vector<float> numbers;
    numbers.reserve(value->count);
    const std::byte* at = value->payload;
    for (std::uint64_t i = 0; i < value->count; ++i, at = next_element(value->element_type, at))
        numbers.push_back(static_cast<float>(*load_float(value->element_type, at)));
    return numbers;
}

std::optional<std::vector<std::int32_t>> GgufFile::get_int_array(std::string_view key) const {
    const Value* value = find_array(key, "an array of i32");
    if (value == nullptr)
        return std::nullopt;
    if (!is_integer(value->element_type))
        wrong_type(key, *value, "an array of i32");
    std::vector<std::int32_t> numbers;
    numbers.reserve(value->count);
    const std::byte* at = value->payload;
    for (std::uint64_t i = 0; i < value->count; ++i, at = next_element(value->element_type, at)) {
        const Integer integer = *load_integer(value->element_type, at);
        const std::uint64_t limit = integer.negative ? 1ull << 31 : (1ull << 31) - 1;
        if (integer.magnitude > limit)
            throw Error(path_ + ": metadata " + quoted(key) + " element " + grouped(i) + " is " +
                        (integer.negative ? "-" : "") + grouped(integer.magnitude) +
                        ", outside the i32 range");
        numbers.push_back(integer.negative ? static_cast<std::int32_t>(0 - integer.magnitude)
                                           : static_cast<std::int32_t>(integer.magnitude));
    }
    return numbers;
}

std::optional<std::vector<bool>> GgufFile::get_bool_array(std::string_view key) const {
    const Value* value = find_array(key, "an array of bool");
    if (value == nullptr)
        return std::nullopt;
    if (value->element_type != GgufValueType::Bool)
        wrong_type(key, *value, "an array of bool");
    std::vector<bool> flags;
    flags.reserve(value->count);
    const std::byte* at = value->payload;
    for (std::uint64_t i = 0; i < value->count; ++i, at = next_element(value->element_type, at))
        flags.push_back(*at != std::byte{0});
    return flags;
}

std::string GgufFile::describe_value(std::string_view key) const {
    constexpr std::uint64_t kShown = 4;
    const Value* value = find_value(key);
    if (value == nullptr)
        throw Error(path_ + ": no metadata " + quoted(key));
    if (value->type != GgufValueType::Array)
        return scalar_text(value->type, value->payload);
    std::string text = "[" + grouped(value->count) + " x " +
                       std::string(to_string(value->element_type)) + "]";
    const std::byte* at = value->payload;
    for (std::uint64_t i = 0; i < value->count && i < kShown;
         ++i, at = next_element(value->element_type, at))
        text += (i == 0 ? " " : ", ") + scalar_text(value->element_type, at);
    return value->count > kShown ? text + ", ..." : text;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

} // namespace kvscope
