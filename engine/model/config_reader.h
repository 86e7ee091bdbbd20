// engine/model: reading a model's metadata and checking its tensors, with
// errors that name the file. Shared by model_config.cpp (what every
// architecture has) and model_families.cpp (what each one adds); not part of
// the folder's interface.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/ggml_type.h"
#include "engine/model/gguf_file.h"
#include "engine/model/message_format.h"

namespace kvscope::detail {

inline std::string shape_text(const std::vector<std::uint64_t>& dims) {
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i)
        text += (i ? ", " : "") + grouped(dims[i]);
    return text + "]";
}

// Reads metadata under the architecture's prefix ("llama.block_count") and
// checks tensors, with errors that name the file.
class ConfigReader {
public:
    // Reads keys under `architecture` + ".".
    ConfigReader(const GgufFile& file, std::string architecture)
        : file_(file), arch_(std::move(architecture)), prefix_(arch_ + ".") {}

    [[noreturn]] void fail(const std::string& problem) const {
        throw Error(file_.path() + ": " + problem);
    }

    // "qwen3.attention.key_length" for "attention.key_length".
    std::string full_key(std::string_view key) const { return prefix_ + std::string(key); }

    bool has(std::string_view key) const { return file_.has(full_key(key)); }

    std::optional<std::uint64_t> uint(std::string_view key) const {
        return file_.get_uint(prefix_ + std::string(key));
    }

    // A size or count: present, positive and small enough for 32 bits.
    std::uint32_t dimension(std::string_view key) const {
        const auto value = uint(key);
        if (!value)
            fail("missing " + described(key));
        return in_range(described(key), *value);
    }

    std::string described(std::string_view key) const {
        return "metadata " + quoted(prefix_ + std::string(key));
    }

    std::uint32_t in_range(const std::string& what, std::uint64_t value) const {
        if (value == 0 || value > std::numeric_limits<std::int32_t>::max())
            fail(what + " is " + grouped(value) + ", expected 1 to " +
                 grouped(std::numeric_limits<std::int32_t>::max()));
        return static_cast<std::uint32_t>(value);
    }

    std::optional<std::uint32_t> optional_dimension(std::string_view key) const {
        const auto value = uint(key);
        return value ? std::optional(in_range(described(key), *value)) : std::nullopt;
    }

    // A float that must be positive and finite, with an optional default.
    double positive(std::string_view key, std::optional<double> fallback) const {
        const std::string full = prefix_ + std::string(key);
        const auto value = file_.get_float(full);
        if (!value && !fallback)
            fail("missing metadata " + quoted(full));
        const double result = value.value_or(fallback.value_or(0.0));
        if (!(result > 0.0) || !std::isfinite(result))
            fail("metadata " + quoted(full) + " is " + decimal(result) +
                 ", expected a positive number");
        return result;
    }

    std::optional<std::string> string(std::string_view key) const {
        return file_.get_string(prefix_ + std::string(key));
    }

    // The tensor, checked for shape and type; nullptr when optional and
    // absent.
    const GgufTensorInfo* tensor(const std::string& name, const std::vector<std::uint64_t>& dims,
                                 bool required = true) const {
        const GgufTensorInfo* t = file_.find_tensor(name);
        if (t == nullptr) {
            if (required)
                fail("missing tensor " + quoted(name) + ", which a " + arch_ + " model needs");
            return nullptr;
        }
        if (t->dims != dims)
            fail("tensor " + quoted(name) + " has shape " + shape_text(t->dims) + ", expected " +
                 shape_text(dims) + " from the metadata");
        // Norms and biases are F32 in every converter's output (experts'
        // biases are 2-D: one row per expert).
        if ((dims.size() == 1 || name.ends_with(".bias")) && t->type != GgmlType::F32)
            fail("tensor " + quoted(name) + " has type " + std::string(to_string(t->type)) +
                 ", expected F32 for a norm or bias");
        if (!is_dequantizable(t->type))
            fail("tensor " + quoted(name) + " has type " + std::string(to_string(t->type)) +
                 ", which kvscope cannot compute with (supported: " + dequantizable_type_names() + ")");
        return t;
    }

    const GgufFile& file() const { return file_; }

private:
    const GgufFile& file_;
    std::string arch_;
    std::string prefix_; // "llama."
};

} // namespace kvscope::detail
