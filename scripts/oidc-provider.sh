#!/usr/bin/env bash
# The OpenID provider of the single sign-on tests (crates/switchyard-cli/tests/ui_sso.rs, SPEC
# R14.11b): npm's `oidc-provider`, a certified OpenID Connect implementation, at a pinned version
# from the npm registry, into .oidc-provider/ (git-ignored; under SWITCHYARD_OIDC_PROVIDER_DIR, an
# absolute path, when set). scripts/oidc-provider.mjs runs it on 127.0.0.1 with a test client and
# accounts whose ID tokens carry a groups claim. Nothing is sent anywhere: it only answers.
#
#   scripts/oidc-provider.sh install   # installs it once (stamped with its version); later runs keep it
#   scripts/oidc-provider.sh dir       # prints the install folder, for the tests
#
# Needs node and npm on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OIDC_PROVIDER_VERSION=9.13.3
DIR="${SWITCHYARD_OIDC_PROVIDER_DIR:-.oidc-provider}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac

install() {
  for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "scripts/oidc-provider.sh needs $tool on PATH" >&2; exit 1; }
  done
  local stamp="$DIR/installed-oidc-provider-$OIDC_PROVIDER_VERSION"
  if [ -f "$stamp" ] && [ -f "$DIR/node_modules/oidc-provider/package.json" ]; then
    echo "sso tests: oidc-provider $OIDC_PROVIDER_VERSION already installed in $DIR"
    return 0
  fi
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name":"switchyard-oidc-provider-test","private":true}' > "$DIR/package.json"
  npm install --prefix "$DIR" --no-audit --no-fund --save-exact "oidc-provider@$OIDC_PROVIDER_VERSION"
  rm -f "$DIR"/installed-oidc-provider-*
  touch "$stamp"
  echo "sso tests: oidc-provider $OIDC_PROVIDER_VERSION installed in $DIR"
}

case "${1:-}" in
  install) install ;;
  dir) echo "$DIR" ;;
  *) echo "usage: scripts/oidc-provider.sh install|dir" >&2; exit 2 ;;
esac
