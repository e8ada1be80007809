import LeakAuditWire
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// LifetimeLedger's replay into exact counts, and the ReportBuilder that turns a ledger into a
/// report.
final class LifetimeLedgerTests: XCTestCase {
    /// Feeds events with consecutive sequence numbers, as the decoder would.
    private struct Replay {
        var ledger = LifetimeLedger()
        var sequence: UInt64 = 0

        mutating func define(_ typeID: UInt32, _ name: String, max: Int) {
            ledger.apply(.typeDefined(id: typeID, name: name, max: max))
            sequence += 1
        }

        mutating func alloc(_ typeID: UInt32, _ object: UInt64, stack: UInt32) {
            ledger.apply(.allocated(typeID: typeID, object: object, stackID: stack, sequence: sequence))
            sequence += 1
        }

        mutating func free(_ typeID: UInt32, _ object: UInt64) {
            ledger.apply(.deallocated(typeID: typeID, object: object, sequence: sequence))
            sequence += 1
        }

        func type(_ typeID: UInt32) throws -> LifetimeLedger.TypeLedger {
            try XCTUnwrap(ledger.types[typeID], "type \(typeID) not in the ledger")
        }

        /// The stack of each instance alive at the type's peak, as the report counts them.
        func alivesAtPeak(_ typeID: UInt32) throws -> [UInt32] {
            let tally = try XCTUnwrap(ledger.siteTallies { $0 == typeID }[typeID], "type \(typeID) not in the ledger")
            return tally.atPeak.counts.flatMap { Array(repeating: $0.site.stackID, count: $0.count) }.sorted()
        }
    }

    // MARK: - Counts

    /// Instances kept in a word (outside tests) and whole (in a test) count alike: which were
    /// alive at the peak, what is alive at exit, and an address reused across the two tables.
    func testCompactAndWholeInstancesShareTheirTypesCountsAndPeak() throws {
        var replay = Replay()
        replay.define(1, "App.Model", max: 1)
        replay.define(2, "App.Other", max: 1)
        replay.alloc(1, 0xA0, stack: 1)  // compact
        replay.ledger.apply(.allocated(typeID: 1, object: 0xB0, stackID: 2, sequence: replay.sequence, test: 5))  // whole
        replay.sequence += 1
        replay.free(1, 0xA0)  // alive at the peak of 2, died since
        replay.alloc(1, 0xC0, stack: 3)  // after the peak
        replay.alloc(2, 0xD0, stack: 4)
        replay.alloc(2, 0xE0, stack: 4)  // type 2: alive now = alive at its peak

        XCTAssertEqual(try replay.alivesAtPeak(1), [1, 2])
        XCTAssertEqual(try replay.alivesAtPeak(2), [4, 4])
        let exit = try XCTUnwrap(replay.ledger.siteTallies { $0 == 1 }[1]).atExit.counts
        XCTAssertEqual(exit.map(\.site.stackID).sorted(), [2, 3])
        XCTAssertEqual(exit.first { $0.site.stackID == 2 }?.site.test, 5)
        let type = try replay.type(1)
        XCTAssertEqual(type.peak, 2)
        XCTAssertEqual(type.live.keys.sorted(), [0xB0, 0xC0])
        XCTAssertEqual(replay.ledger.liveObjects { _ in true }.sorted(), [0xB0, 0xC0, 0xD0, 0xE0])

        // A test's allocation at the address of a compact instance retires it (its deallocation
        // went unseen), and the other way round.
        replay.ledger.apply(.allocated(typeID: 1, object: 0xC0, stackID: 5, sequence: replay.sequence, test: 6))
        replay.sequence += 1
        replay.alloc(1, 0xB0, stack: 6)
        XCTAssertEqual(try replay.type(1).liveCount, 2)
        XCTAssertEqual(replay.ledger.unseenDeallocations[1], 2)
        XCTAssertEqual(try replay.type(1).live[0xC0]?.test, 6)
        XCTAssertEqual(try replay.type(1).live[0xB0]?.stackID, 6)
        replay.free(1, 0xC0)
        replay.free(1, 0xB0)
        XCTAssertEqual(try replay.type(1).liveCount, 0)
        XCTAssertEqual(replay.ledger.inconsistentEvents, 0)
    }

    /// A ledger is a value: its counts and live table (kept in one object that every record changes
    /// in place) are copied when a copy of the ledger changes, so neither copy sees the other's
    /// records.
    func testACopiedLedgerKeepsItsOwnCountsAndInstances() throws {
        var replay = Replay()
        replay.define(1, "App.Model", max: 5)
        replay.alloc(1, 0xA0, stack: 1)
        replay.alloc(1, 0xB0, stack: 2)
        let before = replay
        replay.free(1, 0xA0)
        replay.alloc(1, 0xC0, stack: 3)
        replay.alloc(1, 0xD0, stack: 4)
        replay.define(2, "App.Other", max: 1)
        replay.alloc(2, 0xE0, stack: 5)

        let copied = try before.type(1)
        XCTAssertEqual(copied.liveCount, 2)
        XCTAssertEqual(copied.peak, 2)
        XCTAssertEqual(copied.live.keys.sorted(), [0xA0, 0xB0])
        XCTAssertNil(before.ledger.types[2])
        let changed = try replay.type(1)
        XCTAssertEqual(changed.liveCount, 3)
        XCTAssertEqual(changed.peak, 3)
        XCTAssertEqual(changed.live.keys.sorted(), [0xB0, 0xC0, 0xD0])
        XCTAssertEqual(try replay.type(2).liveCount, 1)

        // And the other way round: the copy changes, the original does not.
        var copy = before
        copy.free(1, 0xB0)
        XCTAssertEqual(try copy.type(1).liveCount, 1)
        XCTAssertEqual(try replay.type(1).live.keys.sorted(), [0xB0, 0xC0, 0xD0])
        XCTAssertEqual(try before.type(1).live.keys.sorted(), [0xA0, 0xB0])
    }

