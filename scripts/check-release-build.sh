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

# expect STATUS TEXT COMMAND ARGUMENT...: runs `leak-audit COMMAND ARGUMENT...`, which must exit
# with STATUS and write TEXT in its report: standard error for `run` (standard output is the
# target's), standard output or error for `report`.
expect() {
    local expected=$1 text=$2 command=$3 status=0
    shift 3
    if [[ $command == run ]]; then
        "$leak_audit" run "$@" >/dev/null 2>"$output" || status=$?
    else
        "$leak_audit" "$command" "$@" >"$output" 2>&1 || status=$?
    fi
    echo "leak-audit $command $*: exit $status" >&2
    if [[ $status != "$expected" ]] || ! grep -qF -- "$text" "$output"; then
        cat "$output" >&2
        echo "check-release-build: expected exit $expected and '$text'" >&2
        exit 1
    fi
}

expect 1 "EXCEEDED ViewModelRetention.LoginViewModel" run "$fixtures/ViewModelRetention"
# A frame's function, demangled by the Swift runtime linked into leak-audit.
expect 1 "ViewModelRetention.Presenter.open(" run "$fixtures/ViewModelRetention"
expect 0 "no type over budget" run "$fixtures/ViewModelRetention" clean
expect 1 "EXCEEDED UninstrumentedGallery.GalleryViewModel" run \
    --budget 'UninstrumentedGallery.*ViewModel=1' "$fixtures/UninstrumentedGallery"
expect 0 "no type over budget" run --budget 'UninstrumentedGallery.*ViewModel=1' "$fixtures/UninstrumentedGallery" clean
expect 1 "EXCEEDED ScreenTests.ProfileScreen" run \
    "$fixtures/FixturesPackageTests.xctest" ScreenTests.ScreenTests/testLeaksScreens
expect 0 "no type over budget" run "$fixtures/FixturesPackageTests.xctest" ScreenTests.ScreenTests/testReleasesScreens
# `leak-audit report`, whose renderers and JSON reading the audits above do not go through: the
# run's saved JSON report in each other format, and compared with itself.
expect 1 "EXCEEDED ViewModelRetention.LoginViewModel" run --output-json "$saved" "$fixtures/ViewModelRetention"
expect 1 "ViewModelRetention.Presenter.open(" report "$saved" --format text
expect 1 '"ruleId"' report "$saved" --format sarif
expect 1 "<testsuite" report "$saved" --format junit
expect 1 "::error" report "$saved" --format github
expect 1 "<!DOCTYPE html>" report "$saved" --format html
expect 0 "no finding appeared" report --diff "$saved" "$saved"
echo "check-release-build: $leak_audit audits and renders as the tested build does" >&2
