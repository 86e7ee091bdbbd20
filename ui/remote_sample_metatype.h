// app/attach's RemoteSample and ConnectOptions for Qt code: the one way ui/
// includes them. RemoteSample has a field named `slots`, which is also a
// Qt keyword macro: it is undefined around the attach headers, and put back
// (the ui code declares Qt slots). Qt code reads the field as
// slotSamples(sample). Also declares the sample's shared_ptr for queued
// signals, before any signal carries it.
#pragma once

#include <memory>
#include <vector>

#include <QMetaType>

#pragma push_macro("slots")
#undef slots
#include "app/attach/remote_monitor.h"
#include "app/attach/remote_sample.h"

namespace kvscope::ui {
inline const std::vector<attach::SlotSample>& slotSamples(const attach::RemoteSample& sample) { return sample.slots; }
inline std::vector<attach::SlotSample>& slotSamples(attach::RemoteSample& sample) { return sample.slots; }
} // namespace kvscope::ui
#pragma pop_macro("slots")

Q_DECLARE_METATYPE(std::shared_ptr<const kvscope::attach::RemoteSample>)
