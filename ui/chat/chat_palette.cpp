#include "ui/chat/chat_palette.h"

#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>

#include <QColor>
#include <QObject>

#include "ui/chat/chat_tabs.h"

namespace kvscope::ui {
namespace {

// Workload requests have no tab: muted colours, a golden angle apart, so
// they read as "background load" beside the chats' strong colours.
QRgb workloadColor(RequestId request) {
    const double hue = std::fmod(static_cast<double>(request) * 137.508, 360.0) / 360.0;
    return QColor::fromHsvF(static_cast<float>(hue), 0.30f, 0.72f).rgb();
}

} // namespace

int chatOf(std::uint64_t client_tag) {
    return client_tag <= static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ? static_cast<int>(client_tag) : 0;
}

SequencePalette chatPalette(const EngineSnapshot& snapshot) {
    // Request and chat of each sequence, shared by the palette's three
    // functions and every copy of it: a server's snapshot lists thousands of
    // ended sequences, and the palette is copied to each map that paints.
    auto owners = std::make_shared<std::unordered_map<SeqId, std::pair<RequestId, int>>>();
    owners->reserve(snapshot.seqs.size() + snapshot.ended_seqs.size());
    for (const SeqSnapshot& s : snapshot.seqs)
        owners->emplace(s.seq, std::pair(s.request, ui::chatOf(s.client_tag)));
    for (const EndedSeq& e : snapshot.ended_seqs) // their blocks wait in the prefix cache
        owners->emplace(e.seq, std::pair(e.request, ui::chatOf(e.client_tag)));
    const auto chatOf = [owners = std::shared_ptr<const decltype(owners)::element_type>(std::move(owners))](
                            SeqId seq) -> std::pair<RequestId, int> {
        const auto o = owners->find(seq);
        return o == owners->end() ? std::pair<RequestId, int>(0, 0) : o->second;
    };
    auto namer = [chatOf](SeqId seq) {
        const auto [request, chat] = chatOf(seq);
        return chat ? QObject::tr("Chat %1 (request %2)").arg(chat).arg(request)
                    : QObject::tr("workload request %1 (seq %2)").arg(request).arg(seq);
    };
    auto colorer = [chatOf](SeqId seq) {
        const auto [request, chat] = chatOf(seq);
        return chat ? ChatTabs::colorOf(chat).rgb() : workloadColor(request);
    };
    auto cacheNamer = [chatOf](SeqId seq) {
        const int chat = chatOf(seq).second;
        return chat ? QObject::tr("Chat %1").arg(chat) : QString();
    };
    return SequencePalette(std::move(namer), std::move(colorer), std::move(cacheNamer));
}

} // namespace kvscope::ui
