#!/usr/bin/env bash
# Issue 31's fixtures under valgrind, LeakSanitizer and leak-audit: which unreachable objects each
# reports at exit, with what names, and what it reports on programs that leak nothing.
#
# Runs, one process per row, every shape of `Fixtures/Sources/UnreachableShapes` leaky and clean,
# every holder of `Fixtures/Sources/ReachableHolders` (clean only) and `LeakingService 1` (25
# Request/Response cycles at exit), each under:
#
#   valgrind --leak-check=full   the release build: its "definitely lost" and "indirectly lost"
#                                blocks (and "possibly lost", which includes the Swift runtime's own
#                                few blocks in every run)
#   LeakSanitizer                the same code built with -sanitize=address: its "Direct leak" and
#                                "Indirect leak" objects
#   leak-audit run               the release build with no setup (and `--unreachable` when this
#                                leak-audit has the option): the JSON report's `unreachable` objects
#                                of the program's own types, and its groups; "not checked" while
#                                leak-audit has no unreachable check
#
# and prints one table: for each row what the fixture leaks (objects, from its header comment) and,
# for each tool, the objects it reported (a Swift object is one malloc block), whether a report
# names one of the row's types (demangled `Module.Type`, or only mangled `$s…Module…Type…`) and a
# line of the row's section of main.swift (`main.swift:N`). On a clean row any object reported is
# a false alarm. Types and lines come from the fixture's source: each shape or holder is a
# `// MARK: - name` section.
#
# Usage: scripts/compare-unreachable.sh
# Environment (all optional):
#   LEAK_AUDIT_PEERS_SCRATCH           --scratch-path for leak-audit (default .build-peers)
#   LEAK_AUDIT_PEERS_FIXTURES_SCRATCH  --scratch-path for the fixtures (default Fixtures/.build-peers;
#                                      the ASan build adds -asan)
#   LEAK_AUDIT_PEERS_KEEP              a directory to copy each tool's output into, to read what the
#                                      verdicts were drawn from
# When run as root, installs a missing valgrind (apt-get); a tool that cannot be had is shown as
# n/a with the reason. Prints figures, asserts nothing: exits 0 unless a build fails.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

root_scratch=${LEAK_AUDIT_PEERS_SCRATCH:-$root/.build-peers}
fixtures_scratch=${LEAK_AUDIT_PEERS_FIXTURES_SCRATCH:-$root/Fixtures/.build-peers}
keep=${LEAK_AUDIT_PEERS_KEEP:-}
products=(UnreachableShapes ReachableHolders LeakingService)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say() { echo "compare-unreachable: $*" >&2; }
die() {
    say "$*"
    exit 1
}
command -v python3 >/dev/null || die "python3 is needed to read leak-audit's JSON reports"

declare -A unavailable=() # tool -> why it is n/a

if ! command -v valgrind >/dev/null 2>&1 && ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
    say "installing valgrind..."
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; } >"$work/apt.log" 2>&1
fi
command -v valgrind >/dev/null 2>&1 || unavailable[valgrind]="valgrind is not installed (apt-get install valgrind)"

# --- builds --------------------------------------------------------------------------------------

say "building leak-audit (release, as scripts/build-release.sh builds it for real use)..."
leak_audit=$("$root/scripts/build-release.sh" "$root_scratch" 2>"$work/build-root.log") \
    || { cat "$work/build-root.log" >&2; die "scripts/build-release.sh failed"; }

# build_fixtures SCRATCH LOG [FLAGS...]: builds the fixtures (release) and prints their directory.
build_fixtures() {
    local scratch=$1 log=$2 product
    shift 2
    for product in "${products[@]}"; do
        swift build -c release --package-path Fixtures --scratch-path "$scratch" --product "$product" "$@" \
            >>"$log" 2>&1 || return 1
    done
    swift build -c release --package-path Fixtures --scratch-path "$scratch" --show-bin-path "$@"
}

say "building ${products[*]} (release)..."
bin=$(build_fixtures "$fixtures_scratch" "$work/build-fixtures.log") \
    || { cat "$work/build-fixtures.log" >&2; die "swift build of the fixtures failed"; }
