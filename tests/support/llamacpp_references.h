// tests/support: the llama.cpp references of tests/data/llamacpp
// (make_references.sh writes them; tests/data/README.md says the format),
// read for the tests that compare kvscope with llama.cpp on the same files:
// tests/runtime/test_llamacpp_match (the engine) and
// tests/net/serve/test_serve_llamacpp_match (the server).
#pragma once

#include <QByteArray>
#include <QCryptographicHash>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kv/kv_ids.h"

namespace kvscope::test {

struct TopEntry {
    TokenId token;
    double logprob;
};

// One file of make_references.sh (its header says the format).
struct Reference {
    QStringList make_model_args;
    QByteArray sha256;
    std::vector<TokenId> greedy;
    // After each position of the prompt and then of `greedy`: the top
    // log-probabilities of the next token, most likely first.
    std::vector<std::vector<TopEntry>> top;
};

inline std::vector<TokenId> token_list(const std::string& text, char separator) {
    std::vector<TokenId> ids;
    std::istringstream in(text);
    std::string word;
    while (std::getline(in, word, separator))
        if (!word.empty())
            ids.push_back(static_cast<TokenId>(std::stol(word)));
    return ids;
}

inline std::string after_prefix(const std::string& line, const std::string& prefix) {
    if (line.rfind(prefix, 0) != 0)
        throw std::runtime_error("expected a line starting with '" + prefix + "', got '" + line.substr(0, 40) + "'");
    return line.substr(prefix.size());
}

inline Reference read_reference(const QString& path) {
    std::ifstream in(path.toStdString());
    if (!in)
        throw std::runtime_error("cannot read " + path.toStdString());
    Reference r;
    std::string line;
    std::getline(in, line);
    r.make_model_args = QString::fromStdString(after_prefix(line, "make-model ")).split(' ', Qt::SkipEmptyParts);
    std::getline(in, line);
    r.sha256 = QByteArray::fromStdString(after_prefix(line, "sha256 "));
    std::getline(in, line);
    r.greedy = token_list(after_prefix(line, "greedy "), ' ');
    while (std::getline(in, line)) {
        std::vector<TopEntry> row;
        std::istringstream words(line);
        std::string word;
        while (words >> word) {
            const auto colon = word.find(':');
            row.push_back({static_cast<TokenId>(std::stol(word.substr(0, colon))), std::stod(word.substr(colon + 1))});
        }
        r.top.push_back(std::move(row));
    }
    return r;
}

inline std::vector<TokenId> read_prompt(const QString& dir) {
    std::ifstream in((dir + "/prompt.txt").toStdString());
    std::string text;
    std::getline(in, text);
    return token_list(text, ',');
}

// The model files to check: the environment variable
// KVSCOPE_LLAMACPP_FILES, else `listed` (CMake's list), comma-separated;
// "gemma3-q8_0" stays, "gemma3" becomes its three files.
inline QStringList model_files(const char* listed) {
    const QString chosen = qEnvironmentVariable("KVSCOPE_LLAMACPP_FILES");
    QStringList files;
    for (const QString& name : (chosen.isEmpty() ? QString(listed) : chosen).split(',', Qt::SkipEmptyParts)) {
        if (name.contains('-'))
            files << name;
        else
            for (const char* type : {"f16", "q8_0", "q4_0"})
                files << name + "-" + type;
    }
    return files;
}

inline QByteArray sha256_of(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(&f);
    return hash.result().toHex();
}

// How close kvscope must come to llama.cpp on a reference file.
//
// F16 weights: the bar: top-1 agreement >= 99%, mean KL <= 1e-3, a
// greedy or top-1 parting only at a near-tie (0.01 in log-probability),
// log-probabilities within 0.02 through the server.
//
// Quantized weights (Q8_0, Q4_0): as close as llama.cpp is to itself. Both
// engines quantize each matmul's input to 8 bits, now by ggml's definition
// (codes from 127/amax, f16 block scales), and every matmul agrees with
// ggml's on ggml's own inputs to float rounding; but a last-bit difference
// anywhere (attention's order of additions, RoPE angles in double) flips an
// input code now and then, and random-weight models amplify a flipped code
// through the layers. llama.cpp's own batch and one-token paths disagree on
// these files by as much: top-1 0.974 / mean KL 1.1e-3 (llama-q8_0) and
// 0.964 / 1.2e-3 (llama-q4_0), measured with its library on the references'
// prompt. So: top-1 >= 96%, mean KL <= 1.2e-3, greedy tokens parting at
// near-ties of 0.1; through the server a top-1 disagreement need not be a
// near-tie (llama.cpp's two paths have such disagreements too), it only
// counts against the 96%, and single log-probabilities are not bounded
// (the mean KL is the measure: one position 0.2 apart is within what a
// flipped code does here).
struct MatchBar {
    double min_top1;
    double max_mean_kl;
    double tie;              // log-probability gap that counts as a near-tie
    double max_logprob_diff; // through the server, per shared top token
    bool every_miss_a_tie;   // through the server, every top-1 disagreement a near-tie
};

inline MatchBar match_bar(const QString& file) {
    if (file.endsWith("-f16"))
        return {0.99, 1e-3, 0.01, 0.02, true};
    return {0.96, 1.2e-3, 0.1, std::numeric_limits<double>::infinity(), false};
}

// Writes the reference's model into `dir` with kvscope-cli (`cli`) and the
// recorded make-model arguments; returns its path. Throws when make-model
// fails or writes another file than the references were made from (the
// writer changed: rerun make_references.sh).
inline QString make_reference_model(const Reference& r, const QString& name, const QTemporaryDir& dir,
                                    const char* cli) {
    const QString path = dir.filePath(name + ".gguf");
    QProcess make;
    make.start(QString(cli), QStringList{"make-model"} + r.make_model_args + QStringList{"-o", path});
    if (!make.waitForFinished(120000) || make.exitCode() != 0)
        throw std::runtime_error("make-model failed: " + make.readAllStandardError().toStdString());
    if (sha256_of(path) != r.sha256)
        throw std::runtime_error(name.toStdString() + ": make-model wrote another file than the references' "
                                 "(the writer changed): rerun tests/data/llamacpp/make_references.sh");
    return path;
}

} // namespace kvscope::test
