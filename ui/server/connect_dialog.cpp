#include "ui/server/connect_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "net/attach/connect_options.h"
#include "net/attach/kv_cache_types.h"
#include "ui/server/server_colours.h"
#include "engine/core/error.h"

namespace kvscope::ui {

QStringList llamaCppKvDtypes() {
    QStringList names;
    for (std::string_view name : attach::llama_cache_types())
        names << QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
    return names;
}

QStringList serverKindNames() {
    QStringList names;
    for (std::string_view name : attach::connect_kind_names())
        names << QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
    return names;
}

attach::ConnectOptions connectOptions(const ConnectText& text) {
    return attach::parse_connect_options({text.url.toStdString(), text.apiKey.toStdString(), text.kind.toStdString(),
                                          text.kvEvents.toStdString(), text.kvReplay.toStdString(),
                                          text.kvTopic.toStdString(), text.kvDtype.toStdString(),
                                          text.kvUnified.toStdString()});
}

ConnectDialog::ConnectDialog(QWidget* parent)
    : QDialog(parent), url_(new QLineEdit), apiKey_(new QLineEdit), kind_(new QComboBox), kvEvents_(new QLineEdit),
      kvReplay_(new QLineEdit), kvTopic_(new QLineEdit), kvDtype_(new QComboBox),
      kvUnified_(new QComboBox), error_(new QLabel) {
    setWindowTitle(tr("Connect to Server"));
    setObjectName(QStringLiteral("connectDialog"));
    url_->setObjectName(QStringLiteral("connectUrl"));
    url_->setPlaceholderText(QStringLiteral("http://127.0.0.1:8080"));
    apiKey_->setObjectName(QStringLiteral("connectApiKey"));
    apiKey_->setEchoMode(QLineEdit::Password);
    apiKey_->setPlaceholderText(tr("none"));
    kind_->setObjectName(QStringLiteral("connectKind"));
    const QStringList kindLabels{tr("Detect from the server"), QStringLiteral("kvscope (kvscope-cli serve)"),
                                 QStringLiteral("llama.cpp (llama-server)"), QStringLiteral("vLLM")};
    const QStringList kinds = serverKindNames();
    for (qsizetype i = 0; i < kinds.size(); ++i)
        kind_->addItem(kindLabels.value(i, kinds[i]), kinds[i]);
    kvEvents_->setObjectName(QStringLiteral("connectKvEvents"));
    kvEvents_->setPlaceholderText(QStringLiteral("tcp://HOST:5557,tcp://HOST:5558"));
    kvEvents_->setToolTip(tr("vLLM's KV-events publishers (--kv-events-config), one per data-parallel rank, "
                             "rank 0 first: they give the prefix-cache map."));
    kvReplay_->setObjectName(QStringLiteral("connectKvReplay"));
    kvReplay_->setPlaceholderText(tr("optional, same order"));
    kvReplay_->setToolTip(tr("The publishers' replay endpoints, asked for event batches missed in a gap."));
    kvTopic_->setObjectName(QStringLiteral("connectKvTopic"));
    kvTopic_->setPlaceholderText(tr("every topic"));
    kvTopic_->setToolTip(tr("The topic in vLLM's --kv-events-config, when it sets one."));
    kvDtype_->setObjectName(QStringLiteral("connectKvDtype"));
    kvDtype_->addItems(llamaCppKvDtypes());
    kvDtype_->setToolTip(tr("llama.cpp does not report its KV cache type: give its -ctk so that bytes are right."));
    kvUnified_->setObjectName(QStringLiteral("connectKvUnified"));
    kvUnified_->addItem(tr("Guess (shared with 4 slots, -np auto)"), QStringLiteral("auto"));
    kvUnified_->addItem(tr("Shared (-kvu)"), QStringLiteral("yes"));
    kvUnified_->addItem(tr("One per slot"), QStringLiteral("no"));
    kvUnified_->setToolTip(tr("llama.cpp does not report whether its slots share one KV buffer: it decides "
                              "the KV capacity."));
    error_->setObjectName(QStringLiteral("connectError"));
    error_->setWordWrap(true);
    QPalette red = error_->palette(); // the theme's own, with red text in its shade
    red.setColor(QPalette::WindowText, errorTextColour(red));
    error_->setPalette(red);
    error_->hide();

    auto* form = new QFormLayout;
    form->addRow(tr("Server &URL:"), url_);
    form->addRow(tr("&API key:"), apiKey_);
    form->addRow(tr("Server &kind:"), kind_);
    form->addRow(tr("KV &events (vLLM):"), kvEvents_);
    form->addRow(tr("KV &replay (vLLM):"), kvReplay_);
    form->addRow(tr("KV &topic (vLLM):"), kvTopic_);
    form->addRow(tr("KV &dtype (llama.cpp):"), kvDtype_);
    form->addRow(tr("KV &shared by slots (llama.cpp):"), kvUnified_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Connect"));
    connect(buttons, &QDialogButtonBox::accepted, this, &ConnectDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ConnectDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(error_);
    layout->addWidget(buttons);
    resize(520, sizeHint().height());
}

void ConnectDialog::setText(const ConnectText& text) {
    url_->setText(text.url);
    apiKey_->setText(text.apiKey);
    kind_->setCurrentIndex(std::max(0, kind_->findData(text.kind.isEmpty() ? serverKindNames().front() : text.kind)));
    kvEvents_->setText(text.kvEvents);
    kvReplay_->setText(text.kvReplay);
    kvTopic_->setText(text.kvTopic);
    kvDtype_->setCurrentIndex(std::max(0, kvDtype_->findText(text.kvDtype)));
    kvUnified_->setCurrentIndex(std::max(0, kvUnified_->findData(text.kvUnified)));
}

ConnectText ConnectDialog::text() const {
    return {url_->text(),      apiKey_->text(),   kind_->currentData().toString(), kvEvents_->text(),
            kvReplay_->text(), kvTopic_->text(), kvDtype_->currentText(), kvUnified_->currentData().toString()};
}

QString ConnectDialog::errorText() const { return error_->isHidden() ? QString() : error_->text(); }

void ConnectDialog::accept() {
    try {
        options_ = connectOptions(text());
    } catch (const Error& e) {
        error_->setText(QString::fromUtf8(e.what()));
        error_->show();
        return;
    }
    error_->hide();
    QDialog::accept();
}

} // namespace kvscope::ui
