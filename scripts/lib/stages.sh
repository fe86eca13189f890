# shellcheck shell=bash
#
# The staging directories of the cache installers (devenv.sh, labeler.sh,
# relay.sh): an install runs in "$LEXVIEW_DEVENV_CACHE/.<name>-*.tmp.*",
# which holds the installer's pid in .lexview-installer-pid, and is renamed
# into place when complete.

# lexview_sweep_stages NAME: remove the staging dirs of NAME's installers
# that are gone (killed outright) or started over an hour ago.
lexview_sweep_stages() {
	local stage pid
	for stage in "$LEXVIEW_DEVENV_CACHE"/."$1"-*.tmp.*; do
		[[ -d "$stage" ]] || continue
		pid="$(cat "$stage/.lexview-installer-pid" 2>/dev/null || true)"
		if [[ "$pid" =~ ^[0-9]+$ ]] && ! [[ -d "/proc/$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
			rm -rf "$stage"
		elif [[ -n "$(find "$stage" -maxdepth 0 -mmin +60 2>/dev/null)" ]]; then
			rm -rf "$stage"
		fi
	done
}
