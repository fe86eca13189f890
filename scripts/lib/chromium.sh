# shellcheck shell=bash
#
# Provision a headless browser for the dashboard's browser tests
# (appview/internal/web/dashboard, driven with github.com/chromedp/chromedp).
#
# Source this file, then:
#
#   lexview_chromium_install   # returns non-zero when no browser is usable
#
# A browser is usable when $LEXVIEW_CHROMIUM, Debian's chromium
# (/usr/lib/chromium/chromium) or one of chromium, chromium-browser,
# google-chrome, google-chrome-stable on PATH exists, the same lookup as
# the tests'. When none does and the shell runs as root with apt-get
# (CI), Debian's chromium package is installed (~75 MB of packages, about
# a minute cold). The functions never exit the calling shell.

_lexview_chromium_log() { printf 'chromium: %s\n' "$*" >&2; }

# _lexview_chromium_found: prints the browser the tests would use.
_lexview_chromium_found() {
	if [[ -n "${LEXVIEW_CHROMIUM:-}" ]]; then
		[[ -x "$LEXVIEW_CHROMIUM" ]] && printf '%s\n' "$LEXVIEW_CHROMIUM"
		return
	fi
	if [[ -x /usr/lib/chromium/chromium ]]; then
		printf '%s\n' /usr/lib/chromium/chromium
		return
	fi
	local name
	for name in chromium chromium-browser google-chrome google-chrome-stable; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return
		fi
	done
	return 1
}

lexview_chromium_install() {
	local bin
	if bin="$(_lexview_chromium_found)" && [[ -n "$bin" ]]; then
		_lexview_chromium_log "using $bin"
		return 0
	fi
	if [[ -n "${LEXVIEW_CHROMIUM:-}" ]]; then
		_lexview_chromium_log "LEXVIEW_CHROMIUM=$LEXVIEW_CHROMIUM is not an executable"
		return 1
	fi
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		_lexview_chromium_log "no browser found, and installing Debian's chromium needs root and apt-get"
		return 1
	fi
	_lexview_chromium_log "installing Debian's chromium (apt-get install chromium) ..."
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; then
		# The package lists may be missing (fresh containers): update once.
		DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || {
			_lexview_chromium_log "apt-get install chromium failed"
			return 1
		}
	fi
	bin="$(_lexview_chromium_found)" || {
		_lexview_chromium_log "chromium was installed but no browser binary was found"
		return 1
	}
	_lexview_chromium_log "installed $bin"
}
