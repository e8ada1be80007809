#!/usr/bin/env bash
# Runs leak-audit's whole test suite: unit tests of every module, then end-to-end tests that build
# Fixtures/ and run the real leak-audit binary on each scenario and its clean twin.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-dependencies.sh --with-test-tools
swift build --build-tests
swift test --skip-build "$@"
