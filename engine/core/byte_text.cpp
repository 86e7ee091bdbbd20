#include "engine/core/byte_text.h"

#include <array>
#include <cstdio>

namespace kvscope {

std::string bytes_text(double bytes) {
    struct Unit {
        const char* name;
        double size;
        const char* format;
    };
    static constexpr std::array<Unit, 4> kUnits{{
        {"TiB", 1024.0 * 1024 * 1024 * 1024, "%.2f %s"},
        {"GiB", 1024.0 * 1024 * 1024, "%.2f %s"},
        {"MiB", 1024.0 * 1024, "%.1f %s"},
        {"KiB", 1024.0, "%.1f %s"},
    }};
    char text[48];
    for (const Unit& u : kUnits)
        if (bytes >= u.size) {
            std::snprintf(text, sizeof text, u.format, bytes / u.size, u.name);
            return text;
        }
    std::snprintf(text, sizeof text, "%.0f bytes", bytes);
    return text;
}

} // namespace kvscope
