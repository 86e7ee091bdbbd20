// The one way kvscope writes a byte count for a person: binary units,
// "512 bytes", "1.5 KiB", "20.0 MiB", "2.00 GiB", "1.25 TiB" (a tenth of a
// KiB or MiB, a hundredth of a GiB or TiB). The app, the CLI and the
// server view all use it, so one size reads the same everywhere.
#pragma once

#include <string>

namespace kvscope {

std::string bytes_text(double bytes);

} // namespace kvscope
