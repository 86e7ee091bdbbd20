#include "engine/core/backend.h"

#include "engine/core/error.h"

namespace kvscope {

std::string_view to_string(Backend backend) {
    switch (backend) {
    case Backend::Auto: return "auto";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    }
    return "?";
}

Backend parse_backend(std::string_view word) {
    for (const Backend b : {Backend::Auto, Backend::Cpu, Backend::Cuda})
        if (word == to_string(b))
            return b;
    throw Error("unknown backend '" + std::string(word) + "' (expected auto, cpu or cuda)");
}

Backend resolve_backend(Backend requested, const ComputeDevice& device) {
    switch (requested) {
    case Backend::Cpu: return Backend::Cpu;
    case Backend::Auto: return device.cuda ? Backend::Cuda : Backend::Cpu;
    case Backend::Cuda:
        if (!device.cuda)
            throw Error("backend cuda: " + (device.note.empty() ? std::string("no CUDA device") : device.note));
        return Backend::Cuda;
    }
    throw Error("unknown backend");
}

} // namespace kvscope
