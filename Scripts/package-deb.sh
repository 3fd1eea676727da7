#!/usr/bin/env bash
# Builds the Debian package ordersync_<version>_<arch>.deb from a release build:
# /usr/bin/ordersync, the systemd units ordersync-master.service and ordersync-slave.service,
# /etc/ordersync/ordersync.conf (a conffile), the roll-up to head office (ordersync-rollup.service,
# its /etc/ordersync/rollup.env, a conffile only root reads, and head office's setup SQL in
# /usr/share/ordersync/postgresql), man pages and bash/zsh/fish completions generated
# from the command definitions (with the exit codes and files of Packaging/man), the changelog and
# the copyright file (DEP-5), the user `ordersync` and /var/lib/ordersync made by the postinst. The
# binary is stripped; its debug information goes to ordersync_<version>_<arch>.debug next to the
# package (named in the binary's .gnu_debuglink: gdb finds it in /usr/lib/debug/usr/bin).
#
#   Scripts/package-deb.sh                      # release build (Swift runtime linked in), then the package in .
#   Scripts/package-deb.sh -o DIR               # write the package into DIR
#   Scripts/package-deb.sh --binary PATH        # package this ordersync binary instead of building one
#                                               # (also ORDERSYNC_RELEASE_BIN=PATH)
#   Scripts/package-deb.sh -Z gzip              # dpkg-deb's compression (default xz: smaller, slower)
#   ORDERSYNC_RELEASE_SCRATCH=DIR Scripts/package-deb.sh   # the release build in DIR instead of .build
#                                               # (Scripts/test.sh shares .build-release with callgrind.sh)
#
# The release build records the commit: Sources/Node/OrderSyncNode/Status/BuildCommit.swift is written
# with it for the build and put back afterwards, so `ordersync --version` prints
# `0.1.0 (commit 1a2b3c4d5e6f)`; a plain `swift build` prints `(unknown commit)`.
# Needs dpkg-dev (dpkg-shlibdeps) and a Swift toolchain on PATH. Prints the package's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="$ROOT"
BINARY="${ORDERSYNC_RELEASE_BIN:-}"
COMPRESSION=xz
while [ $# -gt 0 ]; do
    case "$1" in
        -o | --output) OUT="$2"; shift ;;
        --binary) BINARY="$2"; shift ;;
        -Z) COMPRESSION="$2"; shift ;;
        *) echo "usage: Scripts/package-deb.sh [-o DIR] [--binary PATH] [-Z xz|gzip|zstd|none]" >&2; exit 2 ;;
    esac
    shift
done
for tool in dpkg-deb dpkg-shlibdeps fakeroot; do
    if [ "$tool" = fakeroot ] && [ "$(id -u)" = 0 ]; then continue; fi
    command -v "$tool" >/dev/null || { echo "package-deb: $tool is missing (apt-get install dpkg-dev fakeroot)" >&2; exit 1; }
done

VERSION="$(sed -n 's/.*public static let string = "\(.*\)".*/\1/p' Sources/Node/OrderSyncNode/Config/NodeConfiguration.swift)"
[ -n "$VERSION" ] || { echo "package-deb: cannot read the version from NodeConfiguration.swift" >&2; exit 1; }
ARCH="$(dpkg --print-architecture)"
COMMIT_FILE=Sources/Node/OrderSyncNode/Status/BuildCommit.swift

if [ -z "$BINARY" ]; then
    COMMIT="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    if [ "$COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        COMMIT="$COMMIT-dirty"
    fi
    SAVED="$(mktemp)"
    cp "$COMMIT_FILE" "$SAVED"
    restore() { cp "$SAVED" "$COMMIT_FILE"; rm -f "$SAVED"; }
    trap restore EXIT
    sed -i "s/public static let commit: String? = nil/public static let commit: String? = \"$COMMIT\"/" "$COMMIT_FILE"
    grep -q "\"$COMMIT\"" "$COMMIT_FILE" || { echo "package-deb: cannot record the commit in $COMMIT_FILE" >&2; exit 1; }
    echo "package-deb: release build of ordersync $VERSION (commit $COMMIT)" >&2
    # --static-swift-stdlib: the Swift runtime and Foundation are linked in, so the package
    # needs no toolchain at run time, only Debian's libraries.
    SCRATCH=()
    if [ -n "${ORDERSYNC_RELEASE_SCRATCH:-}" ]; then SCRATCH=(--scratch-path "$ORDERSYNC_RELEASE_SCRATCH"); fi
    swift build -c release "${SCRATCH[@]}" --product ordersync --static-swift-stdlib 2>&1 | tail -n 2 >&2
    BINARY="$(swift build -c release "${SCRATCH[@]}" --show-bin-path)/ordersync"
    restore
    trap - EXIT
