import LeakAuditWire
import XCTest

@testable import LeakAuditCore

/// The heap walk's handshake: a process waits only while its memory is copied, never while the
/// copy is searched.
/// A ledger of process `pid` (`/app/App`) with one instance of `App.Model`, whose budget is
/// `budget`, at `object`.
private func ledgerWithOneInstance(pid: Int32, budget: Int, object: UInt64) -> LifetimeLedger {
    var ledger = LifetimeLedger()
    ledger.apply(.processAttached(AttachedProcess(pid: pid, commandLine: ["/app/App"], flags: 0)))
    ledger.apply(.typeDefined(id: 1, name: "App.Model", max: budget))
    ledger.apply(.allocated(typeID: 1, object: object, stackID: 1, sequence: 1, test: nil))
    return ledger
}

/// A test process's ledger (`/app/App`, pid 4242, `App.Model` with a budget of 10) whose tests
/// run one after another to their settling, its channel, and `--retainers`.
private struct SettlingTests {
    var ledger = LifetimeLedger()
    let channel: RecordChannel
    let writer: ChannelWriter
    var watch = WatchOptions()
    private var sequence: UInt64 = 0

    init() throws {
        channel = try RecordChannel(slotCapacity: 64)
        writer = try ChannelWriter(channel)
        watch.retainers = true
        ledger.apply(.processAttached(AttachedProcess(pid: 4242, commandLine: ["/app/App"], flags: 0)))
        ledger.apply(.typeDefined(id: 1, name: "App.Model", max: 10))
    }

    /// Answers the channel's requests with `walks` on a fake clock, where a copy takes `copying`
    /// and a search `searching`; each search's instances, sorted, go to `searched`.
    func answer(
        _ walks: inout HeapWalks, clock: inout UInt64, copying: UInt64 = 0, searching: UInt64,
        searched: inout [[UInt64]]
    ) {
        walks.answerRequests(
            on: channel, ledgers: [ledger], watch: watch,
            copyProcess: { pid in
                clock += copying
                return .success(ProcessSnapshot(pid: pid, regions: [], threads: []))
            },
            search: { _, instances, _, _, _ in
                clock += searching
                searched.append(instances.sorted())
                return ([:], nil, nil)
            },
            now: { clock })
    }

    /// Runs `test` to its settling, leaving instances of `App.Model` at `objects` alive.
    mutating func run(_ test: UInt32, leaving objects: [UInt64]) {
        ledger.apply(.testDefined(id: test, name: "AppTests/test\(test)"))
        for phase in [LA_TEST_STARTED, LA_TEST_FINISHED, LA_TEST_SETTLED] {
            if phase == LA_TEST_FINISHED {
                for object in objects {
                    sequence += 1
                    ledger.apply(.allocated(typeID: 1, object: object, stackID: 1, sequence: sequence, test: test))
                }
            }
            sequence += 1
            ledger.apply(.testPhase(id: test, phase: UInt32(phase), sequence: sequence))
        }
    }
}

final class HeapWalksTests: XCTestCase {
    /// A ledger of process 4242 with one instance of a type over its budget of 0.
    private func ledgerOverBudget() -> LifetimeLedger { ledgerWithOneInstance(pid: 4242, budget: 0, object: 0x5555_1000_0010) }

