# shellcheck shell=bash
#
# Provision the reference labeler (the npm package @skyware/labeler, a
# TypeScript labeler server) for end-to-end tests of label subscriptions.
#
# Source this file, then:
#
#   lexview_labeler_install   # sets and exports APPVIEW_LABELER_DIR; returns non-zero on failure
#   lexview_labeler_cleanup   # removes half-done installs: this shell's, and those
#                             # whose installer died (idempotent; safe in traps)
#
# APPVIEW_LABELER_DIR is a directory holding node_modules/ with the packages
# of scripts/labeler/package-lock.json; scripts/labeler/labeler.mjs resolves
# its modules from there and appview/internal/testing/reflabeler runs that script.
#
# The packages are installed with `npm ci` from the committed lock file, so
# every install gets the same versions (@skyware/labeler 0.2.0 and its
# dependencies; the SQLite engine, libsql, comes as a prebuilt binary in an
# npm platform package such as @libsql/linux-x64-gnu: nothing is compiled or
# fetched from elsewhere). ~55 MB, 10-20 s cold. The cache is
# <cache>/labeler-<version>-<lock hash>/, so editing the lock file makes a new
# one. Like scripts/lib/devenv.sh, the install runs in a staging directory
# renamed into place only once it is complete and works; a healthy cache is
# used as is, offline (~0.3 s to check).
#
# Tunables (environment):
#   LEXVIEW_DEVENV_CACHE   cache root, shared with the reference PDS (default <repo>/.cache)
#
# The functions do their own error checking and never exit the calling shell.

# shellcheck source=scripts/lib/stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/stages.sh"

_lexview_labeler_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${LEXVIEW_DEVENV_CACHE:=${_lexview_labeler_repo_root}/.cache}"

LEXVIEW_LABELER_SRC="${_lexview_labeler_repo_root}/scripts/labeler"
LEXVIEW_LABELER_STAGE="" # staging dir, removed by lexview_labeler_cleanup if interrupted

_lexview_labeler_log() { printf 'labeler: %s\n' "$*" >&2; }

# _lexview_labeler_dir: the cache directory for the committed lock file.
_lexview_labeler_dir() {
	local version hash
	version="$(sed -n 's|.*"@skyware/labeler": *"\([^"]*\)".*|\1|p' "$LEXVIEW_LABELER_SRC/package.json")"
	[[ -n "$version" ]] || return 1
	hash="$(sha256sum "$LEXVIEW_LABELER_SRC/package-lock.json" | cut -c1-12)" || return 1
	printf '%s/labeler-%s-%s\n' "$LEXVIEW_DEVENV_CACHE" "$version" "$hash"
}

# _lexview_labeler_check DIR: succeed when DIR holds the pinned version and
# the native libsql binding loads in this Node. Offline; ~0.3 s.
_lexview_labeler_check() {
	local dir="$1"
	[[ -d "$dir/node_modules/@skyware/labeler" ]] || return 1
	node -e '
		const fs = require("fs"), path = require("path"), { createRequire } = require("module");
		const dir = process.argv[1];
		const json = (p) => JSON.parse(fs.readFileSync(path.join(dir, p), "utf8"));
		const want = json("package.json").dependencies["@skyware/labeler"];
		const got = json("node_modules/@skyware/labeler/package.json").version;
		if (got !== want) { console.error("@skyware/labeler is " + got + ", want " + want); process.exit(1); }
		const client = createRequire(path.join(dir, "package.json")).resolve("@libsql/client");
		const Database = createRequire(client)("libsql");
		new Database(":memory:").close();
	' "$dir"
}

# _lexview_labeler_check_full DIR: the check, then a LabelerServer signs and
# stores a label there (scripts/labeler/labeler.mjs --check; ~1.5 s).
_lexview_labeler_check_full() {
	_lexview_labeler_check "$1" && APPVIEW_LABELER_DIR="$1" node "$LEXVIEW_LABELER_SRC/labeler.mjs" --check
}

# _lexview_labeler_fetch DEST: install into DEST, which must not exist yet.
# Atomic: DEST appears only once it is complete.
_lexview_labeler_fetch() {
	local dest="$1" stage t0=$SECONDS
	mkdir -p "$(dirname "$dest")" || return 1
	command -v npm >/dev/null 2>&1 || { _lexview_labeler_log "npm not found; cannot install @skyware/labeler"; return 1; }
	lexview_labeler_cleanup # leftovers of installs killed outright

	stage="$(mktemp -d "$(dirname "$dest")/.$(basename "$dest").tmp.XXXXXX")" || return 1
	LEXVIEW_LABELER_STAGE="$stage"
	if ! echo "$BASHPID" >"$stage/.lexview-installer-pid" || ! chmod 755 "$stage" ||
		! cp "$LEXVIEW_LABELER_SRC/package.json" "$LEXVIEW_LABELER_SRC/package-lock.json" "$stage/"; then
		lexview_labeler_cleanup; return 1
	fi
	_lexview_labeler_log "installing @skyware/labeler (npm ci from scripts/labeler/package-lock.json) ..."
	if ! (cd "$stage" && npm ci --no-audit --no-fund --loglevel=error --prefer-offline >"$stage/npm-install.log" 2>&1); then
		_lexview_labeler_log "npm ci failed; last lines of its log:"
		tail -n 30 "$stage/npm-install.log" >&2 || true
		lexview_labeler_cleanup; return 1
	fi
	if ! _lexview_labeler_check_full "$stage"; then
		_lexview_labeler_log "the installed packages do not load"
		lexview_labeler_cleanup; return 1
	fi
	# rename(2) fails if another run put a cache in place first: keep theirs.
	if ! mv -T "$stage" "$dest" 2>/dev/null; then
		_lexview_labeler_check "$dest" >/dev/null 2>&1 || { _lexview_labeler_log "cannot install cache at $dest"; lexview_labeler_cleanup; return 1; }
		lexview_labeler_cleanup
	fi
	LEXVIEW_LABELER_STAGE=""
	_lexview_labeler_log "cached in $dest ($(du -sh "$dest" 2>/dev/null | cut -f1), $((SECONDS - t0))s)"
}

# lexview_labeler_install: make sure the cache is in place; export APPVIEW_LABELER_DIR.
lexview_labeler_install() {
	local dir
	command -v node >/dev/null 2>&1 || { _lexview_labeler_log "node not found"; return 1; }
	dir="$(_lexview_labeler_dir)" || { _lexview_labeler_log "cannot read $LEXVIEW_LABELER_SRC/package.json"; return 1; }
	if [[ -d "$dir" ]] && ! _lexview_labeler_check "$dir"; then
		_lexview_labeler_log "cache $dir is broken (see above); installing again"
		rm -rf "$dir" || return 1
	fi
	if [[ ! -d "$dir" ]]; then
		_lexview_labeler_fetch "$dir" || return 1
	fi
	export APPVIEW_LABELER_DIR="$dir"
}

# lexview_labeler_cleanup: remove the staging dir of this shell's unfinished
# install, and those of installers that are gone or started over an hour ago.
lexview_labeler_cleanup() {
	if [[ -n "$LEXVIEW_LABELER_STAGE" ]]; then
		rm -rf "$LEXVIEW_LABELER_STAGE"
		LEXVIEW_LABELER_STAGE=""
	fi
	lexview_sweep_stages labeler
}
