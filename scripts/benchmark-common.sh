# Sourced by the benchmark scripts (not run): builds leak-audit, Fixtures' AllocationChurn and
# AllocationChurnPlain (the same program without LeakMonitor: the true plain baseline) in release,
# and sets `leak_audit`, `churn`, `plain`, `work` (a temporary directory removed at exit),
# `die MESSAGE` and `median VALUE...`. Builds emit DWARF 4, which valgrind 3.19 can read (clang's
# and swiftc's default, DWARF 5, makes callgrind give up), into scratch paths of their own so that
# the everyday debug build is not rebuilt: LEAK_AUDIT_BENCH_SCRATCH and
# LEAK_AUDIT_BENCH_FIXTURES_SCRATCH (default .build-bench and Fixtures/.build-bench). Expects
# `benchmark_name` to be set and the working directory to be the repository's root.

root_scratch=(--scratch-path "${LEAK_AUDIT_BENCH_SCRATCH:-.build-bench}")
fixtures_scratch=(--scratch-path "${LEAK_AUDIT_BENCH_FIXTURES_SCRATCH:-Fixtures/.build-bench}")
dwarf4=(-Xswiftc -dwarf-version=4 -Xcc -gdwarf-4)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

die() {
    echo "$benchmark_name: $*" >&2
    exit 1
}

echo "building leak-audit, AllocationChurn and AllocationChurnPlain (release)..." >&2
swift build -c release "${root_scratch[@]}" "${dwarf4[@]}" >"$work/build-root.log" 2>&1 \
    || { cat "$work/build-root.log" >&2; die "swift build of leak-audit failed"; }
for product in AllocationChurn AllocationChurnPlain; do
    swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" "${dwarf4[@]}" --product "$product" \
        >"$work/build-fixtures.log" 2>&1 \
        || { cat "$work/build-fixtures.log" >&2; die "swift build of Fixtures' $product failed"; }
done
leak_audit="$(swift build -c release "${root_scratch[@]}" "${dwarf4[@]}" --show-bin-path)/leak-audit"
fixtures_bin="$(swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" "${dwarf4[@]}" --show-bin-path)"
churn="$fixtures_bin/AllocationChurn"
plain="$fixtures_bin/AllocationChurnPlain"
[[ -x $leak_audit ]] || die "no leak-audit binary at $leak_audit"
[[ -x $churn ]] || die "no AllocationChurn binary at $churn"
[[ -x $plain ]] || die "no AllocationChurnPlain binary at $plain"

# median VALUE...: the middle value (mean of the two middle ones for an even count).
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
