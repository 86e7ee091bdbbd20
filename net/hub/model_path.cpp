#include "net/hub/model_path.h"

#include <unistd.h>

namespace kvscope::hub {

std::string resolve_model_path(const std::string& text, const PullProgress& progress) {
    const auto ref = hub_reference_of_path(text);
    if (!ref)
        return text;
    return resolve_model(*ref, hub_settings_from_environment(), progress).first().string();
}

PullProgress terminal_progress(std::FILE* out) {
    if (!isatty(fileno(out)))
        return {};
    return [out](const FileProgress& p) {
        // "\033[K" clears what a longer previous line left.
        std::fprintf(out, "\r%s\033[K", format_progress(p).c_str());
        if (p.transfer.total > 0 && p.transfer.done >= p.transfer.total)
            std::fputc('\n', out);
        std::fflush(out);
        return true;
    };
}

} // namespace kvscope::hub
