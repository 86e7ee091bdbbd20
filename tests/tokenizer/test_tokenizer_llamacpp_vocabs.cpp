// The tokenizer against llama.cpp's own tokenizer test data: its
// models/ggml-vocab-NAME.gguf vocabularies with NAME.gguf.inp (texts) and
// NAME.gguf.out (the ids of the original Hugging Face tokenizer, made by
// llama.cpp's convert_hf_to_gguf_update.py), read in place from the
// llama.cpp source that ../shared/peers/llamacpp/build.sh unpacks
// (KVSCOPE_LLAMACPP_SRC, default /tmp/refmodels/llama.cpp-src). Skipped
// when that is absent: the files are 1-16 MB each, too large to keep here.
#include <QtTest>

#include <QDir>
#include <QFile>

#include <string>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tokenizer_test_support.h"

using namespace kvscope;

namespace {

QString llamacpp_models_dir() {
    const QByteArray env = qgetenv("KVSCOPE_LLAMACPP_SRC");
    const QString src =
        env.isEmpty() ? QStringLiteral("/tmp/refmodels/llama.cpp-src")
                      : QString::fromLocal8Bit(env);
    return QDir(src).filePath("models");
}

QByteArray read_all(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    return file.readAll();
}

// NAME.gguf.inp: texts, each followed by "\n__ggml_vocab_test__\n" (as
// llama.cpp's test-tokenizer-0 reads it).
std::vector<std::string> read_texts(const QString& path) {
    const std::string raw = read_all(path).toStdString();
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (std::size_t pos = 0; pos < raw.size();) {
        const std::size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(raw.substr(pos));
            break;
        }
        texts.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    return texts;
}

// NAME.gguf.out: one line of space-separated ids per text.
std::vector<Ids> read_ids(const QString& path) {
    std::vector<Ids> rows;
    for (const QByteArray& line : read_all(path).split('\n')) {
        Ids ids;
        for (const QByteArray& id : line.split(' '))
            if (!id.isEmpty()) ids.push_back(id.toInt());
        rows.push_back(ids);
    }
    if (!rows.empty() && rows.back().empty()) rows.pop_back(); // the file's last newline
    return rows;
}

} // namespace

class TestTokenizerLlamacppVocabs : public QObject {
    Q_OBJECT
private slots:
    void reference_encodings_data();
    void reference_encodings();
};

void TestTokenizerLlamacppVocabs::reference_encodings_data() {
    QTest::addColumn<QString>("name");
    // Every vocabulary of those files whose tokenizer kvscope has (the others
    // are BERT, Gemma 4's "gemma4" BPE, or pre-tokenizers of no family here).
    for (const char* name : {"llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2", "qwen35",
                             "falcon", "mpt", "starcoder", "refact", "command-r"})
        QTest::newRow(name) << QString(name);
}

void TestTokenizerLlamacppVocabs::reference_encodings() {
    QFETCH(QString, name);
    const QString base = QDir(llamacpp_models_dir()).filePath("ggml-vocab-" + name + ".gguf");
    if (!QFile::exists(base) || !QFile::exists(base + ".inp"))
        QSKIP(qPrintable(base + " is absent (build ../shared/peers/llamacpp first)"));
    const Tokenizer tok(read_vocabulary(GgufFile(base.toStdString())));
    if (tok.vocabulary().model == "gpt2")
        QVERIFY(choose_pre_tokenizer(tok.vocabulary().pre).known);
    const std::vector<std::string> texts = read_texts(base + ".inp");
    const std::vector<Ids> expected = read_ids(base + ".out");
    QCOMPARE(texts.size(), expected.size());
    QVERIFY(texts.size() >= 40);
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const Ids ids = tok.encode(texts[i], {.add_special = false});
        if (ids != expected[i]) qWarning("text %zu: '%s'", i, texts[i].c_str());
        QCOMPARE(ids, expected[i]);
    }
}

QTEST_GUILESS_MAIN(TestTokenizerLlamacppVocabs)
#include "test_tokenizer_llamacpp_vocabs.moc"
