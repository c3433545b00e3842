#!/usr/bin/env bash
# Installs the Python package `weft` from the build tree (build/python/weft, built with the rest of
# the project) into /usr/bin/python3's user site-packages, or into DIR when given. Offline: it only
# copies files.
#   scripts/install_python.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${WEFT_BUILD_DIR:-build}"
SRC="$BUILD/python/weft"
if ! ls "$SRC"/_weft*.so > /dev/null 2>&1; then
  echo "install_python: no extension in $SRC: build first (scripts/build.sh)" >&2
  exit 1
fi
DEST="${1:-$(/usr/bin/python3 -m site --user-site)}"
mkdir -p "$DEST/weft"
cp "$SRC"/*.py "$SRC"/_weft*.so "$DEST/weft/"
echo "installed weft into $DEST/weft"
/usr/bin/python3 -c "import sys; sys.path.insert(0, '$DEST'); import weft; print('import weft: ok,', len(weft.backends()), 'backends')"
