import LeakAuditWire
import RecordStreamSupport
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// Time in the record stream: the time word's decoding, each type's live count over time, when
/// tests started and finished, and the sum of several processes' timelines.
final class TimelineTests: XCTestCase {
    // MARK: - Time words

    func testAStampedWordIsTheClockLessHowFarItsLowBitsLieBehind() {
        let stamped = UInt64(LA_TIME_STAMPED)
        XCTAssertEqual(RecordDecoder.time(ofWord: stamped | 40, clock: 50), 40)
        XCTAssertEqual(RecordDecoder.time(ofWord: stamped | 50, clock: 50), 50)
        // The clock's low 31 bits wrapped since the word was copied.
        let clock: UInt64 = (1 << 31) + 5
        XCTAssertEqual(RecordDecoder.time(ofWord: stamped | UInt64(LA_TIME_MASK), clock: clock), clock - 6)
        // A word ahead of the clock (no writer has one) is taken as a whole lap behind, never later.
        XCTAssertEqual(RecordDecoder.time(ofWord: stamped | 60, clock: 50), 0)
        // Bits above the word (a deallocation's whole second word) change nothing.
        XCTAssertEqual(RecordDecoder.time(ofWord: 0xFFFF_FFFF_0000_0000 | stamped | 40, clock: 50), 40)
    }

    func testAWordWithoutTheStampedBitIsTheReadersClock() {
        XCTAssertEqual(RecordDecoder.time(ofWord: 0, clock: 77), 77)
        XCTAssertEqual(RecordDecoder.time(ofWord: 12, clock: 77), 77, "a writer that predates time words")
    }

    func testDecodedEventsCarryTheirTimeWords() throws {
        let channel = try RecordChannel(slotCapacity: 64)
        let writer = try ChannelWriter(channel)
        let stamped = UInt64(LA_TIME_STAMPED)
        var index = writer.reserve(3)
        writer.write(index, tag: RecordEncoder.eventTag(Int(LA_SLOT_ALLOC), id: 1), 0x10, 7, 0)
        index += 1
        writer.write(index, tag: RecordEncoder.eventTag(Int(LA_SLOT_ALLOC), id: 1), 0x20, 8 | stamped << 32, 0)
        index += 1
        writer.write(index, tag: RecordEncoder.eventTag(Int(LA_SLOT_DEALLOC), id: 1), 0x10, stamped, 0)
        var decoder = RecordDecoder()
        var events: [WireEvent] = []
        decoder.decode(channel, targetFinished: false) { event, _ in events.append(event) }
        XCTAssertEqual(
            events,
            [
                // No time word: when the reader read it.
                .allocated(typeID: 1, object: 0x10, stackID: 7, sequence: 0, time: decoder.clock),
                .allocated(typeID: 1, object: 0x20, stackID: 8, sequence: 1, time: 0),
                .deallocated(typeID: 1, object: 0x10, sequence: 2, time: 0),
            ])
    }

    /// The decoder leaves a record's time to be worked out where it is needed, and answers
    /// "before the end of a bucket" from its clock alone when it can: both answers must be the
    /// time word's.
    func testARecordsTimeAnswersAsItsWordWhateverTheClock() {
        let stamped = UInt64(LA_TIME_STAMPED)
        let words: [UInt64] = [0, 12, stamped | 40, stamped | 50, stamped | 60, stamped | UInt64(LA_TIME_MASK)]
        for word in words {
            for clock: UInt64 in [0, 40, 50, 51, (1 << 31) + 5] {
                let time = RecordTime(word: word, clock: clock)
                let exact = RecordDecoder.time(ofWord: word, clock: clock)
                XCTAssertEqual(time.milliseconds, exact)
                for end: UInt64 in [0, 1, 40, 41, 50, 51, 52, 1 << 40] {
                    XCTAssertEqual(time.isBefore(end), exact < end, "word \(word), clock \(clock), end \(end)")
                }
            }
        }
        XCTAssertEqual(RecordTime(exactly: 33).milliseconds, 33)
    }

    // MARK: - One type's live count over time

    func testBucketsKeepTheLowestHighestAndLastCountOfEachMillisecond() {
        var buckets = LiveCountBuckets()
        buckets.record(1, at: 3)
        buckets.record(2, at: 3)
        buckets.record(1, at: 3)
        buckets.record(5, at: 9)
        // A time before the bucket under way (writers stamp and commit in slightly different orders).
        buckets.record(4, at: 8)
        XCTAssertEqual(buckets.bucketMilliseconds, 1)
        XCTAssertEqual(
            buckets.points,
            [.init(bucket: 3, low: 1, high: 2, last: 1), .init(bucket: 9, low: 4, high: 5, last: 4)])
    }

    func testBucketsWidenSoThatARunSpansAtMostTheLimit() {
        var buckets = LiveCountBuckets()
        for time in UInt64(0)..<1000 { buckets.record(Int(time % 7), at: time) }
        XCTAssertEqual(buckets.bucketMilliseconds, 4, "1,000 ms in at most 256 buckets")
        let points = buckets.points
        XCTAssertEqual(points.count, 250)
        XCTAssertEqual(points.first, .init(bucket: 0, low: 0, high: 3, last: 3))
        // 996...999: counts 2, 3, 4, 5.
        XCTAssertEqual(points.last, .init(bucket: 249, low: 2, high: 5, last: 5))
        XCTAssertEqual(buckets.timeline.samples.last, .init(time: 996, low: 2, high: 5, last: 5))
        XCTAssertEqual(buckets.timeline.bucketMilliseconds, 4)
    }

