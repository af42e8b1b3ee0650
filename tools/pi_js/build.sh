#!/usr/bin/env bash
# Build pi 1.6.0's own SessionManager benchmark and RpcClient as node bundles, outside the repository.
#
#   bash tools/pi_js/build.sh            # builds into ${SESSIONTREE_PI_JS_DIR:-~/.cache/sessiontree-pi-js}
#   bash tools/pi_js/build.sh --force    # rebuilds the bundles even when they are up to date
#   bash tools/pi_js/build.sh --print-dir
#
# Installs the packages pinned in tools/pi_js/package.json (pi's coding agent 1.6.0 and esbuild) into
# DIR/npm with npm, then tools/pi_js/build.mjs writes DIR/session-bench.mjs, DIR/rpc-client.mjs and
# DIR/exec-shim.mjs (and pi's TypeScript sources, from its source maps, under DIR/src for reading).
# Idempotent: a second run with the same inputs only compares a stamp (well under a second).
# npm retries a failed fetch once (SESSIONTREE_NPM_FETCH_RETRIES sets how many times; 0: fail at once).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${SESSIONTREE_PI_JS_DIR:-${HOME}/.cache/sessiontree-pi-js}
force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        --print-dir) echo "$dir"; exit 0 ;;
        -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build.sh: unknown option $arg (known: --force, --print-dir, --help)" >&2; exit 2 ;;
    esac
done

fail() { echo "build.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node is not installed (node 20 or newer is needed; Debian: apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (Debian: apt-get install npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] 2>/dev/null || fail "node $(node --version) is too old: node 20 or newer is needed"

mkdir -p "$dir/npm"
dir=$(cd "$dir" && pwd)

# One build at a time (the benchmark and a test run may start it together).
exec 9>"$dir/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

# The packages: installed again only when tools/pi_js/package.json changed.
if ! cmp -s "$here/package.json" "$dir/npm/package.json" || [ ! -f "$dir/npm/.installed" ]; then
    rm -f "$dir/npm/.installed"
    cp "$here/package.json" "$dir/npm/package.json"
    echo "build.sh: installing $(node -p 'Object.entries(require(process.argv[1]).dependencies).map(([n, v]) => n + "@" + v).join(", ")' "$here/package.json") into $dir/npm" >&2
    log="$dir/npm/install.log"
    start=$(date +%s)
    if ! (cd "$dir/npm" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
            --fetch-retries="${SESSIONTREE_NPM_FETCH_RETRIES:-1}" --fetch-retry-maxtimeout=10000 --fetch-timeout=60000 >"$log" 2>&1); then
        tail -n 15 "$log" >&2 || true
        fail "npm install failed (log: $log): is the npm registry reachable from this machine?"
    fi
    touch "$dir/npm/.installed"
    echo "build.sh: installed in $(( $(date +%s) - start )) s" >&2
fi

args=(--dir "$dir")
[ "$force" = 1 ] && args+=(--force)
exec node "$here/build.mjs" "${args[@]}"
