#!/usr/bin/env bash
# Re-create static/vendor/ (the GraphiQL page's and the dashboard's browser assets) from the npm registry.
#
# The inspector serves GraphiQL with no CDN: every file the page loads lives under
# static/vendor/<package>@<version>/ and is served by the app itself. This script
# fetches the pinned package tarballs with `npm pack` into a throw-away directory,
# checks each tarball's integrity against the value pinned below, and copies only the
# prebuilt browser files (plus license texts) into static/vendor/. Nothing is built
# and nothing is installed into the repository (no node_modules, no package.json).
#
# Usage:  bash scripts/vendor-frontend.sh          # (re)vendor into static/vendor/
# Needs:  npm (any recent version) reaching the npm registry; sha256sum.
#
# To move to new versions: change the pins below, run the script once (it stops on the
# integrity mismatch and prints the registry's value), check what changed, put the new
# integrity in, run again, update the <script>/<link> paths in static/graphiql.html and
# the table in static/vendor/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/static/vendor"

# name  version  npm integrity (sha512 of the registry tarball)
PINS=(
  "react 18.3.1 sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ=="
  "react-dom 18.3.1 sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw=="
  "graphiql 3.8.3 sha512-cuPDYtXVKV86Pu5PHBX642Odi/uVEE2y1Jxq5rGO/Qy1G2lRp7ZZ7a/T30RzxhuLSWo9zUbzq0P3U49//H0Ugw=="
  "@graphiql/plugin-explorer 3.2.5 sha512-gM9UwD0PcOHe+XrRY2YMIV4pUrDIfV0YBQ5kQUZxk0BuVvZO9xk06XFv5plBKDAwtxbsuq+nET4i9FJCiYev2g=="
  # Not served itself: bundled inside @graphiql/plugin-explorer's UMD build; fetched
  # only for its LICENSE text.
  "graphiql-explorer 0.9.0 sha512-fZC/wsuatqiQDO2otchxriFO0LaWIo/ovF/CQJ1yOudmY0P7pzDiP+l9CEHUiWbizk3e99x6DQG4XG1VxA+d6A=="
  # The dashboard (static/ui/): htm's "preact/standalone" ES module is Preact 10 with its
  # hooks and htm in one 13 KB file, importable by a browser as published.
  "htm 3.1.1 sha512-983Vyg8NwUE7JkZ6NmOqpCZ+sh1bKv2iYTlUkzlWmA5JD2acKoxd4KVxbMmxX/85mtfdnDmTFoNKcg5DGAvxNQ=="
  # Not served itself: bundled inside htm's standalone module; fetched for its LICENSE.
  "preact 10.6.6 sha512-dgxpTFV2vs4vizwKohYKkk7g7rmp1wOOcfd4Tz3IB3Wi+ivZzsn/SpeKJhRENSE+n8sUfsAl4S3HiCVT923ABw=="
)

command -v npm >/dev/null || { echo "vendor-frontend: npm is required" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# Fetch and verify every tarball before touching static/vendor/.
for pin in "${PINS[@]}"; do
  read -r name version want <<<"$pin"
  safe="${name//\//-}"; safe="${safe#@}"
  echo "fetching $name@$version" >&2
  # A private cache so the registry (not whatever a local cache holds) is what we check.
  npm pack "$name@$version" --pack-destination "$WORK" --cache "$WORK/npm-cache" \
    --ignore-scripts --json --loglevel=error >"$WORK/$safe.json"
  read -r got tgz < <(node -e 'const p=JSON.parse(require("fs").readFileSync(process.argv[1]))[0];console.log(p.integrity+" "+p.filename)' "$WORK/$safe.json")
  if [[ "$got" != "$want" ]]; then
    echo "vendor-frontend: integrity mismatch for $name@$version" >&2
    echo "  pinned:   $want" >&2
    echo "  registry: $got" >&2
    exit 1
  fi
  mkdir -p "$WORK/x/$safe"
  tar -xzf "$WORK/$tgz" -C "$WORK/x/$safe"
done

X="$WORK/x"
OUT="$WORK/out"
cp_file() { # cp_file SRC DEST_RELATIVE_TO_OUT
  mkdir -p "$(dirname "$OUT/$2")"
  cp "$1" "$OUT/$2"
}

cp_file "$X/react/package/umd/react.production.min.js" "react@18.3.1/umd/react.production.min.js"
cp_file "$X/react/package/LICENSE" "react@18.3.1/LICENSE"

cp_file "$X/react-dom/package/umd/react-dom.production.min.js" "react-dom@18.3.1/umd/react-dom.production.min.js"
cp_file "$X/react-dom/package/LICENSE" "react-dom@18.3.1/LICENSE"

# graphiql 3.x's "graphiql.min.js" is a webpack UMD bundle that is not actually minified
# (~3.4 MB); it is used byte-for-byte as published. Its source map is not vendored.
cp_file "$X/graphiql/package/graphiql.min.js" "graphiql@3.8.3/graphiql.min.js"
cp_file "$X/graphiql/package/graphiql.min.css" "graphiql@3.8.3/graphiql.min.css"
cp_file "$X/graphiql/package/LICENSE" "graphiql@3.8.3/LICENSE"

EXP="@graphiql/plugin-explorer@3.2.5"
# Flattened (no dist/ folder): the repository's .gitignore ignores every "dist/".
cp_file "$X/graphiql-plugin-explorer/package/dist/index.umd.js" "$EXP/index.umd.js"
cp_file "$X/graphiql-plugin-explorer/package/dist/style.css" "$EXP/style.css"
# The plugin's tarball ships no LICENSE file (package.json says MIT). It is published
# from the same graphql/graphiql monorepo as graphiql, whose MIT LICENSE applies.
cp_file "$X/graphiql/package/LICENSE" "$EXP/LICENSE"
cp_file "$X/graphiql-explorer/package/LICENSE" "$EXP/LICENSE.graphiql-explorer"

cp_file "$X/htm/package/preact/standalone.module.js" "htm@3.1.1/preact/standalone.module.js"
cp_file "$X/htm/package/LICENSE" "htm@3.1.1/LICENSE"
cp_file "$X/preact/package/LICENSE" "htm@3.1.1/LICENSE.preact"

# Replace only the directories this script owns; keep README.md and anything else.
mkdir -p "$DEST"
rm -rf "$DEST"/react@* "$DEST"/react-dom@* "$DEST"/graphiql@* "$DEST"/@graphiql/plugin-explorer@* "$DEST"/htm@*
cp -R "$OUT"/. "$DEST"/

echo "vendored into $DEST:" >&2
(cd "$DEST" && find . -type f ! -name README.md | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum)
echo "total: $(cd "$DEST" && find . -type f ! -name README.md -print0 | du -cb --files0-from=- | tail -1 | cut -f1) bytes" >&2