    /// Issue 29: the target was kept waiting in its exit handshake for the whole search (seconds on
    /// a large heap), not only for the copy.
    func testAnExitingProcessGoesOnOnceCopiedBeforeItsCopyIsSearched() throws {
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        writer.requestWalk(of: 0, number: 1, atExit: true)
        XCTAssertNotNil(channel.pendingWalk(of: 0))
        var watch = WatchOptions()
        watch.retainers = true
        var walks = HeapWalks()
        var copied: [Int32] = []
        var waitingDuringSearch: [Bool] = []
        walks.answerRequests(
            on: channel, ledgers: [ledgerOverBudget()], watch: watch,
            copyProcess: { pid in
                copied.append(pid)
                // Still stopped while it is copied.
                XCTAssertNotNil(channel.pendingWalk(of: 0))
                return .success(ProcessSnapshot(pid: pid, regions: [], threads: []))
            },
            search: { _, instances, _, _, _ in
                waitingDuringSearch.append(channel.pendingWalk(of: 0) != nil)
                XCTAssertEqual(instances, [0x5555_1000_0010])
                return ([:], nil, nil)
            })
        XCTAssertEqual(copied, [4242])
        XCTAssertEqual(waitingDuringSearch, [false])
        XCTAssertNil(channel.pendingWalk(of: 0))
    }

    /// A process whose copy failed, or that needs none, is answered all the same.
    func testAProcessIsAnsweredWhenItsCopyFails() throws {
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        writer.requestWalk(of: 0, number: 1, atExit: true)
        var watch = WatchOptions()
        watch.retainers = true
        var walks = HeapWalks()
        var searched = 0
        walks.answerRequests(
            on: channel, ledgers: [ledgerOverBudget()], watch: watch,
            copyProcess: { _ in .failure(.processGone) },
            search: { _, _, _, _, _ in
                searched += 1
                return ([:], nil, nil)
            })
        XCTAssertNil(channel.pendingWalk(of: 0))
        XCTAssertEqual(searched, 0)
        guard case .failed(let reason)? = walks.atExit[0] else { return XCTFail("\(String(describing: walks.atExit[0]))") }
        XCTAssertEqual(reason, SnapshotFailure.processGone.message)
    }

    /// Issue 32: a test that leaves nothing costs no copy, and every test settled since the last
    /// walk shares the next one: one copy, searched once for all their instances.
    func testSettledTestsShareOneCopyAndATestThatLeavesNothingCostsNone() throws {
        var tests = try SettlingTests()
        let (channel, writer, watch) = (tests.channel, tests.writer, tests.watch)
        var walks = HeapWalks()
        var copies = 0
        var searched: [[UInt64]] = []
        func answer(_ number: UInt32) {
            writer.requestWalk(of: 0, number: number, atExit: false)
            walks.answerRequests(
                on: channel, ledgers: [tests.ledger], watch: watch,
                copyProcess: { pid in
                    copies += 1
                    return .success(ProcessSnapshot(pid: pid, regions: [], threads: []))
                },
                search: { _, instances, _, retainedSizes, unreachable in
                    XCTAssertTrue(retainedSizes)
                    XCTAssertNil(unreachable)
                    searched.append(instances.sorted())
                    let path = RetainerSearch.Path(root: .unreferenced, steps: [])
                    return (instances.first.map { [$0: path] } ?? [:], nil, nil)
                })
            XCTAssertNil(channel.pendingWalk(of: 0), "request \(number) answered")
        }
        tests.run(1, leaving: [])
        answer(1)
        XCTAssertEqual(copies, 0, "a test that left nothing")
        tests.run(2, leaving: [0x5555_1000_0010])
        tests.run(3, leaving: [0x5555_1000_0020, 0x5555_1000_0030])
        answer(2)
        XCTAssertEqual(copies, 1, "two tests settled since the last walk: one copy")
        XCTAssertEqual(searched, [[0x5555_1000_0010, 0x5555_1000_0020, 0x5555_1000_0030]])
        answer(3)
        XCTAssertEqual(copies, 1, "no test settled since: no copy")
        let found = walks.afterTests[0] ?? [:]
        let unavailable = walks.afterTestsUnavailable[0] ?? [:]
        XCTAssertEqual(found.count + unavailable.count, 3)
        XCTAssertEqual(found.count, 1)
    }

