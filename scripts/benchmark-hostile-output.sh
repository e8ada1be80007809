#!/usr/bin/env bash
# What the largest inputs of the report side cost leak-audit (release build): wall time, peak RSS
# (GNU time) and the size of each file written, for
#
#   deep stacks   a run of Fixtures' HostileWriter `deep-stacks 10000 48`: 10,000 types over budget,
#                 each allocated by a stack of 48 frames, the most a capture writes; text, then
#                 --output-json and --output-html
#   overlong      `deep-stacks 1 1500000`: one stack of 1,500,000 addresses (damage, cut to 48)
#   long names    `deep-stacks 1 41 BYTES`: a type named with 1 MB and with 8 MB, its HTML page
#   timeline      saved reports whose type has 1,000,000 and 3,300,000 timeline samples, rendered in
#                 every format
#   deep stacks   the deep-stacks run's own JSON report, rendered in every format
#   64 MB report  a saved report of just under 64 MB (the most `report` reads): the deep-stacks run's
#                 types repeated, each copy with frames of its own, rendered in every format
#
# Saved reports are made from a run's JSON report by python3 (samples added, types repeated). The
# records a run received are counted as the record stream holds them, in 32-byte slots: per type
# its definition and its stack (each a header slot and 24 bytes of payload a slot: 8 bytes and the
# name, 8 bytes an address) and two allocation records.
# Figures are printed, never asserted: the script exits 0 unless a build or a run fails.
#
# Usage: scripts/benchmark-hostile-output.sh
# Environment: LEAK_AUDIT_BENCH_SCRATCH and LEAK_AUDIT_BENCH_FIXTURES_SCRATCH (default .build-bench
# and Fixtures/.build-bench, shared with the other benchmarks).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/ensure-dependencies.sh
command -v python3 >/dev/null || { echo "benchmark-hostile-output: python3 is needed to make saved reports" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "benchmark-hostile-output: GNU time (/usr/bin/time) is needed" >&2; exit 1; }

root_scratch=(--scratch-path "${LEAK_AUDIT_BENCH_SCRATCH:-.build-bench}")
fixtures_scratch=(--scratch-path "${LEAK_AUDIT_BENCH_FIXTURES_SCRATCH:-Fixtures/.build-bench}")
dwarf4=(-Xswiftc -dwarf-version=4 -Xcc -gdwarf-4)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building leak-audit and HostileWriter (release)..." >&2
swift build -c release "${root_scratch[@]}" "${dwarf4[@]}" --product leak-audit >"$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; exit 1; }
swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" "${dwarf4[@]}" --product HostileWriter \
    >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
leak_audit="$(swift build -c release "${root_scratch[@]}" "${dwarf4[@]}" --show-bin-path)/leak-audit"
hostile="$(swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" "${dwarf4[@]}" --show-bin-path)/HostileWriter"

# measure LABEL FILE... -- COMMAND...: runs COMMAND (its exit code is the verdict's, not checked
# beyond "no signal"), prints its wall time, peak RSS and the size of each FILE.
measure() {
    local label=$1
    shift
    local files=()
    while [[ $1 != -- ]]; do
        files+=("$1")
        shift
    done
    shift
    rm -f "${files[@]}"
    local status=0
    /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || status=$?
    if ((status > 128 || status == 64)) || grep -q 'Command terminated by signal' "$work/time"; then
        echo "benchmark-hostile-output: '$label' died: $(tail -3 "$work/stderr")" >&2
        exit 1
    fi
    local seconds kb
    read -r seconds kb < <(tail -1 "$work/time")
    local sizes=""
    for file in "${files[@]}"; do
        sizes+=" $(basename "$file") $(awk '{ printf "%.2f MB", $1 / 1048576 }' <<<"$(stat -c %s "$file")")"
    done
    printf '%-44s %8s s %8d MB  exit %d %s\n' "$label" "$seconds" "$((kb / 1024))" "$status" "$sizes"
}

echo "case                                             time     peak RSS  files"
# The biggest legal run: 10,000 types of 48-frame stacks.
measure "deep stacks: 10,000 types × 48 frames, text" -- "$leak_audit" run "$hostile" deep-stacks 10000 48
measure "deep stacks: 10,000 types × 48 frames, json+html" "$work/deep.json" "$work/deep.html" -- \
    "$leak_audit" run --output-json "$work/deep.json" --output-html "$work/deep.html" "$hostile" deep-stacks 10000 48
