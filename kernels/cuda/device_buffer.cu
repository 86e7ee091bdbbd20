#include "kernels/cuda/device_buffer.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.cuh"

namespace kvscope::kernels::cuda {
namespace {

void check_range(std::size_t offset, std::size_t bytes, std::size_t size) {
    if (offset > size || bytes > size - offset)
        throw std::invalid_argument("DeviceBuffer: bytes [" + std::to_string(offset) + ", " +
                                    std::to_string(offset + bytes) + ") outside a buffer of " +
                                    std::to_string(size));
}

} // namespace

void synchronize() { KVSCOPE_CUDA_CHECK(cudaDeviceSynchronize()); }

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0)
        KVSCOPE_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
    if (data_ != nullptr)
        cudaFree(data_); // a destructor cannot throw; a failure here means the context is already lost
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
    check_range(offset, bytes, bytes_);
    if (bytes > 0)
        KVSCOPE_CUDA_CHECK(cudaMemcpy(static_cast<char*>(data_) + offset, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
    check_range(offset, bytes, bytes_);
    if (bytes > 0)
        KVSCOPE_CUDA_CHECK(cudaMemcpy(host, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::fill_bytes(unsigned char value) {
    if (bytes_ > 0)
        KVSCOPE_CUDA_CHECK(cudaMemset(data_, value, bytes_));
}

} // namespace kvscope::kernels::cuda