    /// Tests settling faster than walks end share a walk: a request that comes before the last
    /// walk's length has passed since it ended waits, and the next walk takes every test settled
    /// meanwhile.
    func testAWalkAfterTestsWaitsAsLongAsTheLastOneTookAndThenTakesEveryTestSettledMeanwhile() throws {
        var tests = try SettlingTests()
        let (channel, writer) = (tests.channel, tests.writer)
        var walks = HeapWalks()
        var clock: UInt64 = 1_000
        var searched: [[UInt64]] = []
        // The copy and the search take 50 ns of the fake clock.
        func answer() { tests.answer(&walks, clock: &clock, copying: 30, searching: 20, searched: &searched) }
        tests.run(1, leaving: [0x5555_1000_0010])
        writer.requestWalk(of: 0, number: 1, atExit: false)
        answer()
        XCTAssertEqual(searched, [[0x5555_1000_0010]])
        XCTAssertNil(channel.pendingWalk(of: 0))
        // 49 ns after the walk of 50 ns ended: held.
        tests.run(2, leaving: [0x5555_1000_0020])
        writer.requestWalk(of: 0, number: 2, atExit: false)
        clock += 49
        answer()
        XCTAssertEqual(searched.count, 1)
        XCTAssertNotNil(channel.pendingWalk(of: 0), "held until the last walk's length has passed")
        // Another test settles meanwhile; once 50 ns have passed, one walk takes both.
        tests.run(3, leaving: [0x5555_1000_0030])
        clock += 1
        answer()
        XCTAssertEqual(searched, [[0x5555_1000_0010], [0x5555_1000_0020, 0x5555_1000_0030]])
        XCTAssertNil(channel.pendingWalk(of: 0))
    }

    /// Holding a request spaces the walks while tests run; a process whose tests are over waits at
    /// its end for nothing: once no process has written a record for 10 ms, the request held is
    /// walked, before the last walk's length has passed.
    func testAHeldRequestIsWalkedOnceNoProcessHasWrittenForTenMilliseconds() throws {
        var tests = try SettlingTests()
        let (channel, writer) = (tests.channel, tests.writer)
        var walks = HeapWalks()
        let millisecond: UInt64 = 1_000_000
        var clock: UInt64 = 1_000 * millisecond
        var searched: [[UInt64]] = []
        // A walk of a second.
        func answer() { tests.answer(&walks, clock: &clock, searching: 1_000 * millisecond, searched: &searched) }
        tests.run(1, leaving: [0x5555_1000_0010])
        writer.requestWalk(of: 0, number: 1, atExit: false)
        answer()
        XCTAssertEqual(searched.count, 1)
        tests.run(2, leaving: [0x5555_1000_0020])
        writer.requestWalk(of: 0, number: 2, atExit: false)
        clock += millisecond
        answer()
        XCTAssertNotNil(channel.pendingWalk(of: 0), "held: records were written a moment ago")
        // A record written 4 ms later: the process is busy, and the wait for quiet starts again.
        clock += 4 * millisecond
        _ = writer.reserve(1)
        answer()
        clock += 9 * millisecond
        answer()
        XCTAssertEqual(searched.count, 1)
        XCTAssertNotNil(channel.pendingWalk(of: 0), "9 ms without a record: still held")
        clock += 1 * millisecond
        answer()
        XCTAssertEqual(searched.count, 2, "10 ms without a record: walked, 15 ms after the last walk of a second ended")
        XCTAssertNil(channel.pendingWalk(of: 0))
    }

