#!/usr/bin/env bash
# Runs leak-audit's whole test suite: a swift-format lint, unit tests of every module, then end-to-end tests that build
# Fixtures/ and run the real leak-audit binary on each scenario and its clean twin.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-dependencies.sh --with-test-tools
# Style first: swift-format from the toolchain, with the checked-in .swift-format.
swift format lint --strict --recursive Package.swift Sources Tests Plugins Fuzz \
    Fixtures/Package.swift Fixtures/Sources Fixtures/Tests Fixtures/WidgetKit/Package.swift Fixtures/WidgetKit/Sources
swift build --build-tests
swift test --skip-build "$@"
