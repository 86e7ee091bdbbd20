// tests/fuzz: what the libFuzzer targets share. No Qt: a fuzzer is a plain
// program around LLVMFuzzerTestOneInput.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvscope::fuzz {

// An invariant the code promises: when it breaks, say which and abort, so
// that libFuzzer saves the input as a crash.
inline void require(bool holds, const char* promise) {
    if (holds)
        return;
    std::fprintf(stderr, "fuzz: broken promise: %s\n", promise);
    std::abort();
}

// The shared models folder, found as the Qt tests find it
// (tests/support/test_models.h): $KVSCOPE_TEST_MODELS, else the folder
// CMake recorded.
inline std::string models_dir() {
    const char* env = std::getenv("KVSCOPE_TEST_MODELS");
    return env != nullptr && *env != '\0' ? env : KVSCOPE_DEFAULT_TEST_MODELS;
}

// The exit code ctest reads as skipped (SKIP_RETURN_CODE in CMakeLists.txt).
inline constexpr int kSkipped = 77;

} // namespace kvscope::fuzz
