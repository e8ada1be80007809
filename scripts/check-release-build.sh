#!/usr/bin/env bash
# Checks the leak-audit that scripts/build-release.sh makes (the Swift runtime linked into the
# executable, the helper libraries beside it) on the fixtures the test suite audits with its debug
# build: a program that links LeakMonitor, one that does not (`--budget`, which preloads a helper
# library), and an XCTest bundle (whose test observer is the other helper library), each with its
# clean twin; then `leak-audit report` renders one run's saved JSON in every format. Prints each
# exit code; exits 1 at the first that differs from the expected.
#
# Usage: scripts/check-release-build.sh [DIRECTORY]   (build-release.sh's, default the repository's
#        .build-release)
set -euo pipefail
leak_audit=$("$(dirname "$0")/build-release.sh" "$@")
cd "$(dirname "$0")/.."
swift build --build-tests --package-path Fixtures >/dev/null
fixtures=$(swift build --package-path Fixtures --show-bin-path)
output=$(mktemp)
saved=$(mktemp --suffix=.json)
trap 'rm -f "$output" "$saved"' EXIT

# expect STATUS TEXT ARGUMENT...: runs `leak-audit run ARGUMENT...`, which must exit with STATUS
# and write TEXT in its report (standard error).
expect() {
    local expected=$1 text=$2 status=0
    shift 2
    "$leak_audit" run "$@" >/dev/null 2>"$output" || status=$?
    echo "leak-audit run $*: exit $status" >&2
    if [[ $status != "$expected" ]] || ! grep -qF -- "$text" "$output"; then
        cat "$output" >&2
        echo "check-release-build: expected exit $expected and '$text'" >&2
        exit 1
    fi
}

expect 1 "EXCEEDED ViewModelRetention.LoginViewModel" "$fixtures/ViewModelRetention"
# A frame's function, demangled by the Swift runtime linked into leak-audit.
expect 1 "ViewModelRetention.Presenter.open(" "$fixtures/ViewModelRetention"
expect 0 "no type over budget" "$fixtures/ViewModelRetention" clean
expect 1 "EXCEEDED UninstrumentedGallery.GalleryViewModel" \
    --budget 'UninstrumentedGallery.*ViewModel=1' "$fixtures/UninstrumentedGallery"
expect 0 "no type over budget" --budget 'UninstrumentedGallery.*ViewModel=1' "$fixtures/UninstrumentedGallery" clean
expect 1 "EXCEEDED ScreenTests.ProfileScreen" \
    "$fixtures/FixturesPackageTests.xctest" ScreenTests.ScreenTests/testLeaksScreens
expect 0 "no type over budget" "$fixtures/FixturesPackageTests.xctest" ScreenTests.ScreenTests/testReleasesScreens
# `leak-audit report`, whose renderers and JSON reading the audits above do not go through: the
# run's saved JSON report in each other format, and compared with itself.
expect 1 "EXCEEDED ViewModelRetention.LoginViewModel" --output-json "$saved" "$fixtures/ViewModelRetention"
# render STATUS TEXT ARGUMENT...: `leak-audit report ARGUMENT...` must exit with STATUS and write TEXT
# on standard output.
render() {
    local expected=$1 text=$2 status=0
    shift 2
    "$leak_audit" report "$@" >"$output" 2>&1 || status=$?
    echo "leak-audit report $*: exit $status" >&2
    if [[ $status != "$expected" ]] || ! grep -qF -- "$text" "$output"; then
        cat "$output" >&2
        echo "check-release-build: expected exit $expected and '$text'" >&2
        exit 1
    fi
}
render 1 "ViewModelRetention.Presenter.open(" "$saved" --format text
render 1 '"ruleId"' "$saved" --format sarif
render 1 "<testsuite" "$saved" --format junit
render 1 "::error" "$saved" --format github
render 1 "<!DOCTYPE html>" "$saved" --format html
render 0 "no finding appeared" --diff "$saved" "$saved"
echo "check-release-build: $leak_audit audits and renders as the tested build does" >&2
