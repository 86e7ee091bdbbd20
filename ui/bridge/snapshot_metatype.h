// The engine's value types that cross threads in queued signals: the
// controller's snapshots and the workload dock's spec.
#pragma once

#include <memory>

#include <QMetaType>

#include "engine/engine_snapshot.h"
#include "engine/workload/workload.h"

Q_DECLARE_METATYPE(std::shared_ptr<const kvscope::EngineSnapshot>)
Q_DECLARE_METATYPE(kvscope::WorkloadSpec)

namespace kvscope::ui {

// Registers both types by name, for connections made with SIGNAL()/SLOT()
// strings and for QSignalSpy; typed connections need only the declarations.
inline void registerDashboardMetaTypes() {
    qRegisterMetaType<std::shared_ptr<const kvscope::EngineSnapshot>>();
    qRegisterMetaType<kvscope::WorkloadSpec>();
}

} // namespace kvscope::ui
