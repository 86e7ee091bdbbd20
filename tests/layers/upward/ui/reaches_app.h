// The layer check's own test: ui/ including app/ must fail it.
#include "app/cli/args.h"