    func testAnEventFarLaterWidensTheBucketsOnce() {
        var buckets = LiveCountBuckets()
        buckets.record(1, at: 0)
        buckets.record(2, at: 1)
        buckets.record(1, at: 60_000)
        XCTAssertEqual(buckets.bucketMilliseconds, 256)
        XCTAssertEqual(
            buckets.timeline.samples, [.init(time: 0, low: 1, high: 2, last: 2), .init(time: 59_904, low: 1, high: 1, last: 1)])
    }

    func testTheLedgerKeepsEachTypesCurveAndWhenItPeaked() throws {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 0, name: "App.Model", max: 1))
        ledger.apply(.allocated(typeID: 0, object: 0x10, stackID: 0, sequence: 1, time: 2))
        ledger.apply(.allocated(typeID: 0, object: 0x20, stackID: 0, sequence: 2, time: 5))
        ledger.apply(.deallocated(typeID: 0, object: 0x10, sequence: 3, time: 9))
        ledger.apply(.allocated(typeID: 0, object: 0x30, stackID: 0, sequence: 4, time: 12))
        let type = try XCTUnwrap(ledger.types[0])
        XCTAssertEqual(type.peak, 2)
        XCTAssertEqual(type.peakTime, 5, "first reached at 5 ms")
        XCTAssertEqual(
            type.timeline.timeline.samples,
            [
                .init(time: 2, low: 1, high: 1, last: 1), .init(time: 5, low: 2, high: 2, last: 2),
                .init(time: 9, low: 1, high: 1, last: 1), .init(time: 12, low: 2, high: 2, last: 2),
            ])
    }

    /// A ledger counts rises and falls of one each: a rise can only raise a bucket's highest
    /// count, a fall only lower its lowest, and each leaves the last.
    func testTheLedgersBucketsKeepTheLowestAndHighestCountOfEachMillisecond() throws {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 0, name: "App.Model", max: 10))
        var sequence: UInt64 = 0
        func allocate(_ object: UInt64, at time: UInt64) {
            sequence += 1
            ledger.apply(.allocated(typeID: 0, object: object, stackID: 0, sequence: sequence, time: time))
        }
        func free(_ object: UInt64, at time: UInt64) {
            sequence += 1
            ledger.apply(.deallocated(typeID: 0, object: object, sequence: sequence, time: time))
        }
        // At 3 ms: 1, 2, 3, 2.
        allocate(0x10, at: 3)
        allocate(0x20, at: 3)
        allocate(0x30, at: 3)
        free(0x10, at: 3)
        // At 5 ms: 1, 2, 1, 0.
        free(0x20, at: 5)
        allocate(0x40, at: 5)
        free(0x30, at: 5)
        free(0x40, at: 5)
        let type = try XCTUnwrap(ledger.types[0])
        XCTAssertEqual(
            type.timeline.timeline.samples,
            [.init(time: 3, low: 1, high: 3, last: 2), .init(time: 5, low: 0, high: 2, last: 0)])
    }

    func testTheLedgerKeepsWhenATestFirstStartedAndLastFinished() throws {
        var ledger = LifetimeLedger()
        ledger.apply(.testDefined(id: 0, name: "Tests/repeated()"))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_STARTED), sequence: 1, time: 10))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_FINISHED), sequence: 2, time: 20))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_STARTED), sequence: 3, time: 30))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_FINISHED), sequence: 4, time: 45))
        let test = try XCTUnwrap(ledger.leaksByTest().first)
        XCTAssertEqual(test.startedAt, 10)
        XCTAssertEqual(test.finishedAt, 45)
    }

    // MARK: - Several processes

    func testTimelinesOfSeveralProcessesAddUpInTheWidestBuckets() throws {
        let first = LiveCountTimeline(
            bucketMilliseconds: 1, samples: [.init(time: 1, low: 1, high: 1, last: 1), .init(time: 3, low: 0, high: 2, last: 2)])
        let second = LiveCountTimeline(
            bucketMilliseconds: 2, samples: [.init(time: 2, low: 5, high: 6, last: 5), .init(time: 6, low: 4, high: 4, last: 4)])
        let sum = try XCTUnwrap(LiveCountTimeline.sum([first, second]))
        XCTAssertEqual(sum.bucketMilliseconds, 2)
        XCTAssertEqual(
            sum.samples,
            [
                .init(time: 0, low: 1, high: 1, last: 1),
                // 2...3: the first process went 0...2 and ended at 2, the second 5...6 ending at 5.
                .init(time: 2, low: 5, high: 8, last: 7),
                .init(time: 6, low: 6, high: 6, last: 6),
            ])
        XCTAssertEqual(LiveCountTimeline.sum([first]), first)
        XCTAssertNil(LiveCountTimeline.sum([]))
    }
}