say "building them with -sanitize=address..."
build_failed=0
if ! asan_bin=$(build_fixtures "$fixtures_scratch-asan" "$work/build-asan.log" --sanitize=address); then
    grep -v 'Cannot export local symbol' "$work/build-asan.log" >&2
    unavailable[lsan]="the -sanitize=address build failed"
    build_failed=1
fi
symbolizer=$(command -v llvm-symbolizer || true)

# leak-audit's unreachable check: the default with no setup; `--unreachable` asks for it by name.
unreachable_option=()
# (The help is read whole first: grep -q would stop reading it, and pipefail fail the pipeline.)
run_help=$("$leak_audit" run --help 2>&1)
grep -q -- '--unreachable' <<<"$run_help" && unreachable_option=(--unreachable)

# --- the rows ------------------------------------------------------------------------------------

# fixture|mode|case|objects it leaks: every Swift object left unreachable, counted in the fixture's
# header comment (a cycle's objects, what only they hold: array and dictionary buffers, closure
# contexts, tokens). The case names the `// MARK: - case` section of the fixture's main.swift.
rows=(
    "UnreachableShapes|leaky|pairs|6"
    "UnreachableShapes|leaky|closures|6"
    "UnreachableShapes|leaky|families|10"
    "UnreachableShapes|leaky|registry|6"
    "UnreachableShapes|leaky|delegates|8"
    "UnreachableShapes|leaky|enum-ring|6"
    "UnreachableShapes|leaky|over-retained|10"
    "UnreachableShapes|leaky|freed-blocks|8"
    "LeakingService|leaky|1|50"
    "UnreachableShapes|clean|pairs|0"
    "UnreachableShapes|clean|closures|0"
    "UnreachableShapes|clean|families|0"
    "UnreachableShapes|clean|registry|0"
    "UnreachableShapes|clean|delegates|0"
    "UnreachableShapes|clean|enum-ring|0"
    "UnreachableShapes|clean|over-retained|0"
    "UnreachableShapes|clean|freed-blocks|0"
    "ReachableHolders|clean|global-cycle|0"
    "ReachableHolders|clean|opaque-pointers|0"
    "ReachableHolders|clean|enum-payloads|0"
    "ReachableHolders|clean|sleeping-threads|0"
    "ReachableHolders|clean|collections|0"
)

# arguments FIXTURE MODE CASE: the fixture's command-line arguments for a row.
arguments() {
    case $1 in
    UnreachableShapes) echo "$2 $3" ;;
    *) echo "$3" ;;
    esac
}

# section FIXTURE CASE: "FIRST LAST TYPE..." of the case's `// MARK: - CASE` section in main.swift
# (the whole file for a fixture without sections): its line range and the classes it declares.
section() {
    awk -v name="$2" '
        /^\/\/ MARK: - / { if (on) { last = NR - 1; on = 0 }; if (substr($0, 12) == name) { on = 1; first = NR } }
        match($0, /^(final )?class [A-Za-z_]+/) {
            s = substr($0, RSTART, RLENGTH); sub(/.*class /, "", s); all = all " " s; if (on) types = types " " s
        }
        END { if (!first) { first = 1; last = NR; types = all }; if (on) last = NR; print first, last types }
    ' "Fixtures/Sources/$1/main.swift"
}

# --- running -------------------------------------------------------------------------------------

# Each tool's reports, one paragraph per report, so that nothing else (the program's own output)
# can count as the tool naming something.
valgrind_records() {
    awk '/ (definitely|indirectly) lost in loss record / { on = 1 } on { print } /^==[0-9]+== *$/ { if (on) print ""; on = 0 }' "$1"
}
lsan_records() { awk '/^(Direct|Indirect) leak of/ { on = 1 } on { print } /^$/ { on = 0 }' "$1"; }

# names FIXTURE FIRST LAST TYPE...: reads reports on standard input; prints "TYPE LINE": the type
# yes (demangled Module.Type), mangled (only as $s…ModuleLength Module TypeLength Type…) or no, and
# the line yes when a report has main.swift:N with N in FIRST...LAST.
names() {
    local fixture=$1 first=$2 last=$3
    shift 3
    local records type named_type=no named_line=no
    records=$(cat)
    for type in "$@"; do
        if grep -qF "$fixture.$type" <<<"$records"; then
            named_type=yes
            break
        fi
        grep -qF "${#fixture}$fixture${#type}${type}C" <<<"$records" && named_type=mangled
    done
    grep -oE 'main\.swift:[0-9]+' <<<"$records" | cut -d: -f2 \
        | awk -v first="$first" -v last="$last" '$1 >= first && $1 <= last { found = 1 } END { exit !found }' \
        && named_line=yes
    echo "$named_type $named_line"
}

