// tests/support: sending on a raw socket whose peer may have closed, without
// the process being killed by SIGPIPE. Linux has send's MSG_NOSIGNAL;
// macOS and the BSDs have the socket option SO_NOSIGPIPE instead (macOS has
// no MSG_NOSIGNAL). The tests' raw clients send through this.
#pragma once

#include <cstddef>

#include <sys/socket.h>
#include <sys/types.h>

namespace kvscope::test {

// send(2) that reports a closed peer as -1 (EPIPE) instead of raising SIGPIPE.
inline ssize_t send_no_sigpipe(int fd, const void* bytes, std::size_t size) {
#if defined(MSG_NOSIGNAL)
    return ::send(fd, bytes, size, MSG_NOSIGNAL);
#else
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
    return ::send(fd, bytes, size, 0);
#endif
}

} // namespace kvscope::test
