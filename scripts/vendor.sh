#!/bin/sh
# Reproduce the vendored browser libraries from npm: uPlot (served with the admin page) and
# axe-core (test-only). Each tarball is checked against the integrity npm publishes for it.
#   scripts/vendor.sh            # the pinned versions below
#   UPLOT=1.6.33 scripts/vendor.sh   # another version (VERSIONS.md is rewritten to match)
set -eu

UPLOT=${UPLOT:-1.6.32}
AXE=${AXE:-4.14.1}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
UPLOT_DIR="$ROOT/admin_api/static/vendor/uplot"
AXE_DIR="$ROOT/tests/admin_page/vendor/axe-core"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Download name@version into $WORK/<name>/ and check the tarball's sha512 against npm's record.
fetch() {
    name=$1 version=$2
    mkdir -p "$WORK/$name"
    (cd "$WORK/$name" && npm pack --silent "$name@$version" >/dev/null)
    tarball=$(ls "$WORK/$name"/*.tgz)
    expected=$(npm view "$name@$version" dist.integrity)
    actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
    if [ "$expected" != "$actual" ]; then
        echo "integrity mismatch for $name@$version: npm says $expected, got $actual" >&2
        exit 1
    fi
    tar xzf "$tarball" -C "$WORK/$name"
    echo "$name@$version $actual"
    INTEGRITY=$actual
    LICENCE=$(npm view "$name@$version" license)
}

# VERSIONS.md for one vendored library: what it is, where it came from, under which licence.
versions() {
    dir=$1 name=$2 version=$3 files=$4 use=$5
    cat >"$dir/VERSIONS.md" <<END
# Vendored: $name

Written by \`scripts/vendor.sh\` (do not edit by hand; run it again to upgrade). $use

| name | version | npm tarball integrity (sha512, \`npm view $name@$version dist.integrity\`) | licence |
|---|---|---|---|
| $name | $version | $INTEGRITY | $LICENCE |

Files copied from the package: $files.
END
}

fetch uplot "$UPLOT"
mkdir -p "$UPLOT_DIR"
cp "$WORK/uplot/package/dist/uPlot.esm.js" "$WORK/uplot/package/dist/uPlot.min.css" \
    "$WORK/uplot/package/LICENSE" "$UPLOT_DIR/"
versions "$UPLOT_DIR" uplot "$UPLOT" "dist/uPlot.esm.js, dist/uPlot.min.css, LICENSE" \
    "Served with the admin page (/static/vendor/uplot/) for its charts."

fetch axe-core "$AXE"
mkdir -p "$AXE_DIR"
cp "$WORK/axe-core/package/axe.min.js" "$AXE_DIR/"
cp "$WORK/axe-core/package/LICENSE" "$AXE_DIR/LICENSE.txt"
cp "$WORK/axe-core/package/LICENSE-3RD-PARTY.txt" "$AXE_DIR/"
versions "$AXE_DIR" axe-core "$AXE" \
    "axe.min.js, LICENSE (as LICENSE.txt), LICENSE-3RD-PARTY.txt" \
    "Test-only: the browser tests inject it into the page; it is never served."
