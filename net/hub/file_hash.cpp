#include "net/hub/file_hash.h"

#include <array>
#include <fstream>
#include <memory>
#include <vector>

#include <openssl/evp.h>

#include "engine/core/error.h"

namespace kvscope::hub {
namespace {

using Context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string hex(const unsigned char* bytes, unsigned size) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < size; ++i) {
        out += kDigits[bytes[i] >> 4];
        out += kDigits[bytes[i] & 15];
    }
    return out;
}

std::string digest(const std::filesystem::path& file, const EVP_MD* algorithm, const std::string& prefix) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw Error("cannot read " + file.string() + " to check its hash");
    Context context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!context || EVP_DigestInit_ex(context.get(), algorithm, nullptr) != 1 ||
        EVP_DigestUpdate(context.get(), prefix.data(), prefix.size()) != 1)
        throw Error("OpenSSL could not start a hash");
    std::vector<char> buffer(1 << 20);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
        EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
    if (in.bad())
        throw Error("reading " + file.string() + " failed while checking its hash");
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned size = 0;
    EVP_DigestFinal_ex(context.get(), out.data(), &size);
    return hex(out.data(), size);
}

} // namespace

std::string file_sha256(const std::filesystem::path& file) { return digest(file, EVP_sha256(), {}); }

std::string file_git_blob_sha1(const std::filesystem::path& file) {
    std::string prefix = "blob " + std::to_string(std::filesystem::file_size(file));
    prefix += '\0';
    return digest(file, EVP_sha1(), prefix);
}

} // namespace kvscope::hub
