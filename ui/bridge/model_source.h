#pragma once

#include <QMetaType>
#include <QString>

namespace kvscope::ui {

// Where the app's model comes from: a GGUF file, or a make-model preset
// built with random weights (real shape and memory, meaningless text).
struct ModelSource {
    QString path;   // a GGUF file
    QString preset; // a synthetic model preset (engine/presets); used when path is empty

    static ModelSource file(QString path) { return {std::move(path), {}}; }
    static ModelSource synthetic(QString preset) { return {{}, std::move(preset)}; }
    bool isSynthetic() const { return path.isEmpty(); }
    // "stories260K-f32.gguf" or "synthetic llama-110m".
    QString label() const;
};

} // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::ui::ModelSource)
