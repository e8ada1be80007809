#!/usr/bin/env bash
# Builds leak-audit and a bundled leaky example (a view model kept alive by a long-lived owner
# after its screen closed), runs the example under leak-audit, and shows the report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-dependencies.sh
echo "==> building leak-audit and the example (the first build takes a minute or two)" >&2
swift build -c release >/dev/null
swift build --package-path Fixtures --product ViewModelRetention >/dev/null
echo "==> .build/release/leak-audit run Fixtures/.build/debug/ViewModelRetention" >&2
status=0
.build/release/leak-audit run Fixtures/.build/debug/ViewModelRetention || status=$?
echo "==> leak-audit exited with $status (1: a type went over its budget), as expected for this example" >&2
[ "$status" -eq 1 ]