# number TEXT: the first number in TEXT, commas dropped (0 when none).
number() { grep -oE '[0-9][0-9,]*' <<<"$1" | head -n 1 | tr -d , | grep . || echo 0; }

# valgrind_cell OUT FIXTURE FIRST LAST TYPE...: "definitely + indirectly lost blocks (bytes),
# possibly lost blocks; names".
valgrind_cell() {
    local out=$1 fixture=$2 first=$3 last=$4
    shift 4
    grep -q 'ERROR SUMMARY' "$out" || { echo "n/a: $(grep -m1 -v '^==' "$out" | cut -c1-60)"; return; }
    local definite indirect possible definite_bytes indirect_bytes line
    line=$(grep -m1 'definitely lost:' "$out" | sed 's/.*lost://')
    definite_bytes=$(number "$line") definite=$(number "${line#*in }")
    line=$(grep -m1 'indirectly lost:' "$out" | sed 's/.*lost://')
    indirect_bytes=$(number "$line") indirect=$(number "${line#*in }")
    line=$(grep -m1 'possibly lost:' "$out" | sed 's/.*lost://')
    possible=$(number "${line#*in }")
    read -r named_type named_line < <(valgrind_records "$out" | names "$fixture" "$first" "$last" "$@")
    ((definite + indirect == 0)) && named_type=- named_line=-
    echo "$definite + $indirect ($((definite_bytes + indirect_bytes)) B), $possible possibly; type $named_type, line $named_line"
}

# lsan_cell OUT FIXTURE FIRST LAST TYPE...: "direct + indirect objects (bytes); names".
lsan_cell() {
    local out=$1 fixture=$2 first=$3 last=$4
    shift 4
    local direct indirect bytes
    read -r direct indirect bytes < <(awk '
        /^Direct leak of/ { d += $7; b += $4 } /^Indirect leak of/ { i += $7; b += $4 }
        END { print d + 0, i + 0, b + 0 }' "$out")
    read -r named_type named_line < <(lsan_records "$out" | names "$fixture" "$first" "$last" "$@")
    ((direct + indirect == 0)) && named_type=- named_line=-
    echo "$direct + $indirect ($bytes B); type $named_type, line $named_line"
}

# leak_audit_cell JSON STATUS FIXTURE: the unreachable objects (bytes), those of the program's own
# types, the groups with one of them on their path (and whether a path names a field), from the
# JSON report.
leak_audit_cell() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, status, module = sys.argv[1:4]
try:
    with open(path) as file:
        report = json.load(file)
except (OSError, ValueError):
    print(f"not checked (exit {status}, no report)")
    sys.exit()
unreachable = report.get("unreachable")
if unreachable is None:
    print(f"not checked (exit {status})")
    sys.exit()
own = [t for t in unreachable.get("types", []) if t.get("name", "").startswith(module + ".")]
objects = sum(t.get("count", 0) for t in own)
# The groups of the program's types, and whether their paths name the fields of the cycle.
groups = [g for g in unreachable.get("groups", []) if any(str(step.get("type", "")).startswith(module + ".") for step in g.get("path", []))]
fields = any(step.get("via") for g in groups for step in g.get("path", []))
total = unreachable.get("objects", 0)
cell = f"{total} ({unreachable.get('bytes', 0)} B), {objects} of its types, {len(groups)} group{'' if len(groups) == 1 else 's'}"
if fields:
    cell += ", fields named"
for reason in unreachable.get("unavailable", []):
    cell += f"; not checked: {reason}"
print(f"{cell}; exit {status}")
PY
}

# finished STDOUT STDERR STATUS EXPECTED: true when the program printed its last line and the run
# exited with one of EXPECTED (LeakSanitizer exits 1 or 23 after reporting leaks); otherwise prints why
# the cell is n/a.
finished() {
    local stdout=$1 stderr=$2 status=$3 expected=$4
    if grep -qE '^[A-Za-z]+: (leaky|clean): made|^ReachableHolders: |^LeakingService: served' "$stdout" \
        && [[ " $expected " == *" $status "* ]]; then
        return 0
    fi
    echo "n/a: exit $status, $(grep -m1 -E 'ERROR|rror:' "$stderr" | cut -c1-50)"
    return 1
}

