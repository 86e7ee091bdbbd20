// Transitional: teacher_forced_logits moved to teacher_forcing.h when the
// Generator went (issue 14: every generation runs through Engine). Only
// tests/runtime/test_kv_accuracy.cpp still includes this name; remove this
// header once it includes "engine/runtime/teacher_forcing.h".
#pragma once

#include "engine/runtime/teacher_forcing.h"