    /// The decoder's sink hands out copies of its ledgers (progress, heap walks) and goes on
    /// writing records without asking, per record, whether a ledger's tally is shared: a copy
    /// must keep what it held, each process's ledger must stay its own (they all start as copies
    /// of one empty ledger), and the ledgers must go on counting.
    func testTheSinksLedgersAndTheCopiesItHandsOutStayApart() throws {
        let sink = ProcessLedgers(watchesAllocations: false)
        for process: UInt8 in [0, 1] {
            sink.receive(.processAttached(AttachedProcess(pid: 100 + Int32(process), commandLine: [], flags: 0)), from: process)
            sink.receive(.typeDefined(id: 1, name: "App.Model", max: 5), from: process)
        }
        sink.allocated(typeID: 1, object: 0xA0, stackID: 1, sequence: 2, test: nil, time: 0, from: 0)
        sink.allocated(typeID: 1, object: 0xB0, stackID: 1, sequence: 3, test: nil, time: 0, from: 0)
        let copies = sink.byIndex
        sink.deallocated(typeID: 1, object: 0xA0, sequence: 4, time: 0, from: 0)
        sink.allocated(typeID: 1, object: 0xC0, stackID: 2, sequence: 5, test: nil, time: 0, from: 0)
        sink.allocated(typeID: 1, object: 0xD0, stackID: 2, sequence: 6, test: nil, time: 0, from: 1)
        // A process whose first record comes after the copies were handed out.
        sink.receive(.processAttached(AttachedProcess(pid: 102, commandLine: [], flags: 0)), from: 2)
        sink.receive(.typeDefined(id: 1, name: "App.Model", max: 5), from: 2)
        sink.allocated(typeID: 1, object: 0xE0, stackID: 3, sequence: 8, test: nil, time: 0, from: 2)

        let copied = try XCTUnwrap(copies[0]?.types[1])
        XCTAssertEqual(copied.live.keys.sorted(), [0xA0, 0xB0])
        XCTAssertEqual(try XCTUnwrap(copies[1]?.types[1]).liveCount, 0)
        XCTAssertNil(copies[2])
        let now = sink.byIndex
        XCTAssertEqual(try XCTUnwrap(now[0]?.types[1]).live.keys.sorted(), [0xB0, 0xC0])
        XCTAssertEqual(try XCTUnwrap(now[1]?.types[1]).live.keys.sorted(), [0xD0])
        XCTAssertEqual(try XCTUnwrap(now[2]?.types[1]).live.keys.sorted(), [0xE0])
        XCTAssertEqual(try XCTUnwrap(now[0]?.types[1]).peak, 2)
        XCTAssertNil(now[3])
    }

