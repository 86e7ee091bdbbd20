// Reads the reference .jsonl files of ../shared/models, and generates the
// way their rows were made: one greedy sequence alone on its own Engine.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>

#include <memory>
#include <optional>
#include <vector>

#include "engine/completion.h"
#include "engine/kv/kv_ids.h"

namespace kvscope::test {

inline QList<QJsonObject> read_jsonl(const QString& path) {
    QList<QJsonObject> rows;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return rows;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        if (!line.isEmpty())
            rows.append(QJsonDocument::fromJson(line).object());
    }
    return rows;
}

inline std::vector<TokenId> ids(const QJsonValue& v) {
    std::vector<TokenId> out;
    for (const QJsonValue& x : v.toArray())
        out.push_back(static_cast<TokenId>(x.toInt()));
    return out;
}

// What a reference generation ran with: the KV cache and the backend.
struct GenerateSetup {
    KvDtype kv_dtype = KvDtype::F16;
    std::uint32_t block_size = 16;
    Backend backend = Backend::Cpu;
};

// `new_tokens` greedy tokens after `prompt`, the sequence alone on an
// Engine sized for it, through EOS as the references were (run.c and
// llama.cpp ran to a length).
inline std::vector<TokenId> generate_alone(const std::shared_ptr<const Model>& model, std::vector<TokenId> prompt,
                                           std::uint32_t new_tokens, const GenerateSetup& setup = {}) {
    EngineConfig config;
    config.kv_dtype = setup.kv_dtype;
    config.block_size = setup.block_size;
    config.backend = setup.backend;
    Engine engine(config_for_one_request(config, model->config(), prompt.size() + new_tokens), model);
    RequestParams params;
    params.max_new_tokens = new_tokens;
    params.ignore_eos = true;
    return run_to_completion(engine, std::move(prompt), params).tokens;
}

// Greedy generation of every row of a reference file (prompt_token_ids in,
// generated_token_ids expected), max_new_tokens set per row. Returns the
// prompt of the first row that differs (prompts may be empty), or nothing
// when every row matches.
inline std::optional<QString> first_reference_mismatch(const std::shared_ptr<const Model>& model,
                                                       const QList<QJsonObject>& rows, const GenerateSetup& setup) {
    for (const QJsonObject& row : rows) {
        const auto expected = ids(row["generated_token_ids"]);
        const auto new_tokens = static_cast<std::uint32_t>(expected.size());
        if (generate_alone(model, ids(row["prompt_token_ids"]), new_tokens, setup) != expected)
            return row["prompt"].toString();
    }
    return std::nullopt;
}

} // namespace kvscope::test