fi
[ -x "$BINARY" ] || { echo "package-deb: no ordersync binary at $BINARY" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
STAGE="$WORK/ordersync"
install -d "$STAGE/DEBIAN" "$STAGE/usr/bin" "$STAGE/lib/systemd/system" "$STAGE/etc/ordersync" \
    "$STAGE/usr/share/man/man1" "$STAGE/usr/share/doc/ordersync" \
    "$STAGE/usr/share/bash-completion/completions" "$STAGE/usr/share/zsh/vendor-completions" \
    "$STAGE/usr/share/fish/vendor_completions.d"
mkdir -p "$OUT"
DEBUG_FILE="$OUT/ordersync_${VERSION}_${ARCH}.debug"
objcopy --only-keep-debug "$BINARY" "$DEBUG_FILE"
strip --strip-all -o "$STAGE/usr/bin/ordersync" "$BINARY"
objcopy --add-gnu-debuglink="$DEBUG_FILE" "$STAGE/usr/bin/ordersync"
chmod 0755 "$STAGE/usr/bin/ordersync"
chmod 0644 "$DEBUG_FILE"
install -m 0644 Packaging/debian/ordersync-master.service Packaging/debian/ordersync-slave.service "$STAGE/lib/systemd/system/"
install -m 0644 Packaging/debian/ordersync.conf "$STAGE/etc/ordersync/ordersync.conf"
install -m 0644 Packaging/debian/ordersync-rollup.service "$STAGE/lib/systemd/system/"
install -m 0600 Packaging/debian/rollup.env "$STAGE/etc/ordersync/rollup.env"
install -D -m 0644 Packaging/debian/lintian-overrides "$STAGE/usr/share/lintian/overrides/ordersync"
install -d "$STAGE/usr/share/ordersync/postgresql"
install -m 0644 Packaging/postgresql/ordersync-head-office.sql Packaging/postgresql/ordersync-add-shop.sql \
    "$STAGE/usr/share/ordersync/postgresql/"
install -D -m 0644 Packaging/debian/ordersync-alerts.yml "$STAGE/usr/share/ordersync/ordersync-alerts.yml"
install -D -m 0644 Packaging/debian/ordersync-rollup-alerts.yml "$STAGE/usr/share/ordersync/ordersync-rollup-alerts.yml"
install -m 0755 Packaging/debian/postinst Packaging/debian/prerm Packaging/debian/postrm "$STAGE/DEBIAN/"
printf '%s\n' /etc/ordersync/ordersync.conf /etc/ordersync/rollup.env >"$STAGE/DEBIAN/conffiles"
for doc in README.md Docs/OPERATIONS.md Docs/API.md Docs/SECURITY.md; do
    install -m 0644 "$doc" "$STAGE/usr/share/doc/ordersync/"
done
install -m 0644 Packaging/debian/copyright "$STAGE/usr/share/doc/ordersync/copyright"
# A native package (no Debian revision): its changelog is changelog.gz. A version without an
# entry of its own gets one made here, so the changelog always names the packaged version.
CHANGELOG="$WORK/changelog"
if [ "$(dpkg-parsechangelog -l Packaging/debian/changelog -S Version)" != "$VERSION" ]; then
    echo "package-deb: Packaging/debian/changelog has no entry for $VERSION; adding one" >&2
    printf 'ordersync (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n\n' "$VERSION" "$VERSION" \
        "OrderSync developers <ordersync@ordersync.invalid>" "$(date -R)" >"$CHANGELOG"
fi
cat Packaging/debian/changelog >>"$CHANGELOG"
gzip -9n -c "$CHANGELOG" >"$STAGE/usr/share/doc/ordersync/changelog.gz"
chmod 0644 "$STAGE/usr/share/doc/ordersync/changelog.gz"

# Completions and man pages come from the command definitions (swift-argument-parser).
# ORDERSYNC_CONFIG=/dev/null: the build machine's own settings file is not read.
export ORDERSYNC_CONFIG=/dev/null
"$STAGE/usr/bin/ordersync" --generate-completion-script bash >"$STAGE/usr/share/bash-completion/completions/ordersync"
"$STAGE/usr/bin/ordersync" --generate-completion-script zsh >"$STAGE/usr/share/zsh/vendor-completions/_ordersync"
"$STAGE/usr/bin/ordersync" --generate-completion-script fish >"$STAGE/usr/share/fish/vendor_completions.d/ordersync.fish"
# With ORDERSYNC_RELEASE_SCRATCH the tool is built there too (in release: swift-argument-parser is
# compiled already), so that nothing waits for SwiftPM's lock on .build, which Scripts/test.sh's
# other tracks hold while they run tests.
MANUAL_BUILD=()
if [ -n "${ORDERSYNC_RELEASE_SCRATCH:-}" ]; then MANUAL_BUILD=(-c release --scratch-path "$ORDERSYNC_RELEASE_SCRATCH"); fi
swift build "${MANUAL_BUILD[@]}" --product generate-manual 2>&1 | tail -n 1 >&2
MANUAL_TOOL="$(swift build "${MANUAL_BUILD[@]}" --show-bin-path)/generate-manual"
mkdir -p "$WORK/man"
"$MANUAL_TOOL" "$STAGE/usr/bin/ordersync" --multi-page --date "$(date -u +%Y-%m-%d)" \
    --authors "OrderSync developers" -o "$WORK/man" >&2
# The generated pages end with a generic EXIT STATUS (`.Ex -std`): each gets the real codes
# (`check`: a monitoring plugin's 0-3; `rollup`: its own; the others: sysexits) and a FILES section before it.
for page in "$WORK"/man/*.1; do
    case "$(basename "$page")" in
        ordersync.check.1) codes=Packaging/man/exit-status-check.mdoc ;;
        ordersync.rollup*.1) codes=Packaging/man/exit-status-rollup.mdoc ;;
        *) codes=Packaging/man/exit-status.mdoc ;;
    esac
    grep -qx '.Ex -std' "$page" || { echo "package-deb: no EXIT STATUS in $page" >&2; exit 1; }
    awk -v files=Packaging/man/files.mdoc -v codes="$codes" '
        $0 == ".Sh \"EXIT STATUS\"" { while ((getline line < files) > 0) print line; close(files) }
        $0 == ".Ex -std" { while ((getline line < codes) > 0) print line; close(codes); next }
        { print }' "$page" >"$page.new"
    gzip -9n -c "$page.new" >"$STAGE/usr/share/man/man1/$(basename "$page").gz"
done
chmod 0644 "$STAGE"/usr/share/man/man1/* "$STAGE"/usr/share/*/completions/* "$STAGE"/usr/share/zsh/vendor-completions/* \
    "$STAGE"/usr/share/fish/vendor_completions.d/*

# The libraries the binary links (dpkg-shlibdeps reads them off the binary), plus avahi-daemon,
# which publishes and browses for it, and adduser for the postinst.
mkdir -p "$WORK/src/debian"
printf 'Source: ordersync\n\nPackage: ordersync\nArchitecture: any\n' >"$WORK/src/debian/control"
SHLIBS="$(cd "$WORK/src" && dpkg-shlibdeps -O "$STAGE/usr/bin/ordersync" | sed -n 's/^shlibs:Depends=//p')"
[ -n "$SHLIBS" ] || { echo "package-deb: dpkg-shlibdeps found no libraries" >&2; exit 1; }
SIZE="$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)"
cat >"$STAGE/DEBIAN/control" <<EOF
Package: ordersync
Version: $VERSION
Architecture: $ARCH
Maintainer: OrderSync developers <ordersync@ordersync.invalid>
Installed-Size: $SIZE
Depends: $SHLIBS, avahi-daemon, adduser
Section: net
Priority: optional
Description: LAN order sync for point-of-sale terminals
 One terminal runs the master, the others slaves: they find it through
 DNS-SD (Avahi), pair once with a one-time code and keep every order in
 sync over an authenticated, encrypted link; each terminal keeps its orders
 in SQLite. Units: ordersync-master.service and ordersync-slave.service;
 settings: /etc/ordersync/ordersync.conf. ordersync-rollup.service ships
 the shop's journal to head office's PostgreSQL (/etc/ordersync/rollup.env).
EOF

DEB="$OUT/ordersync_${VERSION}_${ARCH}.deb"
if [ "$(id -u)" = 0 ]; then
    dpkg-deb --root-owner-group -Z"$COMPRESSION" --build "$STAGE" "$DEB" >&2
else
    fakeroot dpkg-deb --root-owner-group -Z"$COMPRESSION" --build "$STAGE" "$DEB" >&2
fi
echo "$DEB"
