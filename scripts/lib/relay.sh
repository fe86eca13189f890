# shellcheck shell=bash
#
# Provision indigo's relay (github.com/bluesky-social/indigo/cmd/relay, the
# stock binary) for end-to-end tests of the firehose source through a relay.
#
# Source this file, then:
#
#   lexview_relay_install   # sets and exports APPVIEW_RELAY_BIN; returns non-zero on failure
#   lexview_relay_cleanup   # removes half-done builds: this shell's, and those
#                           # whose builder died (idempotent; safe in traps)
#
# APPVIEW_RELAY_BIN is the relay binary; appview/internal/testing/refrelay runs it in
# front of the reference PDS.
#
# The version is the one of indigo in go.mod, so the relay and the indigo
# code Lexview verifies commits with come from the same commit. It is built
# with `go install github.com/bluesky-social/indigo/cmd/relay@<version>`
# (with indigo's own go.mod and go.sum, checked against the checksum
# database like any module; cgo, for its SQLite driver): ~45 MB, 1-2
# minutes cold, through the Go module proxy. The cache is
# <cache>/relay-<version>/relay. Like scripts/lib/devenv.sh, the build runs
# in a staging directory renamed into place only once the binary runs and
# reports the pinned version; a healthy cache is used as is, offline
# (~0.1 s to check).
#
# Tunables (environment):
#   LEXVIEW_DEVENV_CACHE   cache root, shared with the reference PDS (default <repo>/.cache)
#
# The functions do their own error checking and never exit the calling shell.

# shellcheck source=scripts/lib/stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/stages.sh"

_lexview_relay_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${LEXVIEW_DEVENV_CACHE:=${_lexview_relay_repo_root}/.cache}"

LEXVIEW_RELAY_STAGE="" # staging dir, removed by lexview_relay_cleanup if interrupted

_lexview_relay_log() { printf 'relay: %s\n' "$*" >&2; }

# _lexview_relay_version: indigo's version in go.mod.
_lexview_relay_version() {
	awk '$1 == "github.com/bluesky-social/indigo" { print $2; exit }' "$_lexview_relay_repo_root/go.mod"
}

# _lexview_relay_check BIN VERSION: succeed when BIN runs and is VERSION.
# Offline.
_lexview_relay_check() {
	local bin="$1" want="$2" got
	[[ -f "$bin" && -x "$bin" ]] || return 1
	got="$("$bin" --version 2>/dev/null)" || return 1
	[[ "$got" == "relay version $want" ]] || { _lexview_relay_log "$bin is '$got', want version $want"; return 1; }
}

# _lexview_relay_fetch DIR VERSION: build the relay into DIR, which must not
# exist yet. Atomic: DIR appears only once it holds a working binary.
_lexview_relay_fetch() {
	local dest="$1" version="$2" stage t0=$SECONDS
	mkdir -p "$(dirname "$dest")" || return 1
	command -v go >/dev/null 2>&1 || { _lexview_relay_log "go not found; cannot build the relay"; return 1; }
	lexview_relay_cleanup # leftovers of builds killed outright

	stage="$(mktemp -d "$(dirname "$dest")/.$(basename "$dest").tmp.XXXXXX")" || return 1
	LEXVIEW_RELAY_STAGE="$stage"
	if ! echo "$BASHPID" >"$stage/.lexview-installer-pid" || ! chmod 755 "$stage"; then
		lexview_relay_cleanup; return 1
	fi
	_lexview_relay_log "building github.com/bluesky-social/indigo/cmd/relay@${version} (1-2 minutes) ..."
	# Outside the repository, so that nothing of Lexview's module applies.
	if ! (cd "$stage" && GOBIN="$stage" GOFLAGS="" GOWORK=off CGO_ENABLED=1 \
		go install "github.com/bluesky-social/indigo/cmd/relay@${version}" >"$stage/go-install.log" 2>&1); then
		_lexview_relay_log "go install failed; last lines of its log:"
		tail -n 30 "$stage/go-install.log" >&2 || true
		lexview_relay_cleanup; return 1
	fi
	if ! _lexview_relay_check "$stage/relay" "$version"; then
		_lexview_relay_log "the built relay does not run"
		lexview_relay_cleanup; return 1
	fi
	# rename(2) fails if another run put a cache in place first: keep theirs.
	if ! mv -T "$stage" "$dest" 2>/dev/null; then
		_lexview_relay_check "$dest/relay" "$version" || { _lexview_relay_log "cannot install cache at $dest"; lexview_relay_cleanup; return 1; }
		lexview_relay_cleanup
	fi
	LEXVIEW_RELAY_STAGE=""
	_lexview_relay_log "cached in $dest ($(du -sh "$dest" 2>/dev/null | cut -f1), $((SECONDS - t0))s)"
}

# lexview_relay_install: make sure the cache is in place; export APPVIEW_RELAY_BIN.
lexview_relay_install() {
	local version dir
	version="$(_lexview_relay_version)"
	[[ -n "$version" ]] || { _lexview_relay_log "no github.com/bluesky-social/indigo in go.mod"; return 1; }
	dir="${LEXVIEW_DEVENV_CACHE}/relay-${version}"
	if [[ -d "$dir" ]] && ! _lexview_relay_check "$dir/relay" "$version"; then
		_lexview_relay_log "cache $dir is broken; building again"
		rm -rf "$dir" || return 1
	fi
	if [[ ! -d "$dir" ]]; then
		_lexview_relay_fetch "$dir" "$version" || return 1
	fi
	export APPVIEW_RELAY_BIN="$dir/relay"
}

# lexview_relay_cleanup: remove the staging dir of this shell's unfinished
# build, and those of builders that are gone or started over an hour ago.
lexview_relay_cleanup() {
	if [[ -n "$LEXVIEW_RELAY_STAGE" ]]; then
		rm -rf "$LEXVIEW_RELAY_STAGE"
		LEXVIEW_RELAY_STAGE=""
	fi
	lexview_sweep_stages relay
}
