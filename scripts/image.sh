#!/usr/bin/env bash
# Builds the switchyard container image (deploy/image/Containerfile) with no base image from a
# registry: the `switchyard` binary, the shared libraries and loader `ldd` lists for it, Debian's
# CA roots and a passwd/group naming the user it runs as (uid 65532), in a staging folder that
# Debian's podman (else buildah) builds `FROM scratch`. docs/deploying.md says how to run it.
#
#   scripts/image.sh build [--binary PATH] [--tag IMAGE]
#       --binary  the switchyard binary to put in (default: `cargo build --release` it and use
#                 target/release/switchyard); its debug info is stripped, its symbols kept
#       --tag     the image's name (default: localhost/switchyard:VERSION, VERSION from
#                 `switchyard --version`)
#       Prints the image's name, size and build time last.
#   scripts/image.sh tools
#       Installs what building, running and validating need when absent: podman and runc from
#       Debian's packages, and kubernetes-validate (pinned, from PyPI) into a venv,
#       .agent-clients/deploy-venv (git-ignored; under $SWITCHYARD_AGENT_CLIENTS_DIR when set).
#       scripts/test.sh runs it for crates/switchyard-cli/tests/deploy.rs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KUBERNETES_VALIDATE_VERSION=1.37.0
CA_ROOTS=/etc/ssl/certs/ca-certificates.crt

die() {
  echo "scripts/image.sh: $*" >&2
  exit 1
}

# The absolute paths of the shared libraries and the loader that `ldd` lists for $1; nothing
# for a static binary.
libraries() {
  local out
  out="$(LC_ALL=C ldd "$1" 2>&1)" || {
    case "$out" in *"not a dynamic executable"* | *"statically linked"*) return 0 ;; esac
    die "ldd $1 failed: $out"
  }
  if grep -q "not found" <<<"$out"; then
    die "ldd cannot find every library of $1: $out"
  fi
  # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" and "/lib64/ld-linux-x86-64.so.2 (0x…)";
  # linux-vdso has no file.
  awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out"
}

# Fills $1 with rootfs/ (binary $2, its libraries, CA roots, /etc files, /tmp) and data/.
stage() {
  local dir="$1" binary="$2" lib libs
  mkdir -p "$dir/rootfs/usr/local/bin" "$dir/rootfs/etc/ssl/certs" "$dir/rootfs/tmp" "$dir/data"
  # A read-only root filesystem still gets a writable /tmp from the runtime (Kubernetes: an
  # emptyDir); the sticky bit is what every /tmp has.
  chmod 1777 "$dir/rootfs/tmp"
  objcopy --strip-debug "$binary" "$dir/rootfs/usr/local/bin/switchyard"
  # An assignment, so that set -e stops here when ldd fails.
  libs="$(libraries "$binary")"
  for lib in $libs; do
    mkdir -p "$dir/rootfs$(dirname "$lib")"
    cp -L "$lib" "$dir/rootfs$lib"
  done
  [ -f "$CA_ROOTS" ] || die "$CA_ROOTS is missing: install Debian's ca-certificates (apt-get install ca-certificates)"
  cp -L "$CA_ROOTS" "$dir/rootfs$CA_ROOTS"
  cp deploy/image/passwd deploy/image/group deploy/image/nsswitch.conf "$dir/rootfs/etc/"
  chmod 0644 "$dir/rootfs/etc/passwd" "$dir/rootfs/etc/group" "$dir/rootfs/etc/nsswitch.conf"
  cp deploy/image/Containerfile "$dir/Containerfile"
}

build() {
  local binary="" tag=""
  while (($#)); do
    case "$1" in
      --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
      --tag) tag="${2:?--tag needs an image name}"; shift 2 ;;
      *) die "unknown argument to build: $1 (see the header of scripts/image.sh)" ;;
    esac
  done
  if [ -z "$binary" ]; then
    cargo build --release -p switchyard-cli --bin switchyard
    binary="${CARGO_TARGET_DIR:-target}/release/switchyard"
  fi
  [ -x "$binary" ] || die "$binary is not an executable"
  local version
  version="$("$binary" --version | awk '{ print $2 }')"
  [ -n "$tag" ] || tag="localhost/switchyard:$version"
  local builder
  if command -v podman >/dev/null; then
    builder=(podman build --format oci)
  elif command -v buildah >/dev/null; then
    builder=(buildah build --format oci)
  else
    die "neither podman nor buildah is installed: run scripts/image.sh tools (Debian: apt-get install podman)"
  fi
  local started
  started=$(date +%s.%N)
  staging="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-image.XXXXXX")"
  # The staging folder holds a copy of the binary (tens of MB): never leave it behind.
  trap 'rm -rf "$staging"' EXIT
  stage "$staging" "$binary"
  # One layer per COPY and no intermediate images: nothing is left to clean but the image.
  "${builder[@]}" --layers=false --build-arg "VERSION=$version" --tag "$tag" \
    --file "$staging/Containerfile" "$staging" >&2
  local size
  size="$("${builder[0]}" image inspect --format '{{.Size}}' "$tag" 2>/dev/null || echo 0)"
  awk -v tag="$tag" -v size="$size" -v s="$started" -v e="$(date +%s.%N)" \
    'BEGIN { printf "built %s: %.1f MB in %.1f s\n", tag, size / 1e6, e - s }'
}

tools() {
  local need=()
  command -v podman >/dev/null || need+=(podman)
  # podman's default runtime here, crun, cannot run a container on a cgroup v1 host in hybrid
  # mode; docs/deploying.md runs the image with runc.
  command -v runc >/dev/null || command -v /usr/sbin/runc >/dev/null || need+=(runc)
  if ((${#need[@]})); then
    [ "$(id -u)" = 0 ] || die "${need[*]} missing; run as root or: sudo apt-get install ${need[*]}"
    echo "scripts/image.sh: installing ${need[*]} from Debian's packages" >&2
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
  fi
  local dir="${SWITCHYARD_AGENT_CLIENTS_DIR:-.agent-clients}"
  local venv="$dir/deploy-venv"
  local py="$venv/bin/python"
  if [ -x "$py" ] && [ "$("$py" -c 'from importlib.metadata import version; print(version("kubernetes-validate"))' 2>/dev/null)" = "$KUBERNETES_VALIDATE_VERSION" ]; then
    echo "deploy tools: podman, runc and kubernetes-validate $KUBERNETES_VALIDATE_VERSION are installed"
    return 0
  fi
  command -v python3 >/dev/null || die "python3 is needed for kubernetes-validate"
  [ -x "$py" ] || python3 -m venv "$venv"
  echo "deploy tools: installing kubernetes-validate==$KUBERNETES_VALIDATE_VERSION (pip) into $venv"
  "$py" -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  tools) shift; tools "$@" ;;
  *) die "usage: scripts/image.sh build [--binary PATH] [--tag IMAGE] | tools" ;;
esac
