#!/usr/bin/env bash
# Runs leak-audit on the test suites of real Swift packages and prints one line per package: the
# tests each run executed, the exit codes plain and audited, the tests blamed and how many of them
# have a retaining path, the cost in time (the wall-time ratios of `--leaks-per-test --census` and
# of `--leaks-per-test --census --retainers` to the plain run), the size of the reports, and what
# went wrong (a trap, a timeout, processes left behind). The results behind docs/real-packages.md
# and docs/benchmarks.md.
#
# For each OWNER/NAME@VERSION it:
#   1. clones /opt/swift-packages/OWNER/NAME.git into EVAL_DIR/NAME at the tag VERSION (once: an
#      existing clone at that tag is kept), applies the small local changes the suite needs to build
#      with Swift 6.3 on Linux (apply_fixes below, data only: none for most packages), and builds its
#      tests once (`swift build --build-tests`; skipped when the clone was already built; a build
#      that failed or ran out of time goes on where it stopped the next time: delete the clone to
#      have changed local changes applied);
#   2. runs `swift test --skip-build` in the clone RUNS times, plain, under `leak-audit run
#      --leaks-per-test --census` and under `leak-audit run --leaks-per-test --census --retainers`,
#      interleaved (plain, census, retainers, plain, ...), timing each run; both audited modes write
#      JSON, HTML and text reports into RESULTS/NAME (census-report.* and report.*), keeping
#      leak-audit's standard error there. The test counts come from the last plain run's output
#      (XCTest's "Executed N tests" of the top suite, Swift Testing's "Test run with N tests",
#      skipped tests of both); each ratio is the median audited time over the median plain time;
#   3. checks the audited runs' counts against the plain run's;
#   4. looks for processes of the package's test bundle still running afterwards (orphans), records
#      and kills them;
#   5. runs `leak-audit run swift test --skip-build` once more with no option at all, as a first-time
#      user would (the unreachable check, the default with no setup), writing default-report.*, and
#      counts the groups of unreachable objects of the package's types (`unreach`: failing groups /
#      their structures / processes checked), each to be triaged (docs/real-packages.md);
#   6. reads report.json: tests audited, tests with failing leaked findings, how many of those have a
#      retaining path and how many only a reason why not, and the sizes of the text and HTML reports.
# Every run is under `timeout` (TIMEOUT seconds); a run that hit it is marked so.
#
# Usage: scripts/evaluate-packages.sh [LIST-FILE | OWNER/NAME@VERSION ...]
#   A list file holds one OWNER/NAME@VERSION a line; '#' starts a comment. Arguments that contain
#   '@' are entries themselves. scripts/real-packages.txt lists the suites of docs/real-packages.md.
# Environment (all optional):
#   LEAK_AUDIT   the leak-audit executable, with its two libraries beside it (default the
#                repository's .build-release/leak-audit; scripts/build-release.sh makes it)
#   EVAL_DIR     where the clones go, one folder per package (default /tmp/leak-audit-eval)
#   RESULTS      where the reports go, one folder per package (default EVAL_DIR/results)
#   RUNS         runs of each mode per package (default 1); the ratios are of median wall times
#   TIMEOUT      seconds allowed to each build and each run (default 1200)
#   PACKAGES     the package copies (default /opt/swift-packages)
#   BUILD_ONLY   set to 1 to clone and build the suites and stop there (to build ahead of a run)
#   FILTER       a `swift test --filter` pattern, for a suite too large to run whole (every run of
#                every package then runs only the tests it matches; default none: all tests)
# Prints the table on standard output and writes it as TSV to RESULTS/summary.tsv (one line per
# package: a rerun of one package replaces its line). Progress goes to standard error.
set -euo pipefail
repository=$(cd "$(dirname "$0")/.." && pwd)
LEAK_AUDIT=${LEAK_AUDIT:-$repository/.build-release/leak-audit}
EVAL_DIR=${EVAL_DIR:-/tmp/leak-audit-eval}
RESULTS=${RESULTS:-$EVAL_DIR/results}
RUNS=${RUNS:-1}
TIMEOUT=${TIMEOUT:-1200}
PACKAGES=${PACKAGES:-/opt/swift-packages}
test_arguments=(--skip-build)
if [[ -n ${FILTER:-} ]]; then test_arguments+=(--filter "$FILTER"); fi

