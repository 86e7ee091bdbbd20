#!/bin/sh
# with_model.sh DEFAULT_DIR FILE PROGRAM [ARGS...]: runs PROGRAM --model
# <dir>/FILE ARGS..., where dir is $KVSCOPE_TEST_MODELS or else DEFAULT_DIR,
# the folder the Qt tests use too (test_models.h). Without that file it
# exits 77, which the test's SKIP_RETURN_CODE makes ctest report as skipped.
set -eu
dir="${KVSCOPE_TEST_MODELS:-$1}"
model="$dir/$2"
program="$3"
shift 3
if [ ! -f "$model" ]; then
  echo "skipped: $model is absent (shared models folder)"
  exit 77
fi
exec "$program" --model "$model" "$@"
