import CLeakMonitorShim
import Dispatch
import Foundation
import LeakMonitor
import XCTest

private final class Screen: MemoryLeakMonitorable {
    var max: Int { 2 }
    init() { MemoryLeakMonitor.validate(self) }
}

private class Coordinator: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

private final class ArchiveCoordinator: Coordinator {
    override var max: Int { 3 }
}

private final class DoublyValidated: Coordinator {
    override var max: Int { 5 }
    override init() {
        super.init()
        MemoryLeakMonitor.validate(self)
    }
}

private final class Box<Value>: MemoryLeakMonitorable {
    let value: Value
    var max: Int { 10 }
    init(_ value: Value) {
        self.value = value
        MemoryLeakMonitor.validate(self)
    }
}

private actor Session: MemoryLeakMonitorable {
    nonisolated var max: Int { 10 }
    init() { MemoryLeakMonitor.validate(self) }
}

private final class Refused: MemoryLeakMonitorable {
    var max: Int { 10 }
    init?() {
        MemoryLeakMonitor.validate(self)
        return nil
    }
}

private final class NeverTracked {}

private final class Renamed: MemoryLeakMonitorable {
    var max: Int { 1 }
    var leakReportName: String { "Custom \"name\"" }
    init() { MemoryLeakMonitor.validate(self) }
}

private final class Hammered: MemoryLeakMonitorable {
    var max: Int { 1_000_000 }
    init() { MemoryLeakMonitor.validate(self) }
}

/// A megabyte each, its elements never touched: instances of it lie in many 16 MiB windows of the
/// address space, each its own leaf of the shim's set of tracked objects.
private final class Slab: ManagedBuffer<Int, UInt8>, MemoryLeakMonitorable {
    var max: Int { 1_000 }

    static func make() -> Slab {
        // swift-format-ignore: NeverForceUnwrap
        let slab = create(minimumCapacity: 1 << 20) { _ in 0 } as! Slab
        MemoryLeakMonitor.validate(slab)
        return slab
    }
}

private final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Violation] = []
    func record(_ violation: Violation) { lock.withLock { recorded.append(violation) } }
    var violations: [Violation] { lock.withLock { recorded } }
}

final class MemoryLeakMonitorTests: XCTestCase {
    private var recorder = Recorder()

    override func setUp() {
        recorder = Recorder()
        let recorder = self.recorder
        MemoryLeakMonitor.violationHandler = .custom { recorder.record($0) }
    }

    override func tearDown() {
        MemoryLeakMonitor.violationHandler = .stopInDebugBuilds
    }

    func testDeallocationsAreObservedWithoutLeakAudit() {
        XCTAssertTrue(MemoryLeakMonitor.observesDeallocations)
        XCTAssertFalse(MemoryLeakMonitor.isAttachedToLeakAudit)
    }