# A stack no capture writes, in a ring large enough to hold it.
export LEAK_AUDIT_CHANNEL_SLOTS=$((1 << 21))
measure "overlong: 1 stack of 1,500,000, text" -- "$leak_audit" run "$hostile" deep-stacks 1 1500000
measure "overlong: 1 stack of 1,500,000, json" "$work/long.json" -- \
    "$leak_audit" run --output-json "$work/long.json" "$hostile" deep-stacks 1 1500000
measure "overlong: 1 stack of 1,500,000, html" "$work/long.html" -- \
    "$leak_audit" run --output-html "$work/long.html" "$hostile" deep-stacks 1 1500000
for bytes in 1048576 8388608; do
    measure "long name: $((bytes / 1048576)) MB, 41 frames, html" "$work/name.html" -- \
        "$leak_audit" run --output-html "$work/name.html" "$hostile" deep-stacks 1 41 "$bytes"
done
unset LEAK_AUDIT_CHANNEL_SLOTS

# Saved reports, made from runs' JSON reports.
"$leak_audit" run --output-json "$work/one.json" "$hostile" deep-stacks 1 48 >/dev/null 2>&1 || true
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
deep = json.load(open(f"{work}/deep.json"))
# 32-byte slots: a blob is a header slot and 24 bytes of payload a slot after it.
def blob(payload):
    return 32 * (1 + (payload + 23) // 24)
received = sum(blob(8 + len(t["name"].encode())) + blob(48 * 8) + 2 * 32 for t in deep["types"])
size = len(open(f"{work}/deep.json", "rb").read())
print(f"deep stacks: {received / 1048576:.2f} MB of records received, a JSON report of {size / 1048576:.2f} MB"
      f" ({size / received:.1f} times), {len(deep['frames'])} frames and {len(deep['stacks'])} stacks")

def write_many(count):
    # The run's types again and again, `count` in all, each copy named apart and with frames of its
    # own (addresses moved past the run's), so that nothing is shared; the summary counts them all.
    report = json.loads(json.dumps(deep))
    frames, stacks, base = report["frames"], report["stacks"], report["types"]
    types = []
    for index in range(count):
        copy, t = index // len(base), json.loads(json.dumps(base[index % len(base)]))
        if copy:
            t["name"] += f".copy{copy}"
            moved = {}
            for group in t["allocations"] + t["allocationsAtExit"]:
                if group["stack"] not in moved:
                    moved[group["stack"]] = len(stacks)
                    stack = []
                    for i in report["stacks"][group["stack"]]:
                        frames.append(dict(frames[i], address=hex(int(frames[i]["address"], 16) + copy * (1 << 32))))
                        stack.append(len(frames) - 1)
                    stacks.append(stack)
                group["stack"] = moved[group["stack"]]
        types.append(t)
    report["types"] = types
    summary = report["summary"]
    summary["trackedTypes"] = len(types)
    summary["exceededTypes"] = sum(t["exceeded"] for t in types)
    summary["instancesOverBudget"] = sum(t["peakLive"] - t["max"] for t in types if t["exceeded"])
    summary["findings"]["failing"] = summary["exceededTypes"]
    text = json.dumps(report, indent=2, separators=(",", " : "), sort_keys=True, ensure_ascii=False) + "\n"
    open(f"{work}/many.json", "w").write(text)
    return len(text.encode())

# As many types as stay under 64,000,000 bytes, from what one run's type costs.
count = int(len(deep["types"]) * 63_900_000 / size)
while write_many(count) >= 64_000_000:
    count = int(count * 0.995)
print(f"64 MB report: {count} types")
for name, count in (("timeline", 1_000_000), ("timeline-3.3M", 3_300_000)):
    report = json.load(open(f"{work}/one.json"))
    # One sample a millisecond, between 1 and 2 alive (the type's peak is 2); compact, as 3.3
    # million samples made 52 MB in issue 29.
    report["types"][0]["timeline"] = {
        "bucketMilliseconds": 1,
        "samples": [[t, 1, 2, 1 + t % 2] for t in range(count)],
    }
    report["target"]["durationMilliseconds"] = count + 1
    json.dump(report, open(f"{work}/{name}.json", "w"), separators=(",", ":"))
EOF
for input in deep timeline timeline-3.3M many; do
    size=$(awk '{ printf "%.1f MB", $1 / 1048576 }' <<<"$(stat -c %s "$work/$input.json")")
    for format in text json sarif junit github html; do
        measure "saved $input ($size): report --format $format" "$work/out" -- \
            "$leak_audit" report "$work/$input.json" --format "$format" -o "$work/out"
    done
done