die() { echo "evaluate-packages: $*" >&2; exit 1; }
say() { echo "evaluate-packages: $*" >&2; }
[[ -x $LEAK_AUDIT ]] || die "no leak-audit at '$LEAK_AUDIT' (set LEAK_AUDIT, or run scripts/build-release.sh)"
command -v python3 >/dev/null || die "python3 is needed to read the reports"

# The local changes a suite needs to build with Swift 6.3 on Linux, applied to a fresh clone, in
# its folder. Keep each one small and say why.
apply_fixes() {
    local name=$1
    # Package.resolved pins GitHub's commit ids, which the local copies do not have: resolve anew.
    rm -f Package.resolved
    # A LinuxMain.swift (in Tests/ or beside Package.swift) that names __allTests, which SwiftPM no
    # longer generates, keeps the tests from building: SwiftPM discovers them without it.
    find . -path ./.build -prune -o -name LinuxMain.swift -type f -print |
        while IFS= read -r main; do
            if grep -q __allTests "$main"; then rm "$main"; fi
        done
    case $name in
        Swinject)
            # The test target builds in the Swift 6 language mode, where its concurrency tests do not
            # compile; and its speed tests use XCTMeasureOptions, which Linux's XCTest lacks.
            sed -i 's/dependencies: \["Swinject"\]),/dependencies: ["Swinject"], swiftSettings: [.swiftLanguageMode(.v5)]),/' Package.swift
            sed -i '1i #if canImport(Darwin)' Tests/SwinjectTests/ContainerTests.Speed.swift
            echo '#endif' >>Tests/SwinjectTests/ContainerTests.Speed.swift
            ;;
        OpenCombine)
            # These tests subclass NotificationCenter and override methods that
            # swift-corelibs-foundation declares in an extension (not overridable): Darwin only.
            sed -i '1i #if canImport(Darwin)' Tests/OpenCombineTests/FoundationTests/NotificationCenterTests.swift
            echo '#endif' >>Tests/OpenCombineTests/FoundationTests/NotificationCenterTests.swift
            ;;
        Stencil)
            # Foundation now has a type named Expression too.
            sed -i 's/-> Expression {/-> Stencil.Expression {/' Tests/StencilTests/ExpressionSpec.swift
            ;;
        Files)
            # testUsingCustomFileManager overrides a FileManager method that
            # swift-corelibs-foundation declares in an extension (not overridable): Darwin only.
            sed -i '/func testUsingCustomFileManager()/i #if canImport(Darwin)' Tests/FilesTests/FilesTests.swift
            sed -i '/func testFolderContainsFile()/i #endif' Tests/FilesTests/FilesTests.swift
            sed -i '/("testUsingCustomFileManager", testUsingCustomFileManager)/d' Tests/FilesTests/FilesTests.swift
            ;;
        TOMLKit)
            # Its tests need karwa/swift-checkit, which the machine does not have, for one call.
            sed -i '/Checkit/d' Package.swift Package@swift-5.5.swift Tests/TOMLKitTests/TOMLKitTests.swift
            sed -i '/CollectionChecker.check(arr)/d' Tests/TOMLKitTests/TOMLKitTests.swift
            ;;
        websocket-kit)
            # Its tests' SSL helpers call BoringSSL by the prefixed names (CNIOBoringSSL_BN_new),
            # which swift-nio-ssl 2.37's CNIOBoringSSL module no longer declares: the plain names.
            sed -i 's/CNIOBoringSSL_\([A-Za-z0-9]\)/\1/g' Tests/WebSocketKitTests/SSLTestHelpers.swift
            ;;
        swift-docc-symbolkit)
            # Its manifest for Swift 5.5 and later asks for swift-argument-parser 1.0.x only.
            sed -i 's/.upToNextMinor(from: "1.0.1")/from: "1.0.1"/' Package@swift-5.5.swift
            ;;
        TextTable)
            # Its test data parses "8/14/2016" with the short date style of the current locale, which
            # swift-corelibs-foundation makes dd/MM/y here whatever LANG says (every test crashes on
            # the nil): the US locale its expected tables are written in.
            sed -i 's/dateFormatter.dateStyle = .short/dateFormatter.locale = Locale(identifier: "en_US"); &/' Tests/TextTableTests/TestUtil.swift
            ;;
        benchmark)
            # With Swift 6.3 on Linux its manifest adds ordo-one/swift-runtime-interposer, which the
            # machine does not have; its sources use it only where they can import it.
            sed -i 's/^#if os(Linux) && compiler(>=6.3) && compiler(<6.4)$/#if false/' Package.swift
            ;;
        swift-identified-collections)
            # Its benchmark executable needs apple/swift-collections-benchmark, which the machine
            # does not have; the tests do not use it.
            sed -i '/swift-collections-benchmark", from/d' Package.swift Package@swift-6.0.swift
            sed -i '/\.executableTarget($/,/^    ),$/d' Package.swift Package@swift-6.0.swift
            ;;
        swift-sdk)
            # Two of its tests' URLProtocol mocks start a Task that captures self, which the Swift 6
            # language mode rejects on Linux (URLProtocol is not Sendable there): the Swift 5 mode.
            printf '%s\n' 'for target in package.targets where target.name == "MCPTests" {' \
                '    target.swiftSettings = [.swiftLanguageMode(.v5)]' '}' |
                tee -a Package.swift >>Package@swift-6.0.swift
            ;;
        Quick)
            # QuickLintTests needs Quick/swift-fakes, which the machine does not have; the other two
            # test targets do not.
            sed -i '/Quick\/swift-fakes.git/d' Package.swift Package@swift-5.9.swift
            sed -i '/^ *\.testTarget($/{N;/"QuickLintTests"/{N;N;N;N;N;N;N;d}}' Package.swift Package@swift-5.9.swift
            ;;
        swift-async-algorithms)
            # Two copies of Locking.swift are symlinks upstream, which the machine's copy of the
            # package lacks: without them ManagedCriticalState is missing.
            cp Sources/AsyncAlgorithms/Locking.swift Sources/AsyncSequenceValidation/
            cp Sources/AsyncAlgorithms/Locking.swift Tests/AsyncAlgorithmsTests/Support/
            ;;
    esac
}