    func testLiveCountFollowsLifetimes() {
        var screens: [Screen] = []
        for _ in 0..<2 { screens.append(Screen()) }
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Screen.self), 2)
        screens.removeFirst()
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Screen.self), 1)
        screens.removeAll()
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Screen.self), 0)
        XCTAssertTrue(recorder.violations.isEmpty)
    }

    func testViolationWhenOverBudget() {
        let kept = (0..<3).map { _ in Screen() }
        XCTAssertEqual(recorder.violations, [Violation(typeName: String(reflecting: Screen.self), max: 2, liveCount: 3)])
        XCTAssertGreaterThanOrEqual(MemoryLeakMonitor.peakCount(of: Screen.self), 3)
        withExtendedLifetime(kept) {}
    }

    func testSubclassHasItsOwnBudget() {
        let archives = (0..<3).map { _ in ArchiveCoordinator() }
        XCTAssertTrue(recorder.violations.isEmpty, "\(recorder.violations)")
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: ArchiveCoordinator.self), 3)
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Coordinator.self), 0)
        let base = (0..<2).map { _ in Coordinator() }
        XCTAssertEqual(recorder.violations.map(\.max), [1])
        withExtendedLifetime((archives, base)) {}
    }

    func testValidatingTwiceCountsOnce() {
        var objects = [DoublyValidated(), DoublyValidated()]
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: DoublyValidated.self), 2)
        objects.removeAll()
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: DoublyValidated.self), 0)
    }

    func testGenericSpecializationsAreSeparateTypes() {
        do {
            let ints = (0..<4).map { Box($0) }
            let strings = (0..<7).map { Box("\($0)") }
            XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Box<Int>.self), 4)
            XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Box<String>.self), 7)
            let names = Set(MemoryLeakMonitor.counts().map(\.typeName))
            XCTAssertTrue(names.contains(where: { $0.hasSuffix("Box<Swift.Int>") }), "\(names)")
            XCTAssertTrue(names.contains(where: { $0.hasSuffix("Box<Swift.String>") }), "\(names)")
            withExtendedLifetime((ints, strings)) {}
        }
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Box<Int>.self), 0)
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Box<String>.self), 0)
    }

    func testAnActorsDeathsAreSeen() {
        var sessions = (0..<3).map { _ in Session() }
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Session.self), 3)
        sessions.removeAll()
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Session.self), 0)
    }

    func testAnInitThatFailsAfterValidateLeavesNothingAlive() {
        XCTAssertNil(Refused())
        XCTAssertEqual(MemoryLeakMonitor.peakCount(of: Refused.self), 1)
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Refused.self), 0)
    }

    /// Tracked types' deaths come through one hook, in their metadata's destroy word; any other
    /// class keeps its own destroy function (its deallocating deinit), so its deaths cost nothing.
    func testOnlyTrackedTypesDieThroughTheHook() {
        func destroyWord(_ type: AnyClass) -> UnsafeRawPointer? {
            unsafeBitCast(type, to: UnsafeRawPointer.self)
                .load(fromByteOffset: -2 * MemoryLayout<UnsafeRawPointer>.stride, as: UnsafeRawPointer?.self)
        }
        withExtendedLifetime((Screen(), Renamed(), NeverTracked())) {}
        XCTAssertNotNil(destroyWord(Screen.self))
        XCTAssertEqual(destroyWord(Screen.self), destroyWord(Renamed.self))
        XCTAssertNotNil(destroyWord(NeverTracked.self))
        XCTAssertNotEqual(destroyWord(NeverTracked.self), destroyWord(Screen.self))
    }

    /// Instances spread over many 16 MiB windows, each tracked and freed where the thread's last
    /// window was another (the shim keeps the thread's last leaf of its set apart), and freed by
    /// other threads than the one that tracked them: every count exact.
    func testCountsAreExactAcrossTheWindowsOfTheAddressSpace() {
        var slabs = (0..<64).map { _ in Slab.make() }
        let windows = Set(slabs.map { UInt(bitPattern: ObjectIdentifier($0)) >> 24 })
        XCTAssertGreaterThan(windows.count, 2, "the slabs lie in several 16 MiB windows")
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Slab.self), 64)
        // Validated again, each from another window's leaf: still counted once.
        MemoryLeakMonitor.validate(slabs[63])
        MemoryLeakMonitor.validate(slabs[0])
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Slab.self), 64)
        // Freed from both ends in turn, so that each death's window differs from the last one's.
        while !slabs.isEmpty {
            if slabs.count % 2 == 0 { slabs.removeFirst() } else { slabs.removeLast() }
            XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Slab.self), slabs.count)
        }
        // Made on one thread, freed on four.
        let kept = NSLock()
        nonisolated(unsafe) var handed = (0..<64).map { _ in Slab.make() }
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Slab.self), 64)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while let slab = kept.withLock({ handed.popLast() }) { withExtendedLifetime(slab) {} }
        }
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Slab.self), 0)
        XCTAssertTrue(recorder.violations.isEmpty)
    }

    func testReportNameCanBeOverridden() {
        let objects = [Renamed(), Renamed()]
        XCTAssertEqual(recorder.violations.map(\.typeName), ["Custom \"name\""])
        withExtendedLifetime(objects) {}
    }

    func testCountsAreExactFromManyThreads() {
        let kept = NSLock()
        nonisolated(unsafe) var survivors: [Hammered] = []
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for index in 0..<5_000 {
                let object = Hammered()
                if index % 100 == worker { kept.withLock { survivors.append(object) } }
            }
        }
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Hammered.self), survivors.count)
        XCTAssertEqual(survivors.count, 8 * 50)
        survivors.removeAll()
        XCTAssertEqual(MemoryLeakMonitor.liveCount(of: Hammered.self), 0)
    }
}

/// Captures from one call site, from another, and from a recursion of each depth: distinct
/// functions and a recursion that keeps a frame per level, so that the stacks differ where each
/// test says. Every capture goes through `ids(of:)`, so that stacks of the same path are the same
/// all the way up.
private enum StackProbe: Hashable {
    case menu, link
    case nested(Int)

    nonisolated(unsafe) static var levels = 0

    @inline(never) static func fromMenu() -> UInt32 { leakaudit_stack_capture() }

    @inline(never) static func fromLink() -> UInt32 { leakaudit_stack_capture() }

    @inline(never) static func nested(_ depth: Int) -> UInt32 {
        let id = depth == 0 ? leakaudit_stack_capture() : nested(depth - 1)
        levels += 1  // after the call: no tail call, whatever the optimizer
        return id
    }

    @inline(never) func capture() -> UInt32 {
        switch self {
        case .menu: Self.fromMenu()
        case .link: Self.fromLink()
        case .nested(let depth): Self.nested(depth)
        }
    }

    /// The stack id of each probe, captured in this order from one call site.
    @inline(never) static func ids(of probes: [StackProbe]) -> [UInt32] { probes.map { $0.capture() } }
}

