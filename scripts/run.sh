#!/usr/bin/env bash
# make run: initialise a single node under ROOT if there is none, print how
# to reach it, and run it in the foreground (Ctrl-C stops it).
#   scripts/run.sh BUILD_DIR ROOT
set -euo pipefail
O=$1 ROOT=$2
export PATH="$(cd "$O/bin" && pwd):$PATH"
if [ ! -f "$ROOT/spinifex.toml" ]; then
	spx admin init --root "$ROOT"
fi
spx admin profile --root "$ROOT"
exec spx -v up --root "$ROOT" --foreground
