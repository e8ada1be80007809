// swift-tools-version:6.0
// Real programs that leak-audit's end-to-end tests build and audit. Each scenario takes `leaky`
// or `clean` as its first argument: the clean twin runs the same code with the bug fixed and must
// report nothing. This package depends on leak-audit by path, as a user's package would.
import PackageDescription

let leakMonitor: Target.Dependency = .product(name: "LeakMonitor", package: "leak-audit")

/// A scenario program linking LeakMonitor.
func scenario(_ name: String, _ dependencies: [Target.Dependency] = [leakMonitor]) -> Target {
    .executableTarget(name: name, dependencies: dependencies)
}

let package = Package(
    name: "Fixtures",
    dependencies: [
        .package(name: "leak-audit", path: ".."),
        // A separate package, so that its library is linked as a shared object, not statically.
        .package(name: "WidgetKit", path: "WidgetKit"),
    ],
    targets: [
        scenario("ViewModelRetention"),
        scenario("DismissalCapture"),
        scenario("CoordinatorBudgets"),
        scenario("WeakObservers"),
        scenario("ConcurrentSessions"),
        scenario("GenericBoxes"),
        scenario("CrashAfterLeak"),
        scenario("ExitNonZero"),
        scenario("EscapingNames"),
        scenario("InterruptedWhileLeaking"),
        scenario("LargeLeak"),
        scenario("AsyncRequests"),
        // Holders of different kinds (a task, a cycle, an enum payload), for --retainers.
        scenario("RetainerKinds"),
        // Addresses in fields that cannot hold them (an Int, a Date, a struct of plain values), and
        // a C function pointer beside a true holder, for --retainers: never a false holder.
        scenario("FalseHolders"),
        // Threads that wait in a system call while a frame of theirs holds a model, with stale
        // words of the model below it, for --retainers: the frame holds it, not the wait.
        .target(name: "CStaleStack"),
        scenario("StaleStackWords", ["CStaleStack", leakMonitor]),
        // A program that links XCTest and never starts its run (a bundle with its own main).
        scenario("OwnTestMain"),
        // A NotificationCenter block and an Observation onChange closure holding view models.
        scenario("ObserverRetention"),
        // ViewModelRetention's leak over a few seconds, printing as it goes: a target for the live
        // status line on a terminal.
        scenario("SlowScreens"),
        // 200,000 live objects and 50 heavy leaks in a global cache.
        scenario("LargeHeapRetention"),
        // Every way a process can end or turn on its environment, after leaking (docs/reliability.md).
        scenario("FaultEndings"),
        // Many threads creating and freeing at once, with the counts they made (docs/reliability.md).
        scenario("ConcurrentLoad"),
        // One thread allocating one type from stacks that differ in every way a stack can.
        scenario("StackVariety"),
        // Writes into leak-audit's channel what LeakMonitor never would (no LeakMonitor).
        .executableTarget(name: "HostileWriter"),
        scenario("DynamicLibraryType", [.product(name: "WidgetKit", package: "WidgetKit"), leakMonitor]),
        // Allocation-heavy, for the benchmark.
        scenario("AllocationChurn"),
        // The same program (its main.swift is a link to AllocationChurn's) without LeakMonitor: the
        // benchmark's true plain baseline.
        .executableTarget(name: "AllocationChurnPlain", swiftSettings: [.define("ALLOCATION_CHURN_PLAIN")]),
        // Allocation-heavy with a kept and a cyclic leak, for scripts/compare-peers.sh.
        scenario("LeakyChurn"),
        // Never link LeakMonitor: without budgets leak-audit must say it cannot audit them; with
        // --budget or --census it watches their allocations.
        .executableTarget(name: "Uninstrumented"),
        .executableTarget(name: "UninstrumentedGallery"),
        // A thread that cannot stop while it spawns, for a heap walk's copy (ProcessCopierTests).
        .executableTarget(name: "SpawnBlocked"),
        // Issue 31's unreachable check, with no setup (none of them links LeakMonitor): every shape
        // of leak that nothing reaches at exit, each with a clean twin (`clean`); holders that keep
        // objects reachable where only a precise or conservative walk sees it (clean only); and a
        // service that leaks while it runs, for `leak-audit inspect PID`.
        .executableTarget(name: "UnreachableShapes", dependencies: ["_ShapeParts"]),
        // A package module whose name starts with an underscore: its types are the package's.
        .target(name: "_ShapeParts"),
        .executableTarget(name: "ReachableHolders"),
        .executableTarget(name: "LeakingService"),
        // Objects the optimizer frees inline where it made them (no destroy word read), whose
        // blocks untyped memory then takes: their deaths must be seen, or the heap walk finds the
        // objects the ledger calls alive nowhere and checks nothing.
        .executableTarget(name: "InlinedDeaths"),
        // A malloc that puts a 16-byte header before every block (an interposer's), replacing the
        // process's: the heap walk must say it did not understand the heap, never "no longer alive"
        // or "nothing unreachable".
        .target(name: "CHeaderedMalloc"),
        scenario("HeaderedMalloc", ["CHeaderedMalloc", leakMonitor]),
        // An XCTest bundle: one leaky test and its clean twin.
        .testTarget(name: "ScreenTests", dependencies: [leakMonitor]),
    ],
    // Fixtures read like typical app code, which mostly still builds in Swift 5 mode.
    swiftLanguageModes: [.v5]
)
