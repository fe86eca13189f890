# shellcheck shell=bash
#
# Provision the TypeScript compiler (the npm package typescript) for the
# tests of the TypeScript client `appview codegen --lang ts` generates
# (appview/codegen: they compile it with `tsc --strict` and run it in Node).
#
# Source this file, then:
#
#   lexview_typescript_install   # sets and exports APPVIEW_TYPESCRIPT_DIR; returns non-zero on failure
#   lexview_typescript_cleanup   # removes half-done installs (idempotent; safe in traps)
#
# APPVIEW_TYPESCRIPT_DIR is a directory holding node_modules/typescript,
# installed with `npm ci` from the committed scripts/typescript/package-lock.json
# (typescript alone, no dependencies: ~23 MB, a few seconds cold). The cache
# is <cache>/typescript-<version>-<lock hash>/; like scripts/lib/labeler.sh,
# the install runs in a staging directory renamed into place once complete,
# and a healthy cache is used as is, offline.
#
# Tunables (environment):
#   LEXVIEW_DEVENV_CACHE   cache root, shared with the reference PDS (default <repo>/.cache)

# shellcheck source=scripts/lib/stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/stages.sh"

_lexview_typescript_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${LEXVIEW_DEVENV_CACHE:=${_lexview_typescript_repo_root}/.cache}"

LEXVIEW_TYPESCRIPT_SRC="${_lexview_typescript_repo_root}/scripts/typescript"
LEXVIEW_TYPESCRIPT_STAGE=""

_lexview_typescript_log() { printf 'typescript: %s\n' "$*" >&2; }

_lexview_typescript_dir() {
	local version hash
	version="$(sed -n 's|.*"typescript": *"\([^"]*\)".*|\1|p' "$LEXVIEW_TYPESCRIPT_SRC/package.json")"
	[[ -n "$version" ]] || return 1
	hash="$(sha256sum "$LEXVIEW_TYPESCRIPT_SRC/package-lock.json" | cut -c1-12)" || return 1
	printf '%s/typescript-%s-%s\n' "$LEXVIEW_DEVENV_CACHE" "$version" "$hash"
}

# _lexview_typescript_check DIR: succeed when DIR's tsc runs.
_lexview_typescript_check() {
	[[ -f "$1/node_modules/typescript/bin/tsc" ]] && node "$1/node_modules/typescript/bin/tsc" --version >/dev/null
}

lexview_typescript_install() {
	local dir stage
	command -v node >/dev/null 2>&1 || { _lexview_typescript_log "node not found"; return 1; }
	dir="$(_lexview_typescript_dir)" || { _lexview_typescript_log "cannot read $LEXVIEW_TYPESCRIPT_SRC/package.json"; return 1; }
	if [[ -d "$dir" ]] && ! _lexview_typescript_check "$dir"; then
		_lexview_typescript_log "cache $dir is broken; installing again"
		rm -rf "$dir" || return 1
	fi
	if [[ ! -d "$dir" ]]; then
		command -v npm >/dev/null 2>&1 || { _lexview_typescript_log "npm not found"; return 1; }
		mkdir -p "$(dirname "$dir")" || return 1
		lexview_typescript_cleanup
		stage="$(mktemp -d "$(dirname "$dir")/.$(basename "$dir").tmp.XXXXXX")" || return 1
		LEXVIEW_TYPESCRIPT_STAGE="$stage"
		if ! echo "$BASHPID" >"$stage/.lexview-installer-pid" || ! chmod 755 "$stage" ||
			! cp "$LEXVIEW_TYPESCRIPT_SRC/package.json" "$LEXVIEW_TYPESCRIPT_SRC/package-lock.json" "$stage/"; then
			lexview_typescript_cleanup; return 1
		fi
		_lexview_typescript_log "installing typescript (npm ci from scripts/typescript/package-lock.json) ..."
		if ! (cd "$stage" && npm ci --no-audit --no-fund --loglevel=error --prefer-offline >"$stage/npm-install.log" 2>&1) ||
			! _lexview_typescript_check "$stage"; then
			_lexview_typescript_log "npm ci failed; last lines of its log:"
			tail -n 30 "$stage/npm-install.log" >&2 || true
			lexview_typescript_cleanup; return 1
		fi
		if ! mv -T "$stage" "$dir" 2>/dev/null; then
			_lexview_typescript_check "$dir" || { _lexview_typescript_log "cannot install cache at $dir"; lexview_typescript_cleanup; return 1; }
		fi
		lexview_typescript_cleanup
	fi
	export APPVIEW_TYPESCRIPT_DIR="$dir"
}

lexview_typescript_cleanup() {
	if [[ -n "$LEXVIEW_TYPESCRIPT_STAGE" ]]; then
		rm -rf "$LEXVIEW_TYPESCRIPT_STAGE"
		LEXVIEW_TYPESCRIPT_STAGE=""
	fi
	lexview_sweep_stages typescript
}
