#!/usr/bin/env bash
# Builds leak-audit for real use: in release, with the Swift runtime and Foundation linked into the
# executable (`--static-swift-stdlib`), and libstdc++ and libgcc too, beside the two helper
# libraries it loads into targets.
#
# Linked in, they need no loading and no symbol binding at each start: with the flags below, a
# run's fixed cost is about 4 ms, against 8 ms with a plain `swift build -c release`
# (docs/benchmarks.md, "Results"). The helper libraries stay dynamic: they run inside the target
# and must share its Swift runtime. (One `swift build --static-swift-stdlib` of the whole package
# cannot build them: the test observer needs XCTest and Swift Testing, which have no static form.)
#
# Usage: scripts/build-release.sh [DIRECTORY [SWIFT-BUILD-FLAGS...]]
#   DIRECTORY (default the repository's .build-release) receives leak-audit, libLeakAuditPreload.so and
#   libLeakAuditTestObserver.so; leak-audit finds the libraries beside itself, so copy or move
#   the three together. The flags go to each `swift build` (the benchmarks add DWARF 4 flags).
#   The builds keep their intermediate files in DIRECTORY/.scratch, so a second run is
#   incremental. Prints the path of the executable.
set -euo pipefail
# DIRECTORY is the caller's (relative to where they are), the default the repository's.
destination=${1:-}
[[ -z $destination || $destination == /* ]] || destination=$PWD/$destination
cd "$(dirname "$0")/.."
destination=${destination:-.build-release}
shift || true
scratch=$destination/.scratch
mkdir -p "$scratch"

build() {
    local log=$scratch/$1.log
    shift
    swift build -c release "$@" >"$log" 2>&1 || {
        cat "$log" >&2
        echo "build-release: swift build $* failed" >&2
        exit 1
    }
}

# The executable's own flags, each measured on the fixed cost of a run (docs/benchmarks.md, "Reading
# these results"):
#   --static-swift-stdlib: the runtime and Foundation linked in, so nothing of theirs to load or bind;
#   -no-pie: addresses fixed at link time, so the loader relocates none of the executable's 40,000
#     pointers (about 120 fewer page faults at each start). The price: leak-audit's own image (not
#     the target's, not the helper libraries) loads at the same address each run, without ASLR;
#   -disable-concrete-type-metadata-mangled-name-accessors: the code asks for a generic type's
#     metadata by calling its accessor, not by a mangled name that the runtime demangles and checks
#     (swift-argument-parser's `Option<T>` and `OptionGroup<T>`: 4 M fewer instructions a start).
executable_flags=(
    --static-swift-stdlib -Xlinker -no-pie
    -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
)
# The C++ runtime linked in too, when the machine has its archive: the Swift runtime needs libstdc++,
# and loading and relocating libstdc++.so cost each start about 0.4 ms. The toolchain asks for it
# with a plain `-lstdc++`, which finds the shared library first; a directory that holds only the
# archive, searched before the compiler's own, makes `-lstdc++` find the archive. libgcc goes in
# as well (-static-libgcc), so libgcc_s.so's start, which probes the CPU, is not paid either.
# Asked of the clang beside swift, which links (another clang could find another GCC's libstdc++).
toolchain_clang=$(dirname "$(command -v swift)")/clang
[[ -x $toolchain_clang ]] || toolchain_clang=clang
libstdcxx_archive=$("$toolchain_clang" -print-file-name=libstdc++.a 2>/dev/null || true)
if [[ $libstdcxx_archive == /* && -f $libstdcxx_archive ]]; then
    archive_only=$(cd "$scratch" && pwd)/static-libstdc++
    mkdir -p "$archive_only"
    ln -sf "$libstdcxx_archive" "$archive_only/libstdc++.a"
    executable_flags+=(-Xswiftc -L -Xswiftc "$archive_only" -Xswiftc -Xclang-linker -Xswiftc -static-libgcc)
else
    echo "build-release: no libstdc++.a for the toolchain's clang (Debian, Ubuntu: the libstdc++-N-dev of its GCC; Fedora: libstdc++-static); linking libstdc++.so" >&2
fi
build helpers --scratch-path "$scratch/helpers" --product LeakAuditPreload "$@"
build helpers --scratch-path "$scratch/helpers" --product LeakAuditTestObserver "$@"
build executable --scratch-path "$scratch/executable" "${executable_flags[@]}" --product leak-audit "$@"

helpers=$(swift build -c release --scratch-path "$scratch/helpers" --show-bin-path "$@")
executable=$(swift build -c release --scratch-path "$scratch/executable" "${executable_flags[@]}" --show-bin-path "$@")
if [[ -n ${archive_only:-} ]] && readelf -d "$executable/leak-audit" | grep -q 'NEEDED.*libstdc++'; then
    echo "build-release: leak-audit still needs libstdc++.so although $libstdcxx_archive was given to link in" >&2
    exit 1
fi
# Each file is copied beside its place and renamed over it: a leak-audit that still runs from
# DIRECTORY keeps its file, where a copy over it would fail ("Text file busy").
for file in "$helpers/libLeakAuditPreload.so" "$helpers/libLeakAuditTestObserver.so" "$executable/leak-audit"; do
    cp "$file" "$destination/.new-${file##*/}"
    mv -f "$destination/.new-${file##*/}" "$destination/${file##*/}"
done
echo "$(cd "$destination" && pwd)/leak-audit"