row() { printf '| %-37s | %5s | %-53s | %-40s | %-60s |\n' "$@"; }
rows_out=()
say "running ${#rows[@]} rows under each tool..."
for spec in "${rows[@]}"; do
    IFS='|' read -r fixture mode case expected <<<"$spec"
    read -r -a args <<<"$(arguments "$fixture" "$mode" "$case")"
    read -r first last types <<<"$(section "$fixture" "$case")"
    read -r -a types <<<"$types"
    name="$fixture ${args[*]}"
    slug=${name// /-}

    valgrind_result="n/a"
    if [[ -z ${unavailable[valgrind]:-} ]]; then
        valgrind --leak-check=full --num-callers=40 "$bin/$fixture" "${args[@]}" >"$work/$slug.valgrind.out" 2>"$work/$slug.valgrind"
        valgrind_result=$(finished "$work/$slug.valgrind.out" "$work/$slug.valgrind" $? 0 \
            && valgrind_cell "$work/$slug.valgrind" "$fixture" "$first" "$last" "${types[@]}")
    fi

    lsan_result="n/a"
    if [[ -z ${unavailable[lsan]:-} ]]; then
        env ASAN_OPTIONS=detect_leaks=1 ${symbolizer:+ASAN_SYMBOLIZER_PATH=$symbolizer} \
            "$asan_bin/$fixture" "${args[@]}" >"$work/$slug.lsan.out" 2>"$work/$slug.lsan"
        lsan_result=$(finished "$work/$slug.lsan.out" "$work/$slug.lsan" $? "0 1 23" \
            && lsan_cell "$work/$slug.lsan" "$fixture" "$first" "$last" "${types[@]}")
    fi

    status=0
    "$leak_audit" run "${unreachable_option[@]}" --output-json "$work/$slug.json" "$bin/$fixture" "${args[@]}" \
        >"$work/$slug.leak-audit.out" 2>"$work/$slug.leak-audit" || status=$?
    leak_audit_result=$(leak_audit_cell "$work/$slug.json" "$status" "$fixture")

    rows_out+=("$(row "$name" "$expected" "$valgrind_result" "$lsan_result" "$leak_audit_result")")
    if [[ -n $keep ]]; then
        mkdir -p "$keep"
        cp "$work/$slug".* "$keep/" 2>/dev/null
    fi
done

# --- table ---------------------------------------------------------------------------------------

echo
echo "unreachable objects at exit: $(uname -m), $(nproc) CPUs, $(swift --version 2>/dev/null | head -n 1 | sed 's/ (.*//')$(command -v valgrind >/dev/null && echo ", $(valgrind --version)")"
echo "leak-audit: $("$leak_audit" --version 2>/dev/null || echo '?') run ${unreachable_option[*]:-(no options)}"
echo
row "fixture (arguments)" "leaks" "valgrind: definitely + indirectly lost" "LeakSanitizer: direct + indirect" "leak-audit: unreachable"
row "---" "---:" "---" "---" "---"
printf '%s\n' "${rows_out[@]}"
echo
echo "leaks: the Swift objects the row leaks (0: a clean row, where any object reported is a false alarm)."
echo "valgrind: blocks definitely + indirectly lost (bytes), then blocks possibly lost (the Swift runtime's"
echo "metadata caches are possibly lost in every run). LeakSanitizer: objects in Direct + Indirect leak"
echo "reports (bytes). type: a report names one of the row's classes, demangled (Module.Type) or only"
echo "mangled (\$s…); line: a report has main.swift:N inside the row's section of the fixture. leak-audit:"
echo "the JSON report's unreachable objects (bytes: malloc's usable sizes), those of the program's own types"
echo "(the others: closure contexts, collection buffers, runtime and Foundation objects), the groups with"
echo "one of those types on their path (fields named: a path names the fields it goes through); exit: its"
echo "exit status."
for tool in valgrind lsan; do
    [[ -n ${unavailable[$tool]:-} ]] && echo "n/a $tool: ${unavailable[$tool]}"
done
exit "$build_failed"
