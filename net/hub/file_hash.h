// net/hub: the hashes the hub names files by, computed over a file on disk
// (OpenSSL's libcrypto, which libcurl and cpp-httplib already bring).
#pragma once

#include <filesystem>
#include <string>

namespace kvscope::hub {

// Lower-case hex SHA-256 of the file's bytes: an LFS file's oid.
std::string file_sha256(const std::filesystem::path& file);
// Lower-case hex SHA-1 of "blob SIZE\0" + the bytes: git's oid of a file
// kept in git itself rather than LFS.
std::string file_git_blob_sha1(const std::filesystem::path& file);

} // namespace kvscope::hub
