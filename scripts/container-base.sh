#!/usr/bin/env bash
# A local stand-in for Bun's official Debian image, for machines that cannot pull images: a minimal Debian made by
# debootstrap from Debian's own packages, with Bun from its npm package laid out as oven/bun's Debian images have it
# (/usr/local/bin/bun and bunx, the `node` fallback, the user `bun` 1000:1000 with its home, WORKDIR
# /home/bun/app, the runtime transpiler cache off, CMD bun). The Containerfile then builds on it with
# --build-arg BASE=<the image this prints>.
#
#   bash scripts/container-base.sh            # prints the image name on its last line; nothing is done when it exists
#
# Environment: BUN_VERSION (default: this machine's bun), SUITE (default: this machine's Debian release), MIRROR
# (default: the first Debian URI of this machine's apt sources), IMAGE (default localhost/bun-debian:VERSION-SUITE).
# Needs root, debootstrap, podman and npm.
set -euo pipefail

BUN_VERSION=${BUN_VERSION:-$(bun --version)}
SUITE=${SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
if [ -z "${MIRROR:-}" ]; then
  MIRROR=$(grep -hoE '^(URIs:|deb)\s+\S+' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '{print $2}' | grep -v -- '-security' | head -1 || true)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi
IMAGE=${IMAGE:-localhost/bun-debian:$BUN_VERSION-$SUITE}

if podman image exists "$IMAGE"; then
  echo "$IMAGE"
  exit 0
fi

case "$(uname -m)" in
  x86_64) pkg=@oven/bun-linux-x64-baseline ;; # the build oven/bun's images ship on amd64
  aarch64) pkg=@oven/bun-linux-aarch64 ;;
  *) echo "no Bun build for $(uname -m)" >&2; exit 1 ;;
esac

work=$(mktemp -d /var/tmp/bun-debian-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root

echo "debootstrap --variant=minbase $SUITE from $MIRROR" >&2
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  exit 1
}
# what debian:*-slim leaves out: package lists and archives, documentation (copyright files kept), manuals, translations
rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log \
  "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete

echo "Bun $BUN_VERSION from npm ($pkg)" >&2
(cd "$work" && npm pack --silent "$pkg@$BUN_VERSION" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/bin/bun
install -m 0755 "$work/package/bin/bun" "$root/usr/local/bin/bun"
ln -s /usr/local/bin/bun "$root/usr/local/bin/bunx"
mkdir -p "$root/usr/local/bun-node-fallback-bin"
ln -s /usr/local/bin/bun "$root/usr/local/bun-node-fallback-bin/node"
chroot "$root" groupadd bun --gid 1000
chroot "$root" useradd bun --uid 1000 --gid bun --shell /bin/sh --create-home
mkdir -p "$root/home/bun/app"
chroot "$root" /usr/local/bin/bun --version >/dev/null
# a trust store, as oven/bun's images install ca-certificates: this machine's own, with its local additions (a
# TLS-inspecting proxy's CA), so that `bun install` in the build reaches the registry as it does here
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  ln -s certs/ca-certificates.crt "$root/etc/ssl/cert.pem" # where Bun looks first
fi

tar --numeric-owner -C "$root" -cf - . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bun-node-fallback-bin' \
  --change 'ENV BUN_RUNTIME_TRANSPILER_CACHE_PATH=0' \
  --change 'ENV BUN_INSTALL_BIN=/usr/local/bin' \
  --change 'WORKDIR /home/bun/app' \
  --change 'CMD ["/usr/local/bin/bun"]' \
  - "$IMAGE" >/dev/null
echo "$IMAGE"
