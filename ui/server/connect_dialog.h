#pragma once

#include <string>
#include <vector>

#include <QDialog>
#include <QString>
#include <QStringList>

#include "net/attach/remote_monitor.h"

class QComboBox;
class QLabel;
class QLineEdit;

namespace kvscope::ui {

// What a person types to attach to a server, in the dialog or on the
// command line (`kvscope --connect URL --kv-events ... --server-kind ...`).
struct ConnectText {
    QString url{};
    QString apiKey{};
    QString kind{};     // "auto" (or empty), "kvscope", "llama.cpp", "vllm"
    QString kvEvents{}; // comma-separated tcp://HOST:PORT, one per vLLM rank
    QString kvReplay{}; // comma-separated, in the same order
    QString kvTopic{};  // the publishers' topic; empty: every topic
    QString kvDtype{};  // llama.cpp's -ctk; empty: f16
    QString kvUnified{}; // llama.cpp's slots share one KV buffer (-kvu): "yes", "no", "auto" or empty: guess
};

// The options the text asks for, as attach::parse_connect_options reads
// them (the one parser, shared with kvscope-cli top). Throws
// kvscope::Error, with a message that says what to fix.
attach::ConnectOptions connectOptions(const ConnectText& text);

// The KV cache types llama.cpp's server takes (-ctk/-ctv), f16 first (its
// default), for the dialog to offer (attach::is_llama_cache_type judges).
QStringList llamaCppKvDtypes();
// The server kinds the dialog and --server-kind offer: "auto" first.
QStringList serverKindNames();

// File > Connect to Server...: the URL, an API key, the kind of server
// (detected unless chosen), vLLM's KV-events and replay endpoints and
// llama.cpp's KV cache type. OK is refused, with the reason shown in the
// dialog, while the fields cannot work.
class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    explicit ConnectDialog(QWidget* parent = nullptr);

    void setText(const ConnectText& text);
    ConnectText text() const;
    // The options of the last accepted text.
    const attach::ConnectOptions& options() const { return options_; }
    // Why OK was refused last ("" when it was not).
    QString errorText() const;

    void accept() override;

private:
    QLineEdit* url_;
    QLineEdit* apiKey_;
    QComboBox* kind_;
    QLineEdit* kvEvents_;
    QLineEdit* kvReplay_;
    QLineEdit* kvTopic_;
    QComboBox* kvDtype_;
    QComboBox* kvUnified_;
    QLabel* error_;
    attach::ConnectOptions options_;
};

} // namespace kvscope::ui
