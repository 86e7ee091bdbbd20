#include "net/hub/gguf_choice.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "net/hub/hub_error.h"

namespace kvscope::hub {
namespace {

std::string upper(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

bool all_digits(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "-00001-of-00003" at the end of `stem`: strips it and sets the part numbers.
void take_split_suffix(std::string& stem, GgufName& name) {
    constexpr std::size_t kSuffix = 15; // "-NNNNN-of-NNNNN"
    if (stem.size() <= kSuffix)
        return;
    const std::string_view tail = std::string_view(stem).substr(stem.size() - kSuffix);
    if (tail[0] != '-' || upper(tail.substr(6, 4)) != "-OF-" || !all_digits(tail.substr(1, 5)) ||
        !all_digits(tail.substr(10, 5)))
        return;
    name.part = std::atoi(std::string(tail.substr(1, 5)).c_str());
    name.parts = std::atoi(std::string(tail.substr(10, 5)).c_str());
    stem.resize(stem.size() - kSuffix);
}

// The last '-' or '.' separated word of the file name, when it is made of
// letters, digits and '_' and holds a digit (so "model" alone is no quant).
std::string quant_word(std::string_view stem) {
    const std::size_t slash = stem.rfind('/');
    const std::string_view file = slash == std::string_view::npos ? stem : stem.substr(slash + 1);
    const std::size_t sep = file.find_last_of("-.");
    if (sep == std::string_view::npos)
        return {};
    const std::string_view word = file.substr(sep + 1);
    const bool word_chars = std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
    });
    const bool has_digit = word.find_first_of("0123456789") != std::string_view::npos;
    return word_chars && has_digit ? upper(word) : std::string();
}

std::string quant_list(const std::vector<RepoFile>& files) {
    std::string list;
    for (const std::string& q : available_quants(files))
        list += (list.empty() ? "" : ", ") + q;
    return list.empty() ? "(none named in the file names)" : list;
}

// The first part (or the whole file) of every model GGUF, in listing order.
std::vector<const RepoFile*> model_heads(const std::vector<RepoFile>& files) {
    std::vector<const RepoFile*> heads;
    for (const RepoFile& f : files)
        if (const auto name = parse_gguf_name(f.path); name && name->part == 1 && is_model_gguf(f.path))
            heads.push_back(&f);
    return heads;
}

const RepoFile* default_choice(const std::vector<const RepoFile*>& heads) {
    const RepoFile* best = nullptr;
    int best_distance = 0;
    int best_bits = 0;
    for (const RepoFile* f : heads) {
        const std::string quant = parse_gguf_name(f->path)->quant;
        if (quant == kDefaultQuant)
            return f;
        const int bits = quant_bits(quant);
        if (bits == 0)
            continue;
        const int distance = std::abs(bits - quant_bits(kDefaultQuant));
        if (!best || distance < best_distance || (distance == best_distance && bits > best_bits)) {
            best = f;
            best_distance = distance;
            best_bits = bits;
        }
    }
    return best ? best : heads.front();
}

std::vector<RepoFile> with_its_parts(const std::vector<RepoFile>& files, const RepoFile& head, std::string_view repo) {
    const GgufName name = *parse_gguf_name(head.path);
    if (name.parts == 1)
        return {head};
    std::vector<RepoFile> parts(static_cast<std::size_t>(name.parts));
    for (const RepoFile& f : files)
        if (const auto n = parse_gguf_name(f.path); n && n->stem == name.stem && n->parts == name.parts)
            parts[static_cast<std::size_t>(n->part - 1)] = f;
    for (std::size_t i = 0; i < parts.size(); ++i)
        if (parts[i].path.empty())
            throw HubError(HubErrorKind::NoSuchQuant, std::string(repo) + ": " + head.path + " is part 1 of " +
                                                          std::to_string(name.parts) + " but part " +
                                                          std::to_string(i + 1) + " is not in the repository");
    return parts;
}

} // namespace

std::optional<GgufName> parse_gguf_name(std::string_view path) {
    if (path.size() < 5 || upper(path.substr(path.size() - 5)) != ".GGUF")
        return std::nullopt;
    GgufName name;
    name.stem = std::string(path.substr(0, path.size() - 5));
    take_split_suffix(name.stem, name);
    name.quant = quant_word(name.stem);
    return name;
}

int quant_bits(std::string_view quant) {
    const std::size_t first = quant.find_first_of("0123456789");
    if (first == std::string_view::npos)
        return 0;
    return std::atoi(std::string(quant.substr(first)).c_str());
}

bool is_model_gguf(std::string_view path) {
    if (!parse_gguf_name(path))
        return false;
    const std::size_t slash = path.rfind('/');
    const std::string file = upper(slash == std::string_view::npos ? path : path.substr(slash + 1));
    for (std::string_view sidecar : {"MMPROJ", "IMATRIX", "MTP-", "EAGLE3-", "DFLASH-", "DSPARK-"})
        if (file.find(sidecar) != std::string::npos)
            return false;
    return true;
}

std::vector<std::string> available_quants(const std::vector<RepoFile>& files) {
    std::set<std::string> quants;
    for (const RepoFile* f : model_heads(files))
        if (std::string q = parse_gguf_name(f->path)->quant; !q.empty())
            quants.insert(std::move(q));
    return {quants.begin(), quants.end()};
}

std::vector<RepoFile> choose_gguf(const std::vector<RepoFile>& files, std::string_view quant, std::string_view repo) {
    const std::vector<const RepoFile*> heads = model_heads(files);
    if (heads.empty())
        throw HubError(HubErrorKind::NoGguf, std::string(repo) +
                                                 " holds no GGUF model file; kvscope runs GGUF files (look for a "
                                                 "repository named ...-GGUF)");
    if (quant.empty())
        return with_its_parts(files, *default_choice(heads), repo);
    const std::string wanted = upper(quant);
    for (const RepoFile* f : heads)
        if (parse_gguf_name(f->path)->quant == wanted)
            return with_its_parts(files, *f, repo);
    throw HubError(HubErrorKind::NoSuchQuant, std::string(repo) + " has no " + wanted +
                                                  " GGUF; the quantizations there are: " + quant_list(files));
}

} // namespace kvscope::hub
