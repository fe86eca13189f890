# shellcheck shell=bash
#
# Provision the Bluesky reference PDS (the npm package @atproto/dev-env, which
# also brings @atproto/pds and an in-memory PLC directory) for end-to-end tests.
#
# Source this file, then:
#
#   lexview_devenv_install   # sets and exports APPVIEW_DEVENV_DIR; returns non-zero on failure
#   lexview_devenv_cleanup   # removes half-done installs: this shell's, and those
#                            # whose installer died (idempotent; safe in traps)
#
# APPVIEW_DEVENV_DIR is a directory holding node_modules/ with the pinned
# packages; scripts/devenv/start-network.mjs resolves its modules from there
# and appview/internal/testing/refpds runs that script.
#
# The packages are installed once with `npm install` (better-sqlite3 compiles
# from source: 2-3 minutes, ~360 MB) and cached under
# <repo>/.cache/devenv-<version>/ (git-ignored). The install runs in a staging
# directory next to it that is renamed into place only once it is complete and
# loads, so an interrupted install never leaves a half-filled cache (and a
# killed one leaves a staging directory that the next cleanup removes, as it
# records the pid of its installer). A healthy
# cache is used as is, without touching the network; one that no longer loads
# (e.g. Node was upgraded to a different ABI) is installed again.
#
# Tunables (environment):
#   LEXVIEW_DEVENV_VERSION       npm version of @atproto/dev-env (default below)
#   LEXVIEW_DEVENV_PDS_VERSION   npm version of @atproto/pds (default below)
#   LEXVIEW_DEVENV_CACHE         cache root (default <repo>/.cache)
#
# Newer releases than the defaults need Node >= 22. The functions do their
# own error checking (they are usually called from an `if`, where `set -e`
# does not apply) and never exit the calling shell.

# shellcheck source=scripts/lib/stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/stages.sh"

: "${LEXVIEW_DEVENV_VERSION:=0.3.215}"
: "${LEXVIEW_DEVENV_PDS_VERSION:=0.4.217}"

_lexview_devenv_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${LEXVIEW_DEVENV_CACHE:=${_lexview_devenv_repo_root}/.cache}"

LEXVIEW_DEVENV_STAGE=""   # staging dir, removed by lexview_devenv_cleanup if interrupted

_lexview_devenv_log() { printf 'devenv: %s\n' "$*" >&2; }

# _lexview_devenv_check DIR: succeed when DIR holds the pinned versions and
# the native SQLite binding loads in this Node. Offline; takes ~0.3 s.
_lexview_devenv_check() {
	local dir="$1"
	[[ -d "$dir/node_modules/@atproto/dev-env" ]] || return 1
	node -e '
		const fs = require("fs"), path = require("path"), { createRequire } = require("module");
		const [dir, wantDev, wantPds] = process.argv.slice(1);
		const version = (p) => JSON.parse(fs.readFileSync(path.join(dir, "node_modules", p, "package.json"), "utf8")).version;
		const fail = (msg) => { console.error(msg); process.exit(1); };
		if (version("@atproto/dev-env") !== wantDev) fail("@atproto/dev-env is " + version("@atproto/dev-env") + ", want " + wantDev);
		if (version("@atproto/pds") !== wantPds) fail("@atproto/pds is " + version("@atproto/pds") + ", want " + wantPds);
		// dev-env must use the pinned PDS, not a nested copy of another version.
		if (fs.existsSync(path.join(dir, "node_modules/@atproto/dev-env/node_modules/@atproto/pds"))) fail("@atproto/dev-env has its own nested @atproto/pds");
		const req = createRequire(createRequire(path.join(dir, "package.json")).resolve("@atproto/pds"));
		const Database = req("better-sqlite3");
		new Database(":memory:").close();
	' "$dir" "$LEXVIEW_DEVENV_VERSION" "$LEXVIEW_DEVENV_PDS_VERSION"
}

