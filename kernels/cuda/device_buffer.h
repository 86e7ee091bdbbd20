// Device memory owned like a std::vector's, for the engine and the tests:
// one cudaMalloc, freed in the destructor. Plain C++17 interface (nvcc
// compiles it too).
#pragma once

#include <cstddef>
#include <vector>

namespace kvscope::kernels::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes); // throws CudaError when the device is out of memory
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* data() const { return data_; }
    std::size_t size() const { return bytes_; }
    template <typename T>
    T* as() const { return static_cast<T*>(data_); }

    // Synchronous copies of `bytes` at byte `offset`; throw
    // std::invalid_argument past the end, CudaError when the copy fails.
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
    void fill_bytes(unsigned char value);

private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

// A buffer holding a copy of `values`.
template <typename T>
DeviceBuffer upload_vector(const std::vector<T>& values) {
    DeviceBuffer buffer(values.size() * sizeof(T));
    buffer.upload(values.data(), values.size() * sizeof(T));
    return buffer;
}

template <typename T>
std::vector<T> download_vector(const DeviceBuffer& buffer, std::size_t count) {
    std::vector<T> values(count);
    buffer.download(values.data(), count * sizeof(T));
    return values;
}

} // namespace kvscope::kernels::cuda