final class StackCaptureTests: XCTestCase {
    /// Whatever stack the thread captured before (the same, one that differs at its first frame,
    /// in its middle, by a frame more or less), each stack gets the same id each time, and
    /// different stacks different ids; stacks alike over the deepest capture (48 frames) and
    /// different only below it are one stack.
    func testEachStackKeepsItsIdWhateverCameBefore() {
        let probes: [StackProbe] = [
            .menu, .menu, .link, .menu, .nested(3), .nested(4), .nested(3), .nested(4), .link, .nested(60), .nested(61),
            .nested(60), .nested(3), .nested(70), .menu,
        ]
        // Forwards, then backwards, from one call site.
        let passes = [probes, probes.reversed()].map { StackProbe.ids(of: $0) }
        let ids = passes[0] + passes[1].reversed()
        var idOf: [StackProbe: UInt32] = [:]
        for (probe, id) in zip(probes + probes, ids) {
            XCTAssertNotEqual(id, 0xFFFF_FFFF)
            let deep = if case .nested(let depth) = probe, depth >= 60 { true } else { false }
            let key = deep ? StackProbe.nested(60) : probe
            XCTAssertEqual(idOf[key, default: id], id, "\(probe)")
            idOf[key] = id
        }
        XCTAssertEqual(Set(idOf.values).count, idOf.count, "\(idOf)")
        XCTAssertEqual(idOf.count, 5)
    }

    /// Once a process holds more than 256 stacks, every page of its stack table is made at once
    /// (MADV_POPULATE_WRITE), not page by page as probes read them and inserts write them. The
    /// table lies at no page boundary: advice over its bounds is refused, so only its whole pages
    /// are asked for.
    func testTheStackTableIsMadeWholeOnceTheProcessHoldsManyStacks() throws {
        // A kernel before 5.14 refuses the advice (MADV_POPULATE_WRITE, 23), and pages are made as
        // they are touched.
        let probe = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        defer { munmap(probe, 4096) }
        try XCTSkipIf(madvise(probe, 4096, 23) != 0, "this kernel makes no pages on advice")
        for index in 0..<300 {
            let addresses: [UInt] = [0x7_0000_1000 + UInt(index) * 16, 0x7_0000_2000, 0x7_0000_3000]
            let id = addresses.withUnsafeBufferPointer { leakaudit_stack_capture_synthetic($0.baseAddress!, 3) }
            XCTAssertNotEqual(id, 0xFFFF_FFFF)
        }
        var start: UnsafeRawPointer? = nil
        var length = 0
        leakaudit_stack_table_bounds(&start, &length)
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let first = (UInt(bitPattern: start) + page - 1) & ~(page - 1)
        let last = (UInt(bitPattern: start) + UInt(length)) & ~(page - 1)
        XCTAssertGreaterThan(last, first + 1000 * page, "a table of 6 MiB")
        var resident = [UInt8](repeating: 0, count: Int((last - first) / page))
        XCTAssertEqual(mincore(UnsafeMutableRawPointer(bitPattern: first), Int(last - first), &resident), 0)
        let made = resident.filter { $0 & 1 != 0 }.count
        XCTAssertEqual(made, resident.count, "\(made) of the table's \(resident.count) whole pages made")
    }

    /// From the same frames as the stack before (a loop's next allocation), a stack that goes on a
    /// frame further is another stack; one whose next frame returns to address 0 ends there, and
    /// so does one cut at the deepest capture.
    func testAStackThatGoesOnFromTheSameFramesIsAnotherStack() {
        let short: [UInt] = [0x1000, 0x2000, 0x3000]
        let deep = (1...50).map { UInt($0) << 12 }
        let stacks: [[UInt]] = [
            short, short + [0x4000], short, short + [0], short + [0x4000], short, deep, Array(deep.prefix(49)), deep,
            Array(deep.prefix(47)),
        ]
        let ids = stacks.map { addresses in
            addresses.withUnsafeBufferPointer { leakaudit_stack_capture_synthetic($0.baseAddress!, UInt32($0.count)) }
        }
        XCTAssertFalse(ids.contains(0xFFFF_FFFF))
        XCTAssertEqual([ids[2], ids[3], ids[5]], [ids[0], ids[0], ids[0]], "\(ids)")
        XCTAssertEqual(ids[4], ids[1])
        XCTAssertNotEqual(ids[1], ids[0])
        XCTAssertEqual([ids[7], ids[8]], [ids[6], ids[6]], "cut at 48 frames: \(ids)")
        XCTAssertEqual(Set([ids[0], ids[1], ids[6], ids[9]]).count, 4, "\(ids)")
    }

    /// Another thread's stack differs at its top (its thread's start), so the same path there has
    /// another id; each thread compares with its own last stack.
    func testAnotherThreadsStackIsAnotherStack() {
        final class Captured: @unchecked Sendable { var ids: [UInt32] = [] }
        // One closure, so that both threads capture through the same call sites up to it.
        let captureAgainAndAgain: @Sendable () -> [UInt32] = { StackProbe.ids(of: [.menu, .menu, .menu]) }
        let there = Captured()
        let done = DispatchSemaphore(value: 0)
        Thread {
            there.ids = captureAgainAndAgain()
            done.signal()
        }.start()
        done.wait()
        let here = captureAgainAndAgain()
        XCTAssertEqual(Set(here).count, 1, "\(here)")
        XCTAssertEqual(Set(there.ids).count, 1, "\(there.ids)")
        XCTAssertNotEqual(there.ids.first, here.first)
    }
}