    /// A request held until the last walk's length has passed goes on at once, without a copy,
    /// once its process begins to end: the walk at exit, which follows, explains what its tests
    /// left. The walk at exit itself is not held.
    func testARequestOfAProcessThatBeganToEndIsAnsweredWithoutACopy() throws {
        var tests = try SettlingTests()
        let (channel, writer) = (tests.channel, tests.writer)
        var walks = HeapWalks()
        var clock: UInt64 = 1_000
        var searched: [[UInt64]] = []
        func answer() { tests.answer(&walks, clock: &clock, searching: 50, searched: &searched) }
        tests.run(1, leaving: [0x5555_1000_0010])
        writer.requestWalk(of: 0, number: 1, atExit: false)
        answer()
        tests.run(2, leaving: [0x5555_1000_0020])
        writer.requestWalk(of: 0, number: 2, atExit: false)
        clock += 1
        answer()
        XCTAssertNotNil(channel.pendingWalk(of: 0), "held until the last walk's length has passed")
        writer.markEnding(of: 0)
        answer()
        XCTAssertNil(channel.pendingWalk(of: 0), "answered once the process began to end")
        XCTAssertEqual(searched, [[0x5555_1000_0010]], "without a copy")
        writer.requestWalk(of: 0, number: 3, atExit: true)
        answer()
        XCTAssertNil(channel.pendingWalk(of: 0))
        // The walk at exit explains what the second test left, and so every instance left alive.
        XCTAssertEqual(searched, [[0x5555_1000_0010], [0x5555_1000_0010, 0x5555_1000_0020]])
    }

    /// Issue 32: the walk at exit costs no copy when the walks after tests found the path of
    /// every instance the report reads, which it reads from them first; one instance without
    /// (a test not walked since it settled, a walk that failed) and the walk at exit searches
    /// every instance it did before.
    func testTheWalkAtExitIsSkippedOnlyWhenEveryInstanceTestsLeftHasItsPathFromWhenItsTestSettled() throws {
        for (notWalked, failedWalk) in [(false, false), (true, false), (false, true)] {
            var tests = try SettlingTests()
            let (channel, writer, watch) = (tests.channel, tests.writer, tests.watch)
            var walks = HeapWalks()
            var copied = 0
            var searched: [[UInt64]] = []
            func answer(_ number: UInt32, atExit: Bool, copyFails: Bool = false) {
                writer.requestWalk(of: 0, number: number, atExit: atExit)
                walks.answerRequests(
                    on: channel, ledgers: [tests.ledger], watch: watch,
                    copyProcess: { pid in
                        copied += 1
                        return copyFails ? .failure(.processGone) : .success(ProcessSnapshot(pid: pid, regions: [], threads: []))
                    },
                    search: { _, instances, _, _, _ in
                        searched.append(instances.sorted())
                        let path = RetainerSearch.Path(root: .unreferenced, steps: [])
                        return (Dictionary(uniqueKeysWithValues: instances.map { ($0, path) }), nil, nil)
                    })
                XCTAssertNil(channel.pendingWalk(of: 0))
            }
            tests.run(1, leaving: [0x5555_1000_0010, 0x5555_1000_0020])
            answer(1, atExit: false, copyFails: failedWalk)
            if notWalked { tests.run(2, leaving: [0x5555_1000_0030]) }
            let walksAfterTests = searched.count
            answer(2, atExit: true)
            let label = "not walked: \(notWalked), failed walk: \(failedWalk)"
            if notWalked || failedWalk {
                XCTAssertEqual(copied, 2, label)
                XCTAssertEqual(
                    searched.dropFirst(walksAfterTests).first,
                    notWalked ? [0x5555_1000_0010, 0x5555_1000_0020, 0x5555_1000_0030] : [0x5555_1000_0010, 0x5555_1000_0020],
                    label)
                guard case .searched(let paths)? = walks.atExit[0] else { return XCTFail(label) }
                XCTAssertEqual(paths.count, notWalked ? 3 : 2, label)
            } else {
                XCTAssertEqual(copied, 1, "the walk after the test only")
                XCTAssertEqual(searched, [[0x5555_1000_0010, 0x5555_1000_0020]])
                guard case .searched(let paths)? = walks.atExit[0] else { return XCTFail(label) }
                XCTAssertEqual(paths.count, 0)
                XCTAssertEqual(walks.afterTests[0]?.count, 2)
            }
        }
    }