# _lexview_devenv_fetch DEST: install the pinned packages into DEST, which
# must not exist yet. Atomic: DEST appears only once it is complete.
_lexview_devenv_fetch() {
	local dest="$1" stage t0=$SECONDS
	mkdir -p "$(dirname "$dest")" || return 1
	command -v npm >/dev/null 2>&1 || { _lexview_devenv_log "npm not found; cannot install @atproto/dev-env"; return 1; }
	lexview_devenv_cleanup # leftovers of installs killed outright

	# Stage inside the cache dir so the final mv is a same-filesystem rename.
	stage="$(mktemp -d "$(dirname "$dest")/.$(basename "$dest").tmp.XXXXXX")" || return 1
	LEXVIEW_DEVENV_STAGE="$stage"
	# Whose it is, for lexview_devenv_cleanup in other shells.
	if ! echo "$BASHPID" >"$stage/.lexview-installer-pid" || ! chmod 755 "$stage"; then
		lexview_devenv_cleanup; return 1
	fi
	# The override keeps every dependent on the pinned PDS.
	cat >"$stage/package.json" <<EOF
{
  "name": "lexview-devenv",
  "private": true,
  "description": "Cache of the Bluesky reference PDS for Lexview tests (scripts/lib/devenv.sh)",
  "dependencies": {
    "@atproto/dev-env": "${LEXVIEW_DEVENV_VERSION}",
    "@atproto/pds": "${LEXVIEW_DEVENV_PDS_VERSION}"
  },
  "overrides": {
    "@atproto/pds": "${LEXVIEW_DEVENV_PDS_VERSION}"
  }
}
EOF
	_lexview_devenv_log "installing @atproto/dev-env@${LEXVIEW_DEVENV_VERSION} and @atproto/pds@${LEXVIEW_DEVENV_PDS_VERSION} (compiles better-sqlite3; 2-3 minutes) ..."
	if ! (cd "$stage" && npm install --no-audit --no-fund --loglevel=error --prefer-offline >"$stage/npm-install.log" 2>&1); then
		_lexview_devenv_log "npm install failed; last lines of its log:"
		tail -n 30 "$stage/npm-install.log" >&2 || true
		lexview_devenv_cleanup; return 1
	fi
	if ! _lexview_devenv_check "$stage"; then
		_lexview_devenv_log "the installed packages do not load"
		lexview_devenv_cleanup; return 1
	fi
	# rename(2) fails if another run put a cache in place first: keep theirs.
	if ! mv -T "$stage" "$dest" 2>/dev/null; then
		_lexview_devenv_check "$dest" >/dev/null 2>&1 || { _lexview_devenv_log "cannot install cache at $dest"; lexview_devenv_cleanup; return 1; }
		lexview_devenv_cleanup
	fi
	LEXVIEW_DEVENV_STAGE=""
	_lexview_devenv_log "cached in $dest ($(du -sh "$dest" 2>/dev/null | cut -f1), $((SECONDS - t0))s)"
}

# lexview_devenv_install: make sure the cache is in place; export APPVIEW_DEVENV_DIR.
lexview_devenv_install() {
	local dir="${LEXVIEW_DEVENV_CACHE}/devenv-${LEXVIEW_DEVENV_VERSION}"
	command -v node >/dev/null 2>&1 || { _lexview_devenv_log "node not found"; return 1; }
	if [[ -d "$dir" ]] && ! _lexview_devenv_check "$dir"; then
		_lexview_devenv_log "cache $dir is broken (see above); installing again"
		rm -rf "$dir" || return 1
	fi
	if [[ ! -d "$dir" ]]; then
		_lexview_devenv_fetch "$dir" || return 1
	fi
	export APPVIEW_DEVENV_DIR="$dir"
}

# lexview_devenv_cleanup: remove the staging dir of this shell's unfinished
# install, and those of installers that are gone (killed outright) or started
# over an hour ago.
lexview_devenv_cleanup() {
	if [[ -n "$LEXVIEW_DEVENV_STAGE" ]]; then
		rm -rf "$LEXVIEW_DEVENV_STAGE"
		LEXVIEW_DEVENV_STAGE=""
	fi
	lexview_sweep_stages devenv
}