    /// A type is defined once: code may claim a type the allocation hook registered (once), and
    /// any other second definition is damage that leaves the first standing.
    func testATypeIsDefinedOnceButForOneClaim() throws {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 1, name: "App.Model", max: 2, budget: .pattern(index: 0)))
        ledger.apply(.allocated(typeID: 1, object: 0xA0, stackID: 0, sequence: 1, test: nil, time: 0))
        // The claim: code's budget and name win, and the instance counts on.
        ledger.apply(.typeDefined(id: 1, name: "Model", max: 1))
        XCTAssertEqual(ledger.inconsistentEvents, 0)
        // A second claim, a pattern again, another max: damage, and the claim stands.
        ledger.apply(.typeDefined(id: 1, name: "Model", max: 1_000))
        ledger.apply(.typeDefined(id: 1, name: "Forged", max: 5, budget: .pattern(index: 3)))
        XCTAssertEqual(ledger.inconsistentEvents, 2)
        let type = try XCTUnwrap(ledger.types[1])
        XCTAssertEqual([type.name, "\(type.max)", "\(type.liveCount)"], ["Model", "1", "1"])
        XCTAssertEqual(type.budget, .code)
        // A type whose records came first takes its definition.
        ledger.apply(.allocated(typeID: 2, object: 0xB0, stackID: 0, sequence: 5, test: nil, time: 0))
        ledger.apply(.typeDefined(id: 2, name: "App.Late", max: 3))
        XCTAssertEqual(ledger.types[2]?.name, "App.Late")
        XCTAssertEqual(ledger.inconsistentEvents, 3, "only the allocation before the definition")
    }

    /// Records of a process index that never announced itself are counted, and applied nowhere.
    func testRecordsOfAProcessThatNeverAnnouncedItselfAreCountedNotApplied() {
        let sink = ProcessLedgers(watchesAllocations: false)
        sink.receive(.typeDefined(id: 1, name: "Forged", max: 0), from: 7)
        sink.allocated(typeID: 1, object: 0xA0, stackID: 0, sequence: 1, test: nil, time: 0, from: 7)
        sink.deallocated(typeID: 1, object: 0xA0, sequence: 2, time: 0, from: 7)
        XCTAssertEqual(sink.unannouncedRecords, 3)
        XCTAssertNil(sink.byIndex[7])
        // Once it announces itself, its records count.
        sink.receive(.processAttached(AttachedProcess(pid: 107, commandLine: [], flags: 0)), from: 7)
        sink.receive(.typeDefined(id: 1, name: "App.Model", max: 0), from: 7)
        sink.allocated(typeID: 1, object: 0xA0, stackID: 0, sequence: 4, test: nil, time: 0, from: 7)
        XCTAssertEqual(sink.unannouncedRecords, 3)
        XCTAssertEqual(sink.byIndex[7]?.types[1]?.liveCount, 1)
    }

    /// Each process's program, its first image, is heard as its record is applied, and each other
    /// image once, when a stack of that process first passes through it (a test run indexes them
    /// for the report while the process runs); an unannounced process's are not.
    func testTheSinkHearsEachImageAStackPassesThroughOnce() {
        let sink = ProcessLedgers(watchesAllocations: false)
        var heard: [String] = []
        sink.imageInUse = { heard.append($0.path) }
        func image(_ path: String, _ start: UInt64) -> ModuleImage {
            ModuleImage(path: path, buildID: [], loadBias: start, start: start, end: start + 0x1000)
        }
        sink.receive(.moduleLoaded(image("/forged", 0x1000)), from: 4)
        sink.receive(.stackDefined(id: 1, returnAddresses: [0x1010], truncated: false), from: 4)
        for process: UInt8 in [0, 1] {
            sink.receive(.processAttached(AttachedProcess(pid: 100 + Int32(process), commandLine: [], flags: 0)), from: process)
            sink.receive(.moduleLoaded(image("/app/Tests\(process).xctest", 0x9000)), from: process)
            sink.receive(.moduleLoaded(image("/usr/lib/libc.so.6", 0x5000)), from: process)
            sink.receive(.moduleLoaded(image("/usr/lib/libm.so.6", 0x7000)), from: process)
        }
        XCTAssertEqual(heard, ["/app/Tests0.xctest", "/app/Tests1.xctest"])
        // Frames in the program, in libm, between images and past them, twice.
        for _ in 0..<2 {
            sink.receive(
                .stackDefined(id: 1, returnAddresses: [0x9010, 0x7010, 0x7020, 0x6800, 0xF000], truncated: false), from: 0)
        }
        sink.receive(.stackDefined(id: 2, returnAddresses: [0x5FFF, 0x9000], truncated: false), from: 1)
        XCTAssertEqual(heard, ["/app/Tests0.xctest", "/app/Tests1.xctest", "/usr/lib/libm.so.6", "/usr/lib/libc.so.6"])
        XCTAssertEqual(sink.byIndex[0]?.modules.map(\.path), ["/app/Tests0.xctest", "/usr/lib/libc.so.6", "/usr/lib/libm.so.6"])
        XCTAssertEqual(sink.byIndex[0]?.stacks[1], [0x9010, 0x7010, 0x7020, 0x6800, 0xF000])
    }

    /// The decoder announces records ahead (prefetch) only once a ledger's live table outgrows the
    /// processor's caches: with few instances alive it would be work for nothing.
    func testTheSinkPrefersPrefetchOnceALedgerHoldsManyInstances() {
        let sink = ProcessLedgers(watchesAllocations: false)
        sink.receive(.processAttached(AttachedProcess(pid: 103, commandLine: [], flags: 0)), from: 3)
        sink.receive(.typeDefined(id: 1, name: "App.Model", max: Int.max), from: 3)
        XCTAssertFalse(sink.prefersPrefetch)
        for index in 1...UInt64(ProcessLedgers.prefetchFromInstances * 5 / 4) {
            sink.allocated(typeID: 1, object: index << 4, stackID: 1, sequence: index, test: nil, time: 0, from: 3)
            if index == 1_000 { XCTAssertFalse(sink.prefersPrefetch) }
        }
        XCTAssertTrue(sink.prefersPrefetch)
    }

    func testPeakLiveAtExitAndAllocatedTotal() throws {
        var replay = Replay()
        replay.define(1, "App.Model", max: 2)
        replay.alloc(1, 0xA, stack: 10)
        replay.alloc(1, 0xB, stack: 11)
        replay.free(1, 0xA)
        replay.alloc(1, 0xC, stack: 12)
        replay.alloc(1, 0xD, stack: 13)
        replay.free(1, 0xB)
        replay.free(1, 0xC)

        let type = try replay.type(1)
        XCTAssertEqual(type.name, "App.Model")
        XCTAssertEqual(type.max, 2)
        XCTAssertEqual(type.peak, 3)
        XCTAssertEqual(type.live.count, 1)
        XCTAssertEqual(type.live.keys.sorted(), [0xD])
        XCTAssertEqual(type.allocated, 4)
        XCTAssertEqual(replay.ledger.inconsistentEvents, 0)
    }

    func testEverythingFreedLeavesNothingAliveButKeepsThePeak() throws {
        var replay = Replay()
        replay.define(1, "T", max: 1)
        for object in UInt64(1)...5 { replay.alloc(1, object, stack: 0) }
        for object in UInt64(1)...5 { replay.free(1, object) }
        let type = try replay.type(1)
        XCTAssertEqual(type.peak, 5)
        XCTAssertEqual(type.live.count, 0)
        XCTAssertEqual(type.allocated, 5)
        XCTAssertEqual(try replay.alivesAtPeak(1), [0, 0, 0, 0, 0])
    }

    // MARK: - Instances alive at the peak

    func testAliveAtPeakIsTheFirstTimeThePeakWasReachedIncludingInstancesThatDiedSince() throws {
        var replay = Replay()
        replay.define(1, "T", max: 1)
        replay.alloc(1, 0xA, stack: 1)
        replay.alloc(1, 0xB, stack: 2)
        replay.alloc(1, 0xC, stack: 3)  // peak 3: {A, B, C}
        replay.free(1, 0xB)
        replay.alloc(1, 0xD, stack: 4)  // back to 3: not a new peak
        replay.free(1, 0xA)

        let type = try replay.type(1)
        XCTAssertEqual(type.peak, 3)
        XCTAssertEqual(type.live.keys.sorted(), [0xC, 0xD])
        XCTAssertEqual(try replay.alivesAtPeak(1), [1, 2, 3], "D was never alive at the peak; A and B were")
    }

    func testAliveAtPeakExcludesInstancesThatDiedBeforeThePeak() throws {
        var replay = Replay()
        replay.define(1, "T", max: 1)
        replay.alloc(1, 0xA, stack: 1)
        replay.alloc(1, 0xB, stack: 2)  // peak 2
        replay.free(1, 0xA)  // died at peak 2's time, before peak 3
        replay.alloc(1, 0xC, stack: 3)
        replay.alloc(1, 0xD, stack: 4)  // peak 3: {B, C, D}
        replay.free(1, 0xB)
        replay.free(1, 0xC)
        replay.free(1, 0xD)

        XCTAssertEqual(try replay.type(1).peak, 3)
        XCTAssertEqual(try replay.alivesAtPeak(1), [2, 3, 4])
    }

    func testNewHigherPeakResetsTheInstancesAliveAtPeak() throws {
        var replay = Replay()
        replay.define(1, "T", max: 0)
        replay.alloc(1, 0xA, stack: 1)
        replay.alloc(1, 0xB, stack: 2)  // peak 2: {A, B}
        replay.free(1, 0xA)
        replay.free(1, 0xB)
        XCTAssertEqual(try replay.alivesAtPeak(1), [1, 2])

        replay.alloc(1, 0xC, stack: 3)
        replay.alloc(1, 0xD, stack: 4)  // 2 again: still the first peak
        XCTAssertEqual(try replay.alivesAtPeak(1), [1, 2])

        replay.alloc(1, 0xE, stack: 5)  // peak 3: {C, D, E}
        XCTAssertEqual(try replay.type(1).peak, 3)
        XCTAssertEqual(try replay.alivesAtPeak(1), [3, 4, 5])

        replay.free(1, 0xC)
        replay.alloc(1, 0xF, stack: 6)
        XCTAssertEqual(try replay.alivesAtPeak(1), [3, 4, 5])
    }

    func testInstanceAllocatedAfterThePeakIsNotAliveAtIt() throws {
        var replay = Replay()
        replay.define(1, "T", max: 1)
        replay.alloc(1, 0xA, stack: 1)
        replay.alloc(1, 0xB, stack: 2)  // peak 2
        replay.free(1, 0xA)
        replay.alloc(1, 0xC, stack: 3)  // alive now, not at the peak
        replay.free(1, 0xC)  // dies after the peak, but was allocated after it too
        XCTAssertEqual(try replay.alivesAtPeak(1), [1, 2])
    }

    // MARK: - Address reuse and damaged streams

    func testAddressReuseAfterDeallocationCountsAsANewInstance() throws {
        var replay = Replay()
        replay.define(1, "T", max: 1)
        replay.alloc(1, 0x1000, stack: 1)
        replay.free(1, 0x1000)
        replay.alloc(1, 0x1000, stack: 2)
        replay.free(1, 0x1000)
        replay.alloc(1, 0x1000, stack: 3)

        let type = try replay.type(1)
        XCTAssertEqual(type.peak, 1)
        XCTAssertEqual(type.live.count, 1)
        XCTAssertEqual(type.live[0x1000]?.stackID, 3)
        XCTAssertEqual(type.allocated, 3)
        XCTAssertEqual(try replay.alivesAtPeak(1), [1], "only the first occupant was alive at the peak")
        XCTAssertEqual(replay.ledger.inconsistentEvents, 0)
    }

    func testDeallocationOfAnUnknownObjectIsInconsistentAndChangesNoCount() throws {
        var replay = Replay()
        replay.define(1, "T", max: 1)
        replay.alloc(1, 0xA, stack: 1)
        replay.free(1, 0xB)  // never allocated
        replay.free(1, 0xA)
        replay.free(1, 0xA)  // twice
        replay.free(9, 0xA)  // unknown type

        let type = try replay.type(1)
        XCTAssertEqual(type.peak, 1)
        XCTAssertEqual(type.live.count, 0)
        XCTAssertEqual(replay.ledger.inconsistentEvents, 3)
        XCTAssertNil(replay.ledger.types[9], "a deallocation does not invent a type")
    }

    func testStackAndTestIdsNoWriterHandsOutAreDamageAndStoredAsNone() throws {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 1, name: "T", max: 5))
        ledger.apply(.allocated(typeID: 1, object: 0x10, stackID: 1 << 30, sequence: 1, test: nil))
        ledger.apply(.allocated(typeID: 1, object: 0x20, stackID: 2, sequence: 2, test: 1 << 30))
        ledger.apply(.allocated(typeID: 1, object: 0x30, stackID: LA_STACK_NONE, sequence: 3, test: 7))
        XCTAssertEqual(ledger.inconsistentEvents, 2, "a stack id and a test id beyond what the shim hands out")
        let live = try XCTUnwrap(ledger.types[1]?.live)
        XCTAssertEqual(live.count, 3, "each allocation still counts")
        XCTAssertEqual(live[0x10]?.stackID, LA_STACK_NONE)
        XCTAssertEqual(live[0x20]?.stackID, 2)
        XCTAssertNil(live[0x20]?.test)
        XCTAssertEqual(live[0x30]?.stackID, LA_STACK_NONE, "none stays none")
        XCTAssertEqual(live[0x30]?.test, 7)
    }

    func testATestIdTheLedgerCannotHoldLeavesNoStaleEntryBehind() {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 1, name: "T", max: 5))
        ledger.apply(.allocated(typeID: 1, object: 0x10, stackID: 1, sequence: 1, test: 1 << 30))
        ledger.apply(.deallocated(typeID: 1, object: 0x10, sequence: 2))
        ledger.apply(.allocated(typeID: 1, object: 0x10, stackID: 2, sequence: 3, test: nil))
        XCTAssertTrue(ledger.leaksByTest().allSatisfy(\.leaks.isEmpty), "the later instance is no test's leak")
        XCTAssertEqual(ledger.inconsistentEvents, 1)
    }

    func testAllocationOfAnUndefinedTypeIsInconsistentButCounted() throws {
        var replay = Replay()
        replay.alloc(4, 0xA, stack: 0)
        replay.alloc(4, 0xB, stack: 0)
        XCTAssertEqual(replay.ledger.inconsistentEvents, 2, "each record naming a type never defined")
        let type = try replay.type(4)
        XCTAssertEqual(type.name, "<type 4>")
        XCTAssertEqual(type.max, Int.max)
        XCTAssertEqual(type.peak, 2)

        // A definition arriving late names the type and keeps its counts.
        replay.define(4, "App.Late", max: 1)
        XCTAssertEqual(try replay.type(4).name, "App.Late")
        XCTAssertEqual(try replay.type(4).max, 1)
        XCTAssertEqual(try replay.type(4).peak, 2)

        // Its instances from before were kept whole, with their sequence numbers; those allocated
        // since are kept in a word, which has none.
        replay.alloc(4, 0xC, stack: 0)
        XCTAssertEqual(try replay.type(4).live[0xB]?.sequence, 1)
        XCTAssertEqual(try replay.type(4).live[0xC]?.sequence, 0)
        XCTAssertEqual(try replay.type(4).peak, 3)
        XCTAssertEqual(replay.ledger.inconsistentEvents, 2)
    }

    /// A defined type whose id does not fit a word (no shim hands one out) is kept whole.
    func testATypeIdTooLargeForAWordIsKeptWhole() throws {
        var replay = Replay()
        replay.define(20_000, "App.Far", max: 1)
        replay.alloc(20_000, 0xA, stack: 0)
        replay.alloc(20_000, 0xB, stack: 0)
        replay.free(20_000, 0xA)
        let type = try replay.type(20_000)
        XCTAssertEqual(type.live[0xB]?.sequence, 2)
        XCTAssertEqual([type.peak, type.liveCount], [2, 1])
        XCTAssertEqual(replay.ledger.inconsistentEvents, 0)
    }

    /// An address allocated again while its object still counts as alive: that object was freed
    /// unseen, and dies then, whether it was still in the compact table's nursery or had moved on
    /// to a segment.
    func testAnAddressAllocatedAgainRetiresTheObjectFreedUnseen() throws {
        var replay = Replay()
        replay.define(1, "A", max: 1)
        replay.define(2, "B", max: 1)
        replay.alloc(1, 0x10, stack: 1)
        replay.alloc(1, 0x10, stack: 2)  // in the nursery still
        // A thousand other addresses: two of them need 0x10's nursery set, which moves it on.
        for index in 1...1_000 { replay.alloc(2, 0x10 + UInt64(index) * 0x40, stack: 3) }
        replay.alloc(1, 0x10, stack: 4)
        let type = try replay.type(1)
        XCTAssertEqual([type.peak, type.liveCount, type.allocated], [1, 1, 3])
        XCTAssertEqual(type.live[0x10]?.stackID, 4)
        XCTAssertEqual(replay.ledger.unseenDeallocations[1], 2)
        XCTAssertEqual(replay.ledger.inconsistentEvents, 0)
    }

    func testTypesAreCountedInIsolationEvenAtTheSameAddress() throws {
        var replay = Replay()
        replay.define(1, "A", max: 1)
        replay.define(2, "B", max: 5)
        replay.alloc(1, 0x10, stack: 1)
        replay.alloc(2, 0x20, stack: 2)
        replay.alloc(2, 0x30, stack: 2)
        replay.alloc(2, 0x40, stack: 3)
        replay.free(1, 0x10)
        replay.alloc(2, 0x10, stack: 4)  // the freed A's address, now a B
        replay.free(1, 0x20)  // B's object freed as an A: inconsistent, B untouched

        let a = try replay.type(1)
        let b = try replay.type(2)
        XCTAssertEqual([a.peak, a.live.count, a.allocated], [1, 0, 1])
        XCTAssertEqual([b.peak, b.live.count, b.allocated], [4, 4, 4])
        XCTAssertEqual(try replay.alivesAtPeak(1), [1])
        XCTAssertEqual(try replay.alivesAtPeak(2), [2, 2, 3, 4])
        XCTAssertEqual(replay.ledger.inconsistentEvents, 1)
    }

    func testStacksModulesAndTruncationAreRecorded() {
        var ledger = LifetimeLedger()
        let module = ModuleImage(path: "/bin/app", buildID: [1], loadBias: 0x1000, start: 0x1000, end: 0x2000)
        ledger.apply(.stackDefined(id: 3, returnAddresses: [0x1100, 0x1200], truncated: false))
        ledger.apply(.stackDefined(id: 4, returnAddresses: [0x1300], truncated: true))
        ledger.apply(.moduleLoaded(module))
        XCTAssertEqual(ledger.stacks, [3: [0x1100, 0x1200], 4: [0x1300]])
        XCTAssertEqual(ledger.truncatedStacks, [4])
        XCTAssertEqual(ledger.modules, [module])
    }

    // MARK: - ReportBuilder

    private func recordedRun(
        _ replay: Replay,
        outcome: TargetOutcome = .exited(code: 0),
        attached: Bool = true,
        staticRuntime: Bool = false,
        recordFormatMismatch: Bool = false,
        dropped: UInt64 = 0,
        torn: UInt64 = 0,
        stackTableFull: Bool = false
    ) -> RecordedRun {
        var flags: ChannelFlags = [.instrumented]
        if staticRuntime { flags.insert(.staticRuntime) }
        if recordFormatMismatch { flags.insert(.recordFormatMismatch) }
        if stackTableFull { flags.insert(.stackTableFull) }
        return RecordedRun(
            request: AuditRequest(target: "./app", arguments: ["--flag"]),
            plan: RunPlan(executablePath: "/work/app", watch: WatchOptions()),
            outcome: outcome,
            received: Reception(
                ledgers: [0: replay.ledger],
                channel: ChannelSummary(
                    attached: attached, attachedProcesses: attached ? 1 : 0, droppedRecords: dropped, flags: flags),
                tornSlots: torn)
        )
    }

    func testATypeWhoseStacksHaveLargeIdsCostsNoArrayOfThatLength() {
        // 10,000 types each with a stack of its own (ids 0 to 9,999) took 800 MB: each type's tally
        // had an array as long as its stack's id.
        var tally = SiteTally()
        tally.add(LifetimeLedger.Site(stackID: 9_999, test: nil), count: 2)
        XCTAssertEqual(tally.arrayLength, 0)
        tally.add(LifetimeLedger.Site(stackID: 3, test: nil))
        tally.add(LifetimeLedger.Site(stackID: 200, test: nil))
        XCTAssertEqual(tally.arrayLength, 201, "ids near the ones counted stay in the array")
        XCTAssertEqual(
            tally.counts.sorted { $0.site.stackID < $1.site.stackID }.map { [Int($0.site.stackID), $0.count] },
            [[3, 1], [200, 1], [9_999, 2]])
    }

    func testStacksAndNamesCutByTheDecoderAreNamedInTheReportsWarnings() throws {
        var replay = Replay()
        replay.define(1, "App.Session", max: 1)
        replay.alloc(1, 0x10, stack: 0)
        replay.alloc(1, 0x20, stack: 0)
        var run = recordedRun(replay)
        run.received.overlongStacks = 2
        run.received.cutFrames = 1_499_904
        run.received.malformedSlots = 2
        run.received.longNames = 1
        let report = ReportBuilder(toolVersion: "1").build(from: run)
        XCTAssertTrue(
            report.warnings.contains(
                "2 allocation stacks held more than the 48 frames LeakMonitor records (1499904 more): each was cut to its innermost 48, and counted as damage"
            ), "\(report.warnings)")
        XCTAssertTrue(
            report.warnings.contains("1 type or test name was longer than 4096 bytes: cut there, ending in '…'"),
            "\(report.warnings)")
        XCTAssertEqual(report.verdict, .budgetExceeded, "damage hides no finding")
        XCTAssertTrue(report.isIncomplete)
    }

    func testAProcessThatOnlyNamedTestsAuditedNothing() throws {
        // The preloaded library attaches to name tests; without LeakMonitor or a budget nothing is tracked.
        var run = recordedRun(Replay())
        run.received.channel.flags.remove(.instrumented)
        XCTAssertEqual(ReportBuilder(toolVersion: "1").build(from: run).notAudited, .neverAttached)
        run.received.channel.flags.insert(.instrumented)
        XCTAssertNil(ReportBuilder(toolVersion: "1").build(from: run).notAudited)
    }

    func testAProcessWithAStaticRuntimeIsLeftOutAndAloneIsNotAudited() throws {
        // Its instances never die in the stream: counts that would say 1,000 alive.
        func process(_ path: String) -> LifetimeLedger {
            var replay = Replay()
            replay.ledger.apply(.moduleLoaded(ModuleImage(path: path, buildID: [], loadBias: 0, start: 0, end: 1)))
            replay.define(1, "App.Session", max: 1)
            for object in UInt64(1)...1_000 { replay.alloc(1, object, stack: 0) }
            return replay.ledger
        }
        let inspect: (String) -> TargetKind = { $0 == "/b/static" ? .staticSwift : .dynamicSwift }
        var alone = recordedRun(Replay())
        alone.received.ledgers = [0: process("/b/static")]
        let notAudited = ReportBuilder(toolVersion: "1", inspectExecutable: inspect).build(from: alone)
        XCTAssertEqual(notAudited.notAudited, .staticRuntime)
        XCTAssertEqual(notAudited.types, [], "no numbers the tool could not observe")

        var mixed = alone
        mixed.received.ledgers[1] = process("/b/dynamic")
        let report = ReportBuilder(toolVersion: "1", inspectExecutable: inspect).build(from: mixed)
        XCTAssertNil(report.notAudited)
        XCTAssertEqual(report.types.map(\.allocatedTotal), [1_000], "the dynamic process's only")
        XCTAssertTrue(
            report.warnings.contains { $0.hasPrefix("'/b/static' links the Swift runtime statically") }, "\(report.warnings)")
    }

    func testReportBuilderGroupsInstancesAliveAtPeakByStackMostFirst() throws {
        var replay = Replay()
        replay.define(1, "App.Leaky", max: 1)
        replay.define(2, "App.Fine", max: 3)
        replay.define(3, "App.AlsoLeaky", max: 0)
        // Addresses outside every module symbolize to bare addresses: no libdw involved.
        replay.ledger.apply(.stackDefined(id: 7, returnAddresses: [0x70, 0x71], truncated: false))
        replay.ledger.apply(.stackDefined(id: 5, returnAddresses: [0x50], truncated: true))
        replay.ledger.apply(.stackDefined(id: 6, returnAddresses: [0x60], truncated: false))
        replay.alloc(1, 0xA, stack: 7)
        replay.alloc(1, 0xB, stack: 5)
        replay.alloc(1, 0xC, stack: 7)
        replay.alloc(1, 0xD, stack: 6)  // peak 4: stack 7 ×2, then 5 and 6 ×1 (ties by stack id)
        replay.free(1, 0xA)
        replay.alloc(2, 0x1, stack: 5)
        replay.alloc(3, 0x2, stack: 0xFFFF_FFFF)  // no stack recorded

        let report = ReportBuilder(toolVersion: "9.9.9").build(from: recordedRun(replay))
        XCTAssertEqual(report.tool, .init(name: "leak-audit", version: "9.9.9"))
        var expectedTarget = AuditReport.Target(
            path: "./app", arguments: ["--flag"], attached: true, attachedProcesses: 1, outcome: .exited(code: 0))
        expectedTarget.durationMilliseconds = 0
        XCTAssertEqual(report.target, expectedTarget)
        XCTAssertNil(report.notAudited)
        XCTAssertEqual(report.types.map(\.name), ["App.AlsoLeaky", "App.Leaky", "App.Fine"], "exceeded first, then by name")
        XCTAssertEqual(report.verdict, .budgetExceeded)
        XCTAssertEqual(report.warnings, [])

        let leaky = report.types[1]
        XCTAssertEqual([leaky.max, leaky.peakLive, leaky.liveAtExit, leaky.allocatedTotal], [1, 4, 3, 4])
        XCTAssertEqual(leaky.allocations.map(\.count), [2, 1, 1])
        XCTAssertEqual(leaky.allocations.map { $0.frames.map(\.address) }, [[0x70, 0x71], [0x50], [0x60]])
        XCTAssertEqual(leaky.allocations.map(\.truncated), [false, true, false])
        XCTAssertEqual(leaky.allocations[0].frames[0], SymbolizedFrame(address: 0x70))

        let alsoLeaky = report.types[0]
        XCTAssertEqual(alsoLeaky.allocations.count, 1)
        XCTAssertEqual(alsoLeaky.allocations[0].count, 1)
        XCTAssertEqual(alsoLeaky.allocations[0].frames, [])

        let fine = report.types[2]
        XCTAssertFalse(fine.exceeded)
        XCTAssertEqual(fine.allocations, [], "within budget: no stacks")
    }

    func testReportBuilderWarningsAndNotAuditedReasons() {
        var replay = Replay()
        replay.free(1, 0xDEAD)  // inconsistent
        let damaged = ReportBuilder(toolVersion: "1").build(
            from: recordedRun(replay, outcome: .signaled(signal: 9), dropped: 12, torn: 3, stackTableFull: true)
        )
        XCTAssertEqual(damaged.droppedRecords, 12)
        XCTAssertEqual(damaged.tornRecords, 3)
        XCTAssertEqual(damaged.warnings.count, 3)
        XCTAssertTrue(damaged.warnings[0].hasPrefix("12 records were not written"), damaged.warnings[0])
        XCTAssertTrue(damaged.warnings[1].contains("allocation stacks"), damaged.warnings[1])
        XCTAssertTrue(damaged.warnings[2].hasPrefix("1 record referred to unknown"), damaged.warnings[2])
        XCTAssertEqual(damaged.damagedRecords, 1)
        XCTAssertEqual(damaged.verdict, .incomplete, "counts that may be wrong are never clean, nor only a failed target")

        // Each loss alone makes a run that exited 0 incomplete; torn records and a full stack
        // table (counts stay exact) do not.
        var consistent = Replay()
        consistent.define(1, "App.Fine", max: 1)
        consistent.alloc(1, 0xA0, stack: 0)
        XCTAssertEqual(ReportBuilder(toolVersion: "1").build(from: recordedRun(consistent)).verdict, .clean)
        XCTAssertEqual(
            ReportBuilder(toolVersion: "1").build(from: recordedRun(consistent, torn: 2, stackTableFull: true)).verdict, .clean)
        XCTAssertEqual(ReportBuilder(toolVersion: "1").build(from: recordedRun(consistent, dropped: 1)).verdict, .incomplete)
        XCTAssertEqual(ReportBuilder(toolVersion: "1").build(from: recordedRun(replay)).verdict, .incomplete)
        var full = recordedRun(consistent)
        full.received.channel.flags.insert(.typeTableFull)
        XCTAssertEqual(ReportBuilder(toolVersion: "1").build(from: full).verdict, .incomplete)
        var forged = recordedRun(consistent)
        forged.received.malformedSlots = 4
        let forgedReport = ReportBuilder(toolVersion: "1").build(from: forged)
        XCTAssertEqual(forgedReport.verdict, .incomplete)
        XCTAssertEqual(forgedReport.damagedRecords, 4)
        XCTAssertTrue(forgedReport.warnings.contains { $0.hasPrefix("4 records in leak-audit's channel were no record") })

        let detached = ReportBuilder(toolVersion: "1").build(from: recordedRun(Replay(), attached: false, staticRuntime: true))
        XCTAssertEqual(detached.notAudited, .neverAttached, "never attached wins over static runtime")
        XCTAssertEqual(detached.verdict, .notAudited)
        let staticRuntime = ReportBuilder(toolVersion: "1").build(from: recordedRun(Replay(), staticRuntime: true))
        XCTAssertEqual(staticRuntime.notAudited, .staticRuntime)
        XCTAssertEqual(staticRuntime.verdict, .notAudited)
        let mismatch = ReportBuilder(toolVersion: "1").build(
            from: recordedRun(Replay(), attached: false, staticRuntime: true, recordFormatMismatch: true)
        )
        XCTAssertEqual(mismatch.notAudited, .recordFormatMismatch, "a format mismatch explains why it never attached")
        XCTAssertEqual(mismatch.verdict, .notAudited)
        // A process that did attach owns the channel; another one's mismatch does not void the audit.
        let attachedDespiteMismatch = ReportBuilder(toolVersion: "1").build(
            from: recordedRun(Replay(), recordFormatMismatch: true))
        XCTAssertNil(attachedDespiteMismatch.notAudited)
        XCTAssertEqual(attachedDespiteMismatch.verdict, .clean)
        let clean = ReportBuilder(toolVersion: "1").build(from: recordedRun(Replay()))
        XCTAssertEqual(clean.verdict, .clean)
        XCTAssertEqual(clean.types.count, 0)
    }

    func testMonitorFramesAreRecognisedByFileOrFunction() {
        let monitorFrames = [
            SymbolizedFrame(address: 1, file: "/src/leak-audit/Sources/LeakMonitor/MemoryLeakMonitor.swift", line: 3),
            SymbolizedFrame(address: 1, file: "/x/Sources/CLeakMonitorShim/stacks.c", line: 9),
            SymbolizedFrame(address: 1, function: "leakaudit_validate"),
            SymbolizedFrame(address: 1, function: "la_stack_capture"),
            SymbolizedFrame(address: 1, function: "static LeakMonitor.MemoryLeakMonitor.validate(_: Swift.AnyObject) -> ()"),
        ]
        for frame in monitorFrames { XCTAssertTrue(ReportBuilder.isMonitorFrame(frame), "\(frame)") }
        let userFrames = [
            SymbolizedFrame(
                address: 1, function: "App.LoginViewModel.init() -> App.LoginViewModel", file: "/app/Sources/App/Login.swift",
                line: 4),
            SymbolizedFrame(address: 1, module: "/app/app", moduleOffset: 4),
            SymbolizedFrame(address: 1, function: "App.LeakMonitorLike.run() -> ()"),
        ]
        for frame in userFrames { XCTAssertFalse(ReportBuilder.isMonitorFrame(frame), "\(frame)") }
    }

    func testModulesWithoutDebugInformationAreTheProgramsOwnWithNoFrameThatHasAFileInAnyGroup() {
        func frame(_ module: String?, file: String? = nil) -> SymbolizedFrame {
            SymbolizedFrame(address: 1, module: module, file: file, line: file == nil ? nil : 1)
        }
        let groups = [
            AuditReport.AllocationGroup(
                count: 1,
                frames: [
                    frame("/app/libStripped.so"), frame("/app/app"), frame("/usr/lib/swift/linux/libswiftCore.so"),
                    frame(nil),
                ],
                truncated: false),
            AuditReport.AllocationGroup(
                count: 2,
                frames: [
                    frame("/app/libPlugin.so"), frame("/app/app", file: "/app/Sources/App/main.swift"),
                    frame("/lib/x86_64-linux-gnu/libc.so.6"), frame("/app/libStripped.so"),
                ],
                truncated: false, test: "AppTests.A/testB"),
            AuditReport.AllocationGroup(
                count: 1, frames: [frame("/app/libPlugin.so"), frame("[vdso]"), frame("/app/libLate.so")],
                truncated: false),
        ]
        // The app has a frame with a file in the second group; the system's libraries never count;
        // the others in the order the stacks first name them.
        XCTAssertEqual(
            ReportBuilder.modulesWithoutDebugInformation(in: groups),
            ["/app/libStripped.so", "/app/libPlugin.so", "/app/libLate.so"])
        XCTAssertEqual(ReportBuilder.modulesWithoutDebugInformation(in: []), [])
    }
}

