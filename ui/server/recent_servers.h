#pragma once

#include <vector>

#include <QString>

#include "ui/server/connect_dialog.h"

namespace kvscope::ui {

// The servers connected to lately, newest first, kept in QSettings like
// RecentFiles: each as the dialog's fields, less the API key (a secret is
// not written to a settings file in clear; it is asked for again).
class RecentServers {
public:
    static constexpr int kMaximum = 8;

    static std::vector<ConnectText> list();
    // Puts `text` first; an entry for the same URL goes.
    static void add(const ConnectText& text);
    // "http://host:8080 (vllm, 2 KV-event endpoints)": a menu entry.
    static QString label(const ConnectText& text);
};

} // namespace kvscope::ui
