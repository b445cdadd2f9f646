#!/usr/bin/env bash
# Provides Node.js 24 (the active LTS) where the machine's Node is older: installs the official binary from the
# npm registry's `node` package into .node24/ (ignored by git) and prints the line that puts it first on PATH.
#   eval "$(bash scripts/node24.sh)"
# Prints nothing on stdout when the `node` on PATH is already 24 or newer. Quick when already installed: it
# only checks the installed binary's version.
set -euo pipefail

# Bump with the Node.js 24 releases (npm view node@24 version).
readonly VERSION=24.21.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly dir="$root/.node24"
readonly bin="$dir/node_modules/.bin"

major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if command -v node >/dev/null 2>&1 && [ "$(major node)" -ge 24 ]; then
  echo "node $(node --version) on PATH is already 24 or newer" >&2
  exit 0
fi

if [ "$("$bin/node" --version 2>/dev/null || true)" != "v$VERSION" ]; then
  echo "installing Node.js $VERSION from the npm registry into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  # The `node` package's install script fetches the binary for this platform, node-<os>-<arch>, from the same
  # registry; the folder's own package.json allows that script (npm 11.19+ asks for it). npm's output goes to
  # stderr, so that stdout stays the one line to eval.
  printf '{ "private": true, "allowScripts": { "node": true } }\n' >"$dir/package.json"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "node@$VERSION" >&2
  "$bin/node" --version >/dev/null
fi

echo "export PATH=\"$bin:\$PATH\""