final class MergedByNameTests: XCTestCase {
    private func type(_ name: String, max: Int, peak: Int, atExit: Int, total: Int) -> AuditReport.TrackedType {
        AuditReport.TrackedType(name: name, max: max, peakLive: peak, liveAtExit: atExit, allocatedTotal: total, allocations: [])
    }

    func testAViolationInOneProcessIsNotHiddenByAnotherProcessWithALargerBudget() {
        let merged = ReportBuilder.mergedByName([
            type("App.Cache", max: 5, peak: 3, atExit: 1, total: 10),
            type("App.Cache", max: 2, peak: 4, atExit: 2, total: 7),
            type("App.Other", max: 1, peak: 1, atExit: 0, total: 1),
        ])
        XCTAssertEqual(merged.map(\.name), ["App.Cache", "App.Other"])
        XCTAssertEqual(merged[0].max, 2)
        XCTAssertEqual(merged[0].peakLive, 4)
        XCTAssertTrue(merged[0].exceeded)
        XCTAssertEqual(merged[0].liveAtExit, 3)
        XCTAssertEqual(merged[0].allocatedTotal, 17)
    }

    func testWithinBudgetEverywhereStaysWithinBudget() {
        let merged = ReportBuilder.mergedByName([
            type("App.Cache", max: 2, peak: 2, atExit: 0, total: 4),
            type("App.Cache", max: 3, peak: 1, atExit: 0, total: 2),
        ])
        XCTAssertEqual(merged.count, 1)
        XCTAssertFalse(merged[0].exceeded)
        XCTAssertEqual(merged[0].peakLive, 2)
        XCTAssertEqual(merged[0].max, 2)
    }
}
