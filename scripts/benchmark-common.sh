# Sourced by the benchmark scripts (not run): builds leak-audit and Fixtures' AllocationChurn in
# release and sets `leak_audit`, `churn`, `work` (a temporary directory removed at exit),
# `die MESSAGE` and `median VALUE...`. Honours LEAK_AUDIT_BENCH_SCRATCH and LEAK_AUDIT_BENCH_FIXTURES_SCRATCH
# (--scratch-path for the root package and for Fixtures). Expects `benchmark_name` to be set and
# the working directory to be the repository's root.

root_scratch=()
fixtures_scratch=()
[[ -n ${LEAK_AUDIT_BENCH_SCRATCH:-} ]] && root_scratch=(--scratch-path "$LEAK_AUDIT_BENCH_SCRATCH")
[[ -n ${LEAK_AUDIT_BENCH_FIXTURES_SCRATCH:-} ]] && fixtures_scratch=(--scratch-path "$LEAK_AUDIT_BENCH_FIXTURES_SCRATCH")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

die() {
    echo "$benchmark_name: $*" >&2
    exit 1
}

echo "building leak-audit and AllocationChurn (release)..." >&2
swift build -c release "${root_scratch[@]}" >"$work/build-root.log" 2>&1 \
    || { cat "$work/build-root.log" >&2; die "swift build of leak-audit failed"; }
swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" --product AllocationChurn \
    >"$work/build-fixtures.log" 2>&1 \
    || { cat "$work/build-fixtures.log" >&2; die "swift build of Fixtures' AllocationChurn failed"; }
leak_audit="$(swift build -c release "${root_scratch[@]}" --show-bin-path)/leak-audit"
churn="$(swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" --show-bin-path)/AllocationChurn"
[[ -x $leak_audit ]] || die "no leak-audit binary at $leak_audit"
[[ -x $churn ]] || die "no AllocationChurn binary at $churn"

# median VALUE...: the middle value (mean of the two middle ones for an even count).
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
