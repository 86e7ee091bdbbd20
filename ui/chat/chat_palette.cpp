#include "ui/chat/chat_palette.h"

#include <cmath>

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

SequencePalette chatPalette(const EngineSnapshot& snapshot, const RequestChats& chats) {
    std::unordered_map<SeqId, RequestId> requestOf;
    for (const SeqSnapshot& s : snapshot.seqs)
        requestOf.emplace(s.seq, s.request);
    for (const EndedSeq& e : snapshot.ended_seqs) // their blocks wait in the prefix cache
        requestOf.emplace(e.seq, e.request);
    // Copies: the palette outlives this call (it stays with the block map).
    const auto chatOf = [chats, requestOf](SeqId seq) -> std::pair<RequestId, int> {
        const auto r = requestOf.find(seq);
        const RequestId request = r == requestOf.end() ? 0 : r->second;
        const auto c = chats.find(request);
        return {request, c == chats.end() ? 0 : c->second};
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
