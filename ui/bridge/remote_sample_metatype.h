// net/attach's RemoteSample as it crosses threads in queued signals (from
// the RemoteController to the window), declared before any signal carries it.
#pragma once

#include <memory>

#include <QMetaType>

#include "net/attach/remote_sample.h"

Q_DECLARE_METATYPE(std::shared_ptr<const kvscope::attach::RemoteSample>)
