#!/usr/bin/env bash
# How long `leak-audit inspect` keeps a process stopped, and what the whole inspection costs:
# prints a table of figures next to the aim (stopped at most 250 ms for 100 MB of heap).
#
# A program of its own (built here with swiftc -O) allocates a heap and waits; each case inspects
# it REPS times with a release build of leak-audit and takes the medians of the time it was
# stopped (the report's target.stoppedMicroseconds: from the first thread seized to the last let
# go), the whole inspection's wall time (bash's clock) and leak-audit's peak RSS (GNU time %M),
# beside the process's own resident memory (VmRSS) and the live objects the census counted.
#
#   blocks MB       MB of heap in 1 KiB arrays, each held by an object in a global array
#   objects N       N small objects (a class of four words) in a global array
#
# Usage: scripts/benchmark-inspect.sh
# Environment (all optional):
#   LEAK_AUDIT          a leak-audit executable to measure (default: scripts/build-release.sh into
#                       LEAK_AUDIT_BENCH_RELEASE, default .build-bench-release)
#   HEAP_MB (default "100 400"), OBJECTS (default "1000000"), REPS (default 5)
# Figures are printed, never asserted: the script exits 0 unless a build or an inspection fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

HEAP_MB=${HEAP_MB:-100 400}
OBJECTS=${OBJECTS:-1000000}
REPS=${REPS:-5}

die() {
    echo "benchmark-inspect: $*" >&2
    exit 1
}

work=$(mktemp -d)
heap_pid=""
cleanup() {
    [[ -n $heap_pid ]] && kill "$heap_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

leak_audit=${LEAK_AUDIT:-}
if [[ -z $leak_audit ]]; then
    echo "building leak-audit (release)..." >&2
    leak_audit=$(scripts/build-release.sh "${LEAK_AUDIT_BENCH_RELEASE:-.build-bench-release}" | tail -n 1)
fi
[[ -x $leak_audit ]] || die "no leak-audit executable at '$leak_audit'"
gnu_time=""
[[ -x /usr/bin/time ]] && /usr/bin/time -f %M true >/dev/null 2>&1 && gnu_time=/usr/bin/time

cat >"$work/heap.swift" <<'SWIFT'
import Foundation

final class Block { let bytes: [UInt8]; init(_ size: Int) { bytes = [UInt8](repeating: 1, count: size) } }
final class Small { var a = 1, b = 2, c = 3, d = 4 }
var blocks: [Block] = []
var smalls: [Small] = []
let count = Int(CommandLine.arguments[2]) ?? 0
switch CommandLine.arguments[1] {
case "blocks": for _ in 0..<(count * 1024) { blocks.append(Block(1024 - 32)) }
default: for _ in 0..<count { smalls.append(Small()) }
}
print("ready")
fflush(stdout)
while true { sleep(60) }
SWIFT
echo "building the heap program (swiftc -O)..." >&2
swiftc -O "$work/heap.swift" -o "$work/heap" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; die "swiftc failed"; }

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# measure MODE COUNT LABEL: starts the heap program, inspects it REPS times, prints one row.
measure() {
    local mode=$1 count=$2 label=$3 stopped=() walls=() peaks=() start end objects rss
    "$work/heap" "$mode" "$count" >"$work/heap.out" &
    heap_pid=$!
    until grep -q ready "$work/heap.out" 2>/dev/null; do
        kill -0 "$heap_pid" 2>/dev/null || die "the heap program ended before it was ready"
        sleep 0.1
    done
    rss=$(awk '$1 == "VmRSS:" { printf "%.0f", $2 / 1024 }' "/proc/$heap_pid/status")
    for _ in $(seq "$REPS"); do
        start=${EPOCHREALTIME/[.,]/}
        if [[ -n $gnu_time ]]; then
            "$gnu_time" -f %M -o "$work/rss" "$leak_audit" inspect --format json -o "$work/report.json" "$heap_pid" \
                || die "$label: leak-audit inspect failed"
            peaks+=("$(tail -n 1 "$work/rss")")
        else
            "$leak_audit" inspect --format json -o "$work/report.json" "$heap_pid" || die "$label: leak-audit inspect failed"
        fi
        end=${EPOCHREALTIME/[.,]/}
        walls+=("$(((end - start) / 1000))")
        read -r micros objects < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = r["census"]
print(r["target"]["stoppedMicroseconds"], sum(t["liveAtExit"] for t in c["types"]) + c["foldedInstances"] + c["foldedTestCaseInstances"])
' "$work/report.json")
        stopped+=("$micros")
    done
    kill "$heap_pid"
    wait "$heap_pid" 2>/dev/null || true
    heap_pid=""
    local peak="n/a"
    ((${#peaks[@]})) && peak="$(($(median "${peaks[@]}") / 1024)) MB"
    printf '| %-15s | %9s MB | %10s | %9.1f ms | %8s ms | %15s |\n' "$label" "$rss" "$objects" \
        "$(awk "BEGIN { print $(median "${stopped[@]}") / 1000 }")" "$(median "${walls[@]}")" "$peak"
}

echo
echo "leak-audit inspect: median of $REPS inspections each ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| case            | process RSS  | objects    | stopped      | wall        | leak-audit peak |"
echo "|-----------------|--------------|------------|--------------|-------------|-----------------|"
for mb in $HEAP_MB; do measure blocks "$mb" "blocks $mb MB"; done
for n in $OBJECTS; do measure objects "$n" "objects $n"; done
echo
echo "aim: stopped at most 250 ms for 100 MB of heap"
