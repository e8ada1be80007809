#!/usr/bin/env bash
# Installs what building and testing leak-audit needs, when missing: elfutils' libdw and libelf
# headers (Debian: libdw-dev, libelf-dev) and, for the tests, Python's jsonschema (JSON Schema
# checks), script(1) (the text report on a terminal), tmux (what a person sees while a run goes on)
# and Chromium (the HTML report, rendered headless). Safe to run repeatedly; does nothing when everything is there.
set -euo pipefail

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "leak-audit: need root to install $*; install libdw-dev and libelf-dev yourself" >&2; exit 1
    fi
}

# The build reads libdw's headers (libdw.so.1 itself is loaded when a report needs a frame).
if [ ! -f /usr/include/elfutils/libdwfl.h ] || [ ! -f /usr/include/dwarf.h ]; then
    echo "leak-audit: installing libdw-dev and libelf-dev" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libdw-dev libelf-dev >/dev/null
fi

# The end-to-end tests read the text report on a real terminal: script(1), from bsdutils.
if [ "${1:-}" = "--with-test-tools" ] && ! command -v script >/dev/null; then
    echo "leak-audit: installing bsdutils (script) for the terminal tests" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bsdutils >/dev/null
fi

if [ "${1:-}" = "--with-test-tools" ] && ! python3 -c 'import jsonschema' 2>/dev/null; then
    echo "leak-audit: installing Python's jsonschema for the report schema tests" >&2
    python3 -m pip install -q jsonschema 2>/dev/null \
        || { as_root apt-get update -qq && as_root apt-get install -y -qq python3-jsonschema >/dev/null; }
fi

# The HTML report is checked in a real browser: Debian's chromium, run headless.
if [ "${1:-}" = "--with-test-tools" ] && ! command -v chromium >/dev/null; then
    echo "leak-audit: installing chromium for the HTML report tests" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# The terminal tests drive a real terminal: tmux.
if [ "${1:-}" = "--with-test-tools" ] && ! command -v tmux >/dev/null; then
    echo "leak-audit: installing tmux for the terminal tests" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
fi