    /// An instance alive of a type over its budget has its path only from the walk at exit.
    func testTheWalkAtExitStillRunsForATypeOverItsBudget() throws {
        var tests = try SettlingTests()
        let (channel, writer, watch) = (tests.channel, tests.writer, tests.watch)
        tests.ledger.apply(.typeDefined(id: 2, name: "App.Cache", max: 0))
        tests.ledger.apply(.allocated(typeID: 2, object: 0x5555_1000_0100, stackID: 1, sequence: 100, test: nil))
        var walks = HeapWalks()
        var searched: [[UInt64]] = []
        tests.run(1, leaving: [0x5555_1000_0010])
        for (number, atExit) in [(UInt32(1), false), (2, true)] {
            writer.requestWalk(of: 0, number: number, atExit: atExit)
            walks.answerRequests(
                on: channel, ledgers: [tests.ledger], watch: watch,
                copyProcess: { .success(ProcessSnapshot(pid: $0, regions: [], threads: [])) },
                search: { _, instances, _, _, _ in
                    searched.append(instances.sorted())
                    let path = RetainerSearch.Path(root: .unreferenced, steps: [])
                    return (Dictionary(uniqueKeysWithValues: instances.map { ($0, path) }), nil, nil)
                })
        }
        XCTAssertEqual(searched, [[0x5555_1000_0010], [0x5555_1000_0010, 0x5555_1000_0100]])
    }
}

/// The unreachable check at exit: a process that asks is copied even when no instance needs
/// explaining, and its search is given the addresses its ledger watched.
final class HeapWalksUnreachableTests: XCTestCase {
    private func ledgerWithNothingOverBudget() -> LifetimeLedger {
        ledgerWithOneInstance(pid: 4243, budget: 5, object: 0x5555_1000_0020)
    }

    func testAProcessAskingForItsUnreachableObjectsIsCopiedAndSearchedWithWhatItsLedgerWatched() throws {
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        writer.requestWalk(of: 0, number: 1, atExit: true, unreachable: true)
        XCTAssertEqual(channel.pendingWalk(of: 0)?.unreachable, true)
        var walks = HeapWalks()
        var trackedSeen: [Set<UInt64>?] = []
        walks.answerRequests(
            on: channel, ledgers: [ledgerWithNothingOverBudget()], watch: WatchOptions(),
            copyProcess: { .success(ProcessSnapshot(pid: $0, regions: [], threads: [])) },
            search: { _, instances, _, _, tracked in
                XCTAssertEqual(instances, [])
                trackedSeen.append(tracked)
                return ([:], UnreachableStructures(groups: [], types: [], objects: 0, bytes: 0), nil)
            })
        XCTAssertEqual(trackedSeen, [[0x5555_1000_0020]])
        XCTAssertNotNil(walks.unreachable[0])
        XCTAssertNil(channel.pendingWalk(of: 0))
    }

    func testAProcessThatDoesNotAskIsNotCopiedAndOneWhoseCopyFailsSaysWhy() throws {
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        writer.requestWalk(of: 0, number: 1, atExit: true)
        writer.requestWalk(of: 1, number: 1, atExit: true, unreachable: true)
        var walks = HeapWalks()
        var copied: [Int32] = []
        walks.answerRequests(
            on: channel, ledgers: [ledgerWithNothingOverBudget(), ledgerWithNothingOverBudget()], watch: WatchOptions(),
            copyProcess: { pid in
                copied.append(pid)
                return .failure(.processGone)
            },
            search: { _, _, _, _, _ in
                XCTFail("nothing to search")
                return ([:], nil, nil)
            })
        XCTAssertEqual(copied, [4243])
        XCTAssertNil(walks.unreachable[0])
        XCTAssertNil(walks.unreachableUnavailable[0])
        XCTAssertEqual(walks.unreachableUnavailable[1], SnapshotFailure.processGone.message)
        XCTAssertNil(channel.pendingWalk(of: 0))
        XCTAssertNil(channel.pendingWalk(of: 1))
    }
}