entries=()
if (($# == 0)); then
    die "usage: scripts/evaluate-packages.sh [LIST-FILE | OWNER/NAME@VERSION ...]"
fi
for argument in "$@"; do
    if [[ $argument == *@* ]]; then
        entries+=("$argument")
    elif [[ -f $argument ]]; then
        while IFS= read -r line; do
            line=${line%%#*}
            line=$(echo "$line" | tr -d '[:space:]')
            [[ -n $line ]] && entries+=("$line")
        done <"$argument"
    else
        die "'$argument' is neither OWNER/NAME@VERSION nor a list file"
    fi
done

mkdir -p "$EVAL_DIR" "$RESULTS"
summary=$RESULTS/summary.tsv
header=$'package\tversion\tlibraries\ttests_runner\tskipped\ttests_audited\tplain_exit\taudited_exit\tfailing_tests\tfailing_with_path\tfailing_without_path\tplain_s\taudited_s\tratio\ttext_kb\ttext_lines\twidest\thtml_kb\torphans\tnote\tcensus_s\tcensus_ratio\truns\tunreachable_groups\tunreachable_structures\tunreachable_checked\tdefault_exit'
# A summary of an older layout (fewer columns) is started afresh.
if [[ ! -f $summary ]] || [[ $(head -1 "$summary") != "$header" ]]; then echo "$header" >"$summary"; fi

now() { date +%s.%N; }

# record NAME FIELDS...: NAME's line of the summary, replacing an earlier one.
record() {
    { grep -v "^$1	" "$summary" || true; (IFS=$'\t'; echo "$*"); } >"$summary.new"
    mv "$summary.new" "$summary"
}

# counts OUTPUT-FILE: "LIBRARIES RUN SKIPPED" from a `swift test` run's output.
counts() {
    python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1], errors="replace").read()
# The top suite's summary ('All tests', else the last 'Executed' line).
top = None
lines = text.splitlines()
for i, line in enumerate(lines):
    if re.search(r"Test Suite '(All tests|Selected tests)' (passed|failed)", line):
        for follow in lines[i + 1:i + 3]:
            m = re.search(r"Executed (\d+) tests?", follow)
            if m:
                top = int(m.group(1))
                break
if top is None:
    executed = re.findall(r"Executed (\d+) tests?", text)
    if executed:
        top = int(executed[-1])
xctest = top
skipped = len(re.findall(r"^Test Case '.*' skipped", text, re.M))
swt = None
for m in re.finditer(r"Test run with (\d+) tests?", text):
    swt = int(m.group(1))
skipped += len(re.findall(r"^\S+ Test \S.* skipped", text, re.M))
libraries = []
if xctest:
    libraries.append("XCTest")
if swt:
    libraries.append("SwiftTesting")
print("+".join(libraries) or "none", (xctest or 0) + (swt or 0), skipped)
EOF
}

# analyse REPORT-DIR: the report's figures as tab-separated fields.
analyse() {
    python3 - "$1" <<'EOF'
import json, os, sys
folder = sys.argv[1]
out = {"audited": "-", "failing": "-", "with_path": "-", "without_path": "-",
       "text_kb": "-", "text_lines": "-", "widest": "-", "html_kb": "-"}
try:
    report = json.load(open(os.path.join(folder, "report.json")))
    target = report.get("target") or {}
    tests = report.get("tests") or []
    # As the runners count: Swift Testing's skipped tests did not run but are among its count;
    # XCTest's skipped tests ran (they are among testsRun).
    if target.get("testsRun") is not None:
        out["audited"] = target["testsRun"] + sum(
            len(p.get("skippedTests") or []) for p in target.get("processes", [])
            if p.get("testingLibrary") == "Swift Testing" and p.get("startedByTestProcess") is None)
    failing = with_path = without_path = 0
    for test in tests:
        blamed = [l for l in test.get("leaked", []) if l.get("status") in ("failing", "largerThanBaseline")]
        if not blamed:
            continue
        failing += 1
        if any(l.get("retainers") for l in blamed):
            with_path += 1
        else:
            without_path += 1
    out.update(failing=failing, with_path=with_path, without_path=without_path)
except Exception as error:
    print("analyse: %s" % error, file=sys.stderr)
text = os.path.join(folder, "report.txt")
if os.path.exists(text):
    data = open(text, "rb").read()
    lines = data.decode("utf-8", "replace").splitlines()
    out["text_kb"] = "%.1f" % (len(data) / 1024)
    out["text_lines"] = len(lines)
    out["widest"] = max((len(l) for l in lines), default=0)
html = os.path.join(folder, "report.html")
if os.path.exists(html):
    out["html_kb"] = "%.1f" % (os.path.getsize(html) / 1024)
print("\t".join(str(out[k]) for k in
      ("audited", "failing", "with_path", "without_path", "text_kb", "text_lines", "widest", "html_kb")))
EOF
}

# traps FILE...: what the files say went wrong, briefly.
traps() {
    local found=() pattern
    for pattern in 'Fatal error' 'Index out of range' 'Segmentation fault' 'Illegal instruction' \
        'Trace/breakpoint trap' 'Aborted' 'signal 11' 'signal 4' 'signal 5' 'signal 6' 'crashed' \
        'internal error'; do
        if grep -qiF -- "$pattern" "$@" 2>/dev/null; then found+=("$pattern"); fi
    done
    local IFS=,
    echo "${found[*]:-}"
}

# The default run's unreachable groups of the package's types: failing groups, their structures,
# and processes checked, tab-separated ('-' when the report is missing or unreadable).
unreachable_counts() {
    python3 - "$1" <<'EOF'
import json, sys
try:
    found = json.load(open(sys.argv[1])).get("unreachable") or {}
    groups = [g for g in found.get("groups", []) if g.get("status", "failing") in ("failing", "largerThanBaseline")
              and not g.get("internal")]
    print("%d\t%d\t%d" % (len(groups), sum(g["count"] for g in groups), found.get("processesChecked", 0)))
except Exception as error:
    print("unreachable_counts: %s" % error, file=sys.stderr)
    print("-\t-\t-")
EOF
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-28s %-20s %11s %5s %5s %6s %8s %7s %6s %7s %6s %7s %6s %9s  %s\n' package libraries runner/audited \
    plain audit failed withpath census retain textKB widest htmlKB orphans unreach note
for entry in "${entries[@]}"; do
    slug=${entry%@*} version=${entry#*@}
    owner=${slug%%/*} name=${slug#*/}
    clone=$EVAL_DIR/$name results=$RESULTS/$name
    mkdir -p "$results"
    notes=()

    # 1. Clone and build, once.
    # A clone at another tag, or one whose local changes were not all applied, is made afresh, so
    # that apply_fixes applies to it once; a clone whose build failed or ran out of time is kept,
    # and its build goes on where it stopped (the first builds of the largest suites take longer
    # than TIMEOUT on a loaded machine).
    if { [[ ! -f $clone/.evaluate-built ]] && [[ ! -f $clone/.evaluate-fixed ]]; } ||
        [[ $(git -C "$clone" describe --tags --exact-match 2>/dev/null) != "$version" ]]; then
        rm -rf "$clone"
        git clone -q "$PACKAGES/$owner/$name.git" "$clone" 2>"$results/clone.log" || die "cannot clone $slug: $(cat "$results/clone.log")"
        git -C "$clone" -c advice.detachedHead=false checkout -q "$version" 2>>"$results/clone.log" || die "no tag $version in $slug"
        (cd "$clone" && apply_fixes "$name")
        touch "$clone/.evaluate-fixed"
    fi
    if [[ ! -f $clone/.evaluate-built ]]; then
        say "$name: building its tests"
        started=$(now)
        if (cd "$clone" && timeout "$TIMEOUT" swift build --build-tests) >"$results/build.log" 2>&1; then
            touch "$clone/.evaluate-built"
            say "$name: built in $(printf '%.0f' "$(echo "$(now) - $started" | bc)") s"
        else
            say "$name: build failed (see $results/build.log)"
            record "$name" "$version" - - - - - - - - - - - - - - - - - "build failed" - - -
            printf '%-28s build failed: %s\n' "$name" "$results/build.log"
            continue
        fi
    fi
    bundle=$(cd "$clone" && { ls -d .build/debug/*.xctest 2>/dev/null || true; } | head -1)
    bundle=$(basename "${bundle:-none}")
    if [[ $bundle == none ]]; then
        say "$name: no test bundle was built (the package has no test target)"
        record "$name" "$version" - - - - - - - - - - - - - - - - - "no test target" - - -
        printf '%-28s no test target\n' "$name"
        continue
    fi
    if [[ ${BUILD_ONLY:-} == 1 ]]; then
        printf '%-28s built\n' "$name"
        continue
    fi

    # 2. Plain and audited runs, interleaved, so that a busy period of the machine weighs on each
    # mode alike.
    plain_times=() census_times=() audited_times=()
    plain_exit=0 census_exit=0 audited_exit=0
    for ((run = 1; run <= RUNS; run++)); do
        say "$name: run $run of $RUNS: plain"
        started=$(now)
        plain_exit=0
        (cd "$clone" && timeout -k 10 "$TIMEOUT" swift test "${test_arguments[@]}") >"$results/plain.log" 2>&1 || plain_exit=$?
        plain_times+=("$(echo "$(now) - $started" | bc)")
        ((plain_exit == 124)) && notes+=("plain run $run timed out")

        say "$name: run $run of $RUNS: --leaks-per-test --census"
        rm -f "$results"/census-report.{json,html,txt}
        started=$(now)
        census_exit=0
        (cd "$clone" && timeout -k 10 "$TIMEOUT" "$LEAK_AUDIT" run --leaks-per-test --census \
            --output-json "$results/census-report.json" --output-html "$results/census-report.html" \
            --output-text "$results/census-report.txt" -- swift test "${test_arguments[@]}") \
            >"$results/census.log" 2>"$results/census.stderr" || census_exit=$?
        census_times+=("$(echo "$(now) - $started" | bc)")
        ((census_exit == 124)) && notes+=("census run $run timed out")

        say "$name: run $run of $RUNS: --leaks-per-test --census --retainers"
        rm -f "$results"/report.{json,html,txt}
        started=$(now)
        audited_exit=0
        (cd "$clone" && timeout -k 10 "$TIMEOUT" "$LEAK_AUDIT" run --leaks-per-test --retainers --census \
            --output-json "$results/report.json" --output-html "$results/report.html" \
            --output-text "$results/report.txt" -- swift test "${test_arguments[@]}") \
            >"$results/audited.log" 2>"$results/leak-audit.stderr" || audited_exit=$?
        audited_times+=("$(echo "$(now) - $started" | bc)")
        ((audited_exit == 124)) && notes+=("audited run $run timed out")
    done
    plain_s=$(median "${plain_times[@]}")
    census_s=$(median "${census_times[@]}")
    audited_s=$(median "${audited_times[@]}")
    read -r libraries runner skipped < <(counts "$results/plain.log")

    # 3. The audited runs executed what the plain one did.
    read -r _ census_runner _ < <(counts "$results/census.log")
    ((census_runner != runner)) && notes+=("runner counts differ: plain $runner, census $census_runner")
    read -r _ audited_runner _ < <(counts "$results/audited.log")
    ((audited_runner != runner)) && notes+=("runner counts differ: plain $runner, audited $audited_runner")

    # 4. Orphans: the bundle's processes still running.
    orphans=0
    if [[ $bundle != none ]]; then
        sleep 1
        # Only this clone's processes (its path on the command line, or its folder as working
        # directory): another checkout of the same package may be running its tests.
        left=()
        for pid in $(pgrep -f "$bundle" || true); do
            if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$clone/" ||
                [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$clone" ]]; then
                left+=("$pid")
            fi
        done
        orphans=${#left[@]}
        if ((orphans > 0)); then
            ps -o pid,etime,args -p "$(IFS=,; echo "${left[*]}")" >"$results/orphans.txt" 2>&1 || true
            kill "${left[@]}" 2>/dev/null || true
            sleep 2
            kill -9 "${left[@]}" 2>/dev/null || true
        fi
    fi

    # 5. With no option at all: the unreachable check, the default with no setup.
    say "$name: no option (the unreachable check)"
    rm -f "$results"/default-report.{json,txt}
    default_exit=0
    (cd "$clone" && timeout -k 10 "$TIMEOUT" "$LEAK_AUDIT" run --output-json "$results/default-report.json" \
        --output-text "$results/default-report.txt" -- swift test "${test_arguments[@]}") \
        >"$results/default.log" 2>"$results/default.stderr" || default_exit=$?
    ((default_exit == 124)) && notes+=("default run timed out")
    IFS=$'\t' read -r unreachable_groups unreachable_structures unreachable_checked \
        < <(unreachable_counts "$results/default-report.json")

    # 6. The report.
    IFS=$'\t' read -r audited failing with_path without_path text_kb text_lines widest html_kb < <(analyse "$results")
    # A test the report counts that the runner does not (a test run inside another test, as Quick's
    # nested specs) or the other way round: each one to explain in the triage.
    [[ $audited =~ ^[0-9]+$ && $runner =~ ^[0-9]+$ ]] && ((audited != runner)) &&
        notes+=("tests counted differ: runner $runner, leak-audit $audited")
    trouble=$(traps "$results/leak-audit.stderr" "$results/audited.log")
    [[ -n $trouble ]] && notes+=("audited: $trouble")
    trouble=$(traps "$results/plain.log")
    [[ -n $trouble ]] && notes+=("plain: $trouble")
    ratio=$(printf '%.2f' "$(echo "scale=3; $audited_s / $plain_s" | bc)")
    census_ratio=$(printf '%.2f' "$(echo "scale=3; $census_s / $plain_s" | bc)")
    note=$(IFS=';'; echo "${notes[*]:-}")
    printf '%-28s %-20s %5s/%-5s %5s %5s %6s %8s %7s %6s %7s %6s %7s %6s %9s  %s\n' "$name" "$libraries" "$runner" \
        "$audited" "$plain_exit" "$audited_exit" "$failing" "$with_path" "${census_ratio}x" "${ratio}x" "$text_kb" "$widest" \
        "$html_kb" "$orphans" "$unreachable_groups/$unreachable_structures/$unreachable_checked" "$note"
    record "$name" "$version" "$libraries" "$runner" "$skipped" "$audited" "$plain_exit" "$audited_exit" \
        "$failing" "$with_path" "$without_path" "$(printf '%.2f' "$plain_s")" "$(printf '%.2f' "$audited_s")" "$ratio" \
        "$text_kb" "$text_lines" "$widest" "$html_kb" "$orphans" "$note" "$(printf '%.2f' "$census_s")" "$census_ratio" "$RUNS" \
        "$unreachable_groups" "$unreachable_structures" "$unreachable_checked" "$default_exit"
done
