import Foundation
import LeakAuditWire
import RecordStreamSupport
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// RecordDecoder against a real RecordChannel, written to through a second shared mapping of its
/// descriptor exactly as the target's shim writes it.
final class RecordDecoderTests: XCTestCase {
    private func makeChannel(slots: UInt64 = 4096) throws -> (RecordChannel, ChannelWriter) {
        let channel = try RecordChannel(slotCapacity: slots)
        return (channel, try ChannelWriter(channel))
    }

    // MARK: - Channel header

    func testChannelHeaderIsValidForTheShim() throws {
        let (channel, _) = try makeChannel(slots: 64)
        // What la_channel_attach checks before mapping the channel.
        let header = try readHeader(channel)
        XCTAssertEqual(header.magic, LA_WIRE_MAGIC)
        XCTAssertEqual(header.version, 1)
        XCTAssertEqual(header.slot_size, 32)
        XCTAssertEqual(header.slot_capacity, 64)
        XCTAssertEqual(channel.reservedSlots, 0)
        XCTAssertEqual(channel.attachedPID, 0)
        XCTAssertEqual(channel.flags, 0)
        XCTAssertEqual(channel.droppedRecords, 0)
    }

    /// No process can shrink or grow the channel under leak-audit's mapping (a read past a shrunk
    /// file's end is a SIGBUS): its size is sealed before any process may open it.
    func testTheChannelsSizeIsSealed() throws {
        let (channel, _) = try makeChannel(slots: 64)
        let size = RecordChannel.byteCount(slotCapacity: 64)
        XCTAssertEqual(ftruncate(channel.fileDescriptor, 0), -1)
        XCTAssertEqual(errno, EPERM)
        XCTAssertEqual(ftruncate(channel.fileDescriptor, off_t(size + 4096)), -1)
        XCTAssertEqual(errno, EPERM)
        var file = stat()
        XCTAssertEqual(fstat(channel.fileDescriptor, &file), 0)
        XCTAssertEqual(Int(file.st_size), size)
    }

    /// Watch lines too long for the environment lie after the ring, where the header says.
    func testWatchLinesGoAfterTheRingWhereTheHeaderSays() throws {
        let lines = Array("budget 1 App.*\nbudget 2 Other.Thing".utf8)
        let ringEnd = RecordChannel.byteCount(slotCapacity: 64)
        let channel = RecordChannel(
            region: try MemfdRegion(byteCount: ringEnd + lines.count), slotCapacity: 64, watchLines: lines)
        let header = try readHeader(channel)
        XCTAssertEqual(header.watch_offset, UInt64(ringEnd))
        XCTAssertEqual(header.watch_length, UInt64(lines.count))
        var read = [UInt8](repeating: 0, count: lines.count)
        let count = read.withUnsafeMutableBytes { pread(channel.fileDescriptor, $0.baseAddress, $0.count, off_t(ringEnd)) }
        XCTAssertEqual(count, lines.count)
        XCTAssertEqual(read, lines)
        // Without lines, nothing is said.
        let (plain, _) = try makeChannel(slots: 64)
        XCTAssertEqual(try readHeader(plain).watch_offset, 0)
        XCTAssertEqual(try readHeader(plain).watch_length, 0)
    }

    private func readHeader(_ channel: RecordChannel) throws -> la_wire_header {
        var header = la_wire_header()
        let count = withUnsafeMutableBytes(of: &header) { pread(channel.fileDescriptor, $0.baseAddress, $0.count, 0) }
        XCTAssertEqual(count, MemoryLayout<la_wire_header>.size)
        return header
    }

    // MARK: - Blobs

    func testTypeBlobNameWithMultiByteCharacterAcrossTheSlotBoundaryDecodes() throws {
        let (channel, writer) = try makeChannel()
        // The 4-byte scalar occupies payload bytes 22...25: it straddles the first continuation
        // slot's 24 bytes and the second's.
        let prefix = "App.Container<Ünicode"
        XCTAssertEqual(prefix.utf8.count, 22)
        let name = prefix + "🦊" + ">.Ωmega\"quote\\.Nested.Deeper"
        XCTAssertGreaterThan(name.utf8.count, 48, "the name spans three continuation slots")

        let head = writer.typeBlob(id: 7, name: name, max: 3)
        XCTAssertEqual(head, 0)
        XCTAssertEqual(channel.reservedSlots, 1 + RecordEncoder.continuationCount(name.utf8.count))

        var decoder = RecordDecoder()
        let events = drain(&decoder, channel, targetFinished: false)
        XCTAssertEqual(events, [.typeDefined(id: 7, name: name, max: 3)])
        XCTAssertEqual(decoder.cursor, channel.reservedSlots)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testTypeBlobWithPayloadOfExactlyOneSlotAndNegativeMaxDecodes() throws {
        let (channel, writer) = try makeChannel()
        // With the 8-byte la_wire_type in front, 16 name bytes fill exactly one continuation.
        let name = String(repeating: "x", count: 16)
        writer.typeBlob(id: 1, name: name, max: -1)
        writer.typeBlob(id: 2, name: "", max: Int64.max)
        XCTAssertEqual(channel.reservedSlots, 2 + 2)

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            // A negative budget allows no instance: it reads as 0, so no count can overflow.
            [.typeDefined(id: 1, name: name, max: 0), .typeDefined(id: 2, name: "", max: Int.max)]
        )
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testStackBlobOfFiveAddressesDecodesInOrderWithTruncationFlag() throws {
        let (channel, writer) = try makeChannel()
        let addresses: [UInt64] = [0x5555_5555_1234, 0x7fff_0000_0001, 0xdead_beef, 0x1, 0xffff_ffff_ffff_fff0]
        writer.stackBlob(id: 42, addresses: addresses, truncated: true)
        writer.stackBlob(id: 43, addresses: Array(addresses.prefix(3)), truncated: false)
        // 40 bytes → 2 continuation slots; 24 bytes → 1.
        XCTAssertEqual(channel.reservedSlots, 3 + 2)

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: true),
            [
                .stackDefined(id: 42, returnAddresses: addresses, truncated: true),
                .stackDefined(id: 43, returnAddresses: Array(addresses.prefix(3)), truncated: false),
            ]
        )
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testAStackLongerThanTheWiresFrameLimitIsDamageAndCutToItsInnermostFrames() throws {
        // Far more than a capture writes (issue 29 measured a target writing 1,500,000).
        let (channel, writer) = try makeChannel(slots: 1 << 16)
        let addresses = (0..<100_000).map { UInt64(0x1000 + $0) }
        writer.stackBlob(id: 7, addresses: addresses, truncated: false)
        writer.stackBlob(id: 8, addresses: Array(addresses.prefix(Int(LA_WIRE_MAX_FRAMES))), truncated: false)
        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: true),
            [
                .stackDefined(id: 7, returnAddresses: Array(addresses.prefix(48)), truncated: true),
                .stackDefined(id: 8, returnAddresses: Array(addresses.prefix(48)), truncated: false),
            ])
        XCTAssertEqual(decoder.overlongStacks, 1, "a stack of exactly the limit is whole")
        XCTAssertEqual(decoder.cutFrames, 100_000 - 48)
        XCTAssertEqual(decoder.damagedSlots, 1)
    }

    func testANameLongerThanTheWiresLimitIsCutAtACharacterAndSaysSo() throws {
        let (channel, writer) = try makeChannel(slots: 1 << 16)
        // "é" is two bytes: the limit falls inside one, so the cut goes back to its first byte.
        let long = "A" + String(repeating: "é", count: 10_000)
        writer.typeBlob(id: 0, name: long, max: 1)
        writer.blob(kind: Int(LA_BLOB_TEST), id: 3, value: 0, payload: Array(("Tests/" + long).utf8))
        writer.typeBlob(id: 1, name: String(repeating: "B", count: Int(LA_WIRE_MAX_NAME)), max: 1)
        var decoder = RecordDecoder()
        let events = drain(&decoder, channel, targetFinished: true)
        guard events.count == 3, case .typeDefined(_, let name, _, _, _) = events[0],
            case .testDefined(3, let test) = events[1], case .typeDefined(_, let whole, _, _, _) = events[2]
        else { return XCTFail("\(events.count) events") }
        XCTAssertEqual(name, "A" + String(repeating: "é", count: 2047) + "…")
        XCTAssertEqual(test, "Tests/A" + String(repeating: "é", count: 2044) + "…")
        XCTAssertEqual(whole.utf8.count, Int(LA_WIRE_MAX_NAME), "a name of exactly the limit is whole")
        XCTAssertEqual(decoder.longNames, 2)
        XCTAssertEqual(decoder.damagedSlots, 0, "a long name is the author's choice, not damage")
    }

    func testModuleBlobDecodesRangeLoadBiasBuildIDAndPath() throws {
        let (channel, writer) = try makeChannel()
        let image = ModuleImage(
            path: "/usr/lib/swift/linux/libswiftCore.so",
            buildID: (0..<20).map { UInt8($0 * 13 & 0xFF) },
            loadBias: 0x7f12_3400_0000,
            start: 0x7f12_3400_1000,
            end: 0x7f12_3480_0000
        )
        let noBuildID = ModuleImage(path: "/tmp/dir with spaces/ä.so", buildID: [], loadBias: 0, start: 0x40_0000, end: 0x40_8000)
        writer.moduleBlob(index: 0, image: image)
        writer.moduleBlob(index: 1, image: noBuildID)

        var decoder = RecordDecoder()
        let events = drain(&decoder, channel, targetFinished: false)
        XCTAssertEqual(events, [.moduleLoaded(image), .moduleLoaded(noBuildID)])
        guard case .moduleLoaded(let decoded) = events.first else { return XCTFail("no module event") }
        XCTAssertEqual(decoded.buildID.count, 20)
        XCTAssertEqual(decoded.loadBias, 0x7f12_3400_0000)
        XCTAssertTrue(decoded.contains(0x7f12_3400_1000))
        XCTAssertFalse(decoded.contains(0x7f12_3480_0000))
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testProcessBlobDecodesPidCommandLineAndFlags() throws {
        let (channel, writer) = try makeChannel()
        let commandLine = Array("/b/AppPackageTests.xctest\0--testing-library\0swift-testing".utf8)
        let flags = UInt32(LA_PROCESS_TEST_BUNDLE | LA_PROCESS_SWIFT_TESTING | LA_PROCESS_TESTS_OBSERVED)
        writer.blob(kind: Int(LA_BLOB_PROCESS), id: 4242, value: UInt64(flags), payload: commandLine)
        // A command line longer than a process blob may carry is damage, not a process.
        writer.blob(
            kind: Int(LA_BLOB_PROCESS), id: 1, value: 0, payload: [UInt8](repeating: 65, count: Int(LA_WIRE_MAX_COMMAND_LINE) + 1)
        )

        var decoder = RecordDecoder()
        let events = drain(&decoder, channel, targetFinished: true)
        let expected = AttachedProcess(
            pid: 4242, commandLine: ["/b/AppPackageTests.xctest", "--testing-library", "swift-testing"], flags: flags)
        XCTAssertEqual(events, [.processAttached(expected)])
        XCTAssertTrue(expected.isTestBundle && expected.runsSwiftTesting && expected.testsObserved)
        XCTAssertEqual(decoder.damagedSlots, 1, "the oversized command line's head")
        XCTAssertGreaterThan(decoder.tornSlots, 0, "its continuations, skipped as orphans")
    }

    func testModuleBlobWhoseSizesOverrunThePayloadIsRejected() throws {
        let (channel, writer) = try makeChannel()
        var payload = RecordEncoder.modulePayload(start: 1, end: 2, buildID: [1, 2], path: "/lib/x.so")
        payload.removeLast(3)  // path_size now promises 3 bytes more than there are
        writer.blob(kind: Int(LA_BLOB_MODULE), id: 0, value: 0, payload: payload)
        writer.allocated(typeID: 1, object: 0x10, stackID: 0)

        var decoder = RecordDecoder()
        let events = drain(&decoder, channel, targetFinished: true)
        XCTAssertEqual(events, [.allocated(typeID: 1, object: 0x10, stackID: 0, sequence: 3)])
        XCTAssertEqual(decoder.damagedSlots, 1, "the rejected head")
        XCTAssertEqual(decoder.tornSlots, 2, "its two continuations")
    }

    // MARK: - Events

    func testAllocAndDeallocEventsCarryTheirSlotIndexAsSequence() throws {
        let (channel, writer) = try makeChannel()
        writer.typeBlob(id: 3, name: "App.Model", max: 1)  // slots 0...1
        writer.stackBlob(id: 9, addresses: [0xAAAA, 0xBBBB], truncated: false)  // slots 2...3
        let first = writer.allocated(typeID: 3, object: 0x1000, stackID: 9)
        let second = writer.allocated(typeID: 3, object: 0x2000, stackID: UInt32(LA_STACK_NONE))
        let freed = writer.deallocated(typeID: 3, object: 0x1000)
        XCTAssertEqual([first, second, freed], [4, 5, 6])

        var decoder = RecordDecoder()
        let events = drain(&decoder, channel, targetFinished: false)
        XCTAssertEqual(
            Array(events.dropFirst(2)),
            [
                .allocated(typeID: 3, object: 0x1000, stackID: 9, sequence: 4),
                .allocated(typeID: 3, object: 0x2000, stackID: 0xFFFF_FFFF, sequence: 5),
                .deallocated(typeID: 3, object: 0x1000, sequence: 6),
            ]
        )
        XCTAssertEqual(decoder.cursor, 7)
    }

    func testTypeIDUsesTheTagsHighWordAndObjectKeepsAll64Bits() throws {
        let (channel, writer) = try makeChannel()
        writer.allocated(typeID: 0xFFFF_FFFE, object: 0xFFFF_8000_0000_0010, stackID: 0x8000_0001)
        writer.deallocated(typeID: 0xFFFF_FFFE, object: 0xFFFF_8000_0000_0010)

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            [
                .allocated(typeID: 0xFFFF_FFFE, object: 0xFFFF_8000_0000_0010, stackID: 0x8000_0001, sequence: 0),
                .deallocated(typeID: 0xFFFF_FFFE, object: 0xFFFF_8000_0000_0010, sequence: 1),
            ]
        )
    }

    // MARK: - Incremental decoding and uncommitted slots

    func testDecodingIsIncrementalAndSeesEachEventOnce() throws {
        let (channel, writer) = try makeChannel()
        var decoder = RecordDecoder()
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false), [])

        writer.typeBlob(id: 1, name: "A", max: 1)
        writer.allocated(typeID: 1, object: 0x10, stackID: 0)
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            [.typeDefined(id: 1, name: "A", max: 1), .allocated(typeID: 1, object: 0x10, stackID: 0, sequence: 2)]
        )
        XCTAssertEqual(decoder.cursor, 3)
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false), [], "nothing new: nothing repeated")

        writer.deallocated(typeID: 1, object: 0x10)
        writer.allocated(typeID: 1, object: 0x20, stackID: 0)
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            [.deallocated(typeID: 1, object: 0x10, sequence: 3), .allocated(typeID: 1, object: 0x20, stackID: 0, sequence: 4)]
        )
        XCTAssertEqual(drain(&decoder, channel, targetFinished: true), [])
        XCTAssertEqual(decoder.cursor, 5)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testUncommittedSlotStopsDecodingWhileTargetRunsAndIsResumedOnceCommitted() throws {
        let (channel, writer) = try makeChannel()
        writer.allocated(typeID: 1, object: 0xA, stackID: 0)  // slot 0
        let pending = writer.reserve(1)  // slot 1: reserved, not yet committed
        writer.fill(pending, 0xB, 0, 0)
        writer.allocated(typeID: 1, object: 0xC, stackID: 0)  // slot 2, committed before slot 1

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false), [.allocated(typeID: 1, object: 0xA, stackID: 0, sequence: 0)])
        XCTAssertEqual(decoder.cursor, 1, "stops at the uncommitted slot")
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false), [], "still waiting")
        XCTAssertEqual(decoder.cursor, 1)
        XCTAssertEqual(decoder.tornSlots, 0)

        writer.commit(pending, tag: RecordEncoder.eventTag(Int(LA_SLOT_ALLOC), id: 1))
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            [
                .allocated(typeID: 1, object: 0xB, stackID: 0, sequence: 1),
                .allocated(typeID: 1, object: 0xC, stackID: 0, sequence: 2),
            ]
        )
        XCTAssertEqual(decoder.cursor, 3)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    /// A writer on another thread commits each record just after reserving it, while the reader
    /// polls the stream's end: a record committed between the reader's look at its slot (still
    /// empty) and its next look is read as the record it is, never taken for damage.
    func testARecordCommittedWhileTheReaderLooksAtItIsReadNotCountedAsDamage() throws {
        let records: UInt64 = 100_000
        let (channel, channelWriter) = try makeChannel(slots: 1 << 18)
        // Only the writing thread writes through it; the reader reads the channel's own mapping.
        nonisolated(unsafe) let writer = channelWriter
        let writing = Thread {
            for index in 0..<records {
                // In step with the reader: each record is reserved once the reader has read all
                // before it and polls the end of the stream.
                while writer.consumedSlotAcquired < index { sched_yield() }
                writer.allocatedConcurrently(typeID: 1, object: 0x1000 + index * 16)
            }
        }
        writing.start()
        var decoder = RecordDecoder()
        var received: UInt64 = 0
        var emptyPasses = 0
        while decoder.cursor < records {
            let before = decoder.cursor
            decoder.decode(channel, targetFinished: false) { event, _ in
                if case .allocated = event { received += 1 }
            }
            if decoder.cursor == before {
                emptyPasses += 1
                // On a single free core the writer needs it now and then.
                if emptyPasses % 64 == 0 { sched_yield() }
            }
        }
        XCTAssertEqual(decoder.damagedSlots, 0, "a record committed while it was looked at is no damage")
        XCTAssertEqual(received, records)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testBlobWhoseHeadIsNotCommittedYetWaitsWhileTargetRuns() throws {
        let (channel, writer) = try makeChannel()
        let name = "App.SomewhatLongTypeName.ThatNeedsTwoSlots"
        let payload = [UInt8](repeating: 0, count: 8) + Array(name.utf8)  // la_wire_type (code), name
        let total = 1 + RecordEncoder.continuationCount(payload.count)
        let head = writer.reserve(total)
        writer.writeContinuations(head: head, payload: payload)
        writer.fill(head, 5, UInt64(payload.count), 2)
        writer.allocated(typeID: 5, object: 0x1, stackID: 0)

        var decoder = RecordDecoder()
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false), [])
        XCTAssertEqual(decoder.cursor, 0)
        XCTAssertEqual(decoder.tornSlots, 0, "continuations of a pending head are not orphans yet")

        writer.commit(head, tag: RecordEncoder.headTag(blobKind: Int(LA_BLOB_TYPE), totalSlots: total))
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            [.typeDefined(id: 5, name: name, max: 2), .allocated(typeID: 5, object: 0x1, stackID: 0, sequence: total)]
        )
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testOnceTargetFinishedAZeroSlotIsSkippedAndCountedTorn() throws {
        let (channel, writer) = try makeChannel()
        writer.allocated(typeID: 1, object: 0xA, stackID: 0)  // slot 0
        _ = writer.reserve(2)  // slots 1, 2: the writer died before committing
        writer.deallocated(typeID: 1, object: 0xA)  // slot 3

        var decoder = RecordDecoder()
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false).count, 1)
        XCTAssertEqual(decoder.tornSlots, 0)

        XCTAssertEqual(drain(&decoder, channel, targetFinished: true), [.deallocated(typeID: 1, object: 0xA, sequence: 3)])
        XCTAssertEqual(decoder.tornSlots, 2)
        XCTAssertEqual(decoder.cursor, 4)
    }

    func testOrphanContinuationsOfATornHeadAreSkippedAndCounted() throws {
        let (channel, writer) = try makeChannel()
        let addresses: [UInt64] = [1, 2, 3, 4, 5]
        let total = 1 + RecordEncoder.continuationCount(40)
        let head = writer.reserve(total)
        // The target died after the continuations and before the head's tag.
        writer.writeContinuations(head: head, payload: RecordEncoder.bytes(of: addresses))
        writer.allocated(typeID: 2, object: 0x99, stackID: 0)

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: true),
            [.allocated(typeID: 2, object: 0x99, stackID: 0, sequence: 3)]
        )
        XCTAssertEqual(decoder.tornSlots, 3, "the zero head and its two orphan continuations")
    }

    func testLoneContinuationSlotIsSkippedAndCountedEvenWhileTargetRuns() throws {
        let (channel, writer) = try makeChannel()
        writer.allocated(typeID: 1, object: 0x1, stackID: 0)
        let orphan = writer.reserve(1)
        writer.write(orphan, tag: RecordEncoder.continuationTag(1), 0xFF, 0xFF, 0xFF)
        writer.allocated(typeID: 1, object: 0x2, stackID: 0)

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false),
            [
                .allocated(typeID: 1, object: 0x1, stackID: 0, sequence: 0),
                .allocated(typeID: 1, object: 0x2, stackID: 0, sequence: 2),
            ]
        )
        XCTAssertEqual(decoder.tornSlots, 1)
    }

    func testBlobWithWrongContinuationIndexIsRejectedAndTheStreamGoesOn() throws {
        let (channel, writer) = try makeChannel()
        let name = Array("App.NameLongerThanTwentyFourBytes".utf8)
        XCTAssertEqual(RecordEncoder.continuationCount(name.count), 2)
        let head = writer.reserve(3)
        writer.write(head + 1, tag: RecordEncoder.continuationTag(1), 0x41, 0x41, 0x41)
        writer.write(head + 2, tag: RecordEncoder.continuationTag(1), 0x42, 0x42, 0x42)  // should be index 2
        writer.write(head, tag: RecordEncoder.headTag(blobKind: Int(LA_BLOB_TYPE), totalSlots: 3), 4, UInt64(name.count), 1)
        writer.typeBlob(id: 5, name: "App.Fine", max: 2)

        var decoder = RecordDecoder()
        XCTAssertEqual(drain(&decoder, channel, targetFinished: true), [.typeDefined(id: 5, name: "App.Fine", max: 2)])
        // The damaged head alone, then its two continuations one by one: a damaged head's slot
        // count is not trusted to skip anything well-formed.
        XCTAssertEqual(decoder.damagedSlots, 1)
        XCTAssertEqual(decoder.tornSlots, 2)
        XCTAssertEqual(decoder.cursor, channel.reservedSlots)
    }

    func testBlobWhoseContinuationIsAnotherKindIsRejected() throws {
        let (channel, writer) = try makeChannel()
        let head = writer.reserve(2)
        // The head claims a continuation, but the slot after it is an allocation event.
        writer.write(head + 1, tag: RecordEncoder.eventTag(Int(LA_SLOT_ALLOC), id: 1), 0x5, 0, 0)
        writer.write(head, tag: RecordEncoder.headTag(blobKind: Int(LA_BLOB_STACK), totalSlots: 2), 0, 8, 0)
        writer.allocated(typeID: 1, object: 0x6, stackID: 0)

        var decoder = RecordDecoder()
        // The head is rejected; the well-formed event slot after it is not skipped with it.
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: true),
            [
                .allocated(typeID: 1, object: 0x5, stackID: 0, sequence: 1),
                .allocated(typeID: 1, object: 0x6, stackID: 0, sequence: 2),
            ])
        XCTAssertEqual(decoder.damagedSlots, 1)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testBlobWithLengthBeyondItsSlotsOrUnknownKindIsRejected() throws {
        let (channel, writer) = try makeChannel()
        // A length of 25 bytes cannot fit in one continuation slot.
        let first = writer.reserve(2)
        writer.write(first + 1, tag: RecordEncoder.continuationTag(1), 1, 2, 3)
        writer.write(first, tag: RecordEncoder.headTag(blobKind: Int(LA_BLOB_TYPE), totalSlots: 2), 1, 25, 1)
        // An unknown blob kind.
        writer.blob(kind: 0x7E, id: 1, value: 0, payload: [1, 2, 3])
        // A head claiming more slots than the channel holds.
        let huge = writer.reserve(1)
        writer.write(huge, tag: RecordEncoder.headTag(blobKind: Int(LA_BLOB_TYPE), totalSlots: 0xFFFF_FFFF), 1, 8, 1)

        var decoder = RecordDecoder()
        XCTAssertEqual(drain(&decoder, channel, targetFinished: true), [])
        // Three rejected heads, the first two followed by a continuation skipped as an orphan.
        XCTAssertEqual(decoder.damagedSlots, 3)
        XCTAssertEqual(decoder.tornSlots, 2)
    }

    func testGarbageTagIsSkippedAlone() throws {
        let (channel, writer) = try makeChannel()
        let slot = writer.reserve(1)
        writer.write(slot, tag: 0xABCD_0000_0000_00FE, 1, 2, 3)
        writer.allocated(typeID: 1, object: 0x1, stackID: 0)

        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false), [.allocated(typeID: 1, object: 0x1, stackID: 0, sequence: 1)])
        XCTAssertEqual(decoder.damagedSlots, 1)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testTheRingWrapsAndDecodedSlotsAreRetiredAndPublished() throws {
        let (channel, writer) = try makeChannel(slots: 8)
        var decoder = RecordDecoder()
        var seen: [WireEvent] = []
        var object: UInt64 = 0
        func allocate(_ count: Int) {
            for _ in 0..<count {
                writer.allocated(typeID: 1, object: object, stackID: 0)
                object += 1
            }
        }
        func decodeAndCheck() {
            seen += drain(&decoder, channel, targetFinished: false)
            XCTAssertEqual(writer.consumedSlot, decoder.cursor, "progress published")
            for index in 0..<channel.slotCapacity { XCTAssertEqual(writer.tag(index), 0, "slot \(index) retired") }
        }
        // Indices 0...13, never more than a ring ahead of the reader.
        allocate(6)
        decodeAndCheck()
        allocate(8)
        decodeAndCheck()
        // A 3-slot blob at indices 14...16: places 6, 7 and 0, across the ring's end.
        let name = "App.AcrossTheEndOfTheRing"
        XCTAssertEqual(RecordEncoder.continuationCount(name.utf8.count), 2)
        XCTAssertEqual(writer.typeBlob(id: 9, name: name, max: 3), 14)
        allocate(5)
        decodeAndCheck()

        let allocations = seen.compactMap { event -> UInt64? in
            if case .allocated(_, let object, _, _, _, _) = event { return object } else { return nil }
        }
        XCTAssertEqual(allocations, Array(0..<19))
        XCTAssertEqual(seen[14], .typeDefined(id: 9, name: name, max: 3))
        XCTAssertEqual(decoder.cursor, 22)
        XCTAssertEqual(decoder.tornSlots, 0)
    }

    func testDecodedStreamReplaysIntoTheLedger() throws {
        let (channel, writer) = try makeChannel()
        writer.typeBlob(id: 1, name: "App.ViewModel", max: 1)
        writer.stackBlob(id: 0, addresses: [0x10, 0x20], truncated: false)
        writer.stackBlob(id: 1, addresses: [0x30], truncated: true)
        writer.allocated(typeID: 1, object: 0xA0, stackID: 0)
        writer.allocated(typeID: 1, object: 0xB0, stackID: 1)
        writer.allocated(typeID: 1, object: 0xC0, stackID: 0)
        writer.deallocated(typeID: 1, object: 0xB0)

        var decoder = RecordDecoder()
        var ledger = LifetimeLedger()
        decoder.decode(channel, targetFinished: true) { event, _ in ledger.apply(event) }
        let type = try XCTUnwrap(ledger.types[1])
        XCTAssertEqual(type.name, "App.ViewModel")
        XCTAssertEqual(type.peak, 3)
        XCTAssertEqual(type.live.count, 2)
        XCTAssertEqual(type.allocated, 3)
        let atPeak = try XCTUnwrap(ledger.siteTallies { $0 == 1 }[1]).atPeak.counts
        XCTAssertEqual(atPeak.flatMap { Array(repeating: $0.site.stackID, count: $0.count) }.sorted(), [0, 0, 1])
        XCTAssertEqual(ledger.stacks, [0: [0x10, 0x20], 1: [0x30]])
        XCTAssertEqual(ledger.truncatedStacks, [1])
        XCTAssertEqual(ledger.inconsistentEvents, 0)
    }

    /// Past 65,536 live instances the decoder announces each record's object eight slots ahead
    /// (prefetch): the ledger must count exactly as without, every record of the ring included,
    /// whatever the slots ahead hold.
    func testALedgerLargeEnoughToPrefetchForCountsEveryRecord() throws {
        let (channel, writer) = try makeChannel(slots: 1 << 18)
        let instances = UInt64(ProcessLedgers.prefetchFromInstances) + 10_000
        writer.blob(kind: Int(LA_BLOB_PROCESS), id: 4242, value: 0, payload: [])
        writer.typeBlob(id: 1, name: "App.Model", max: Int64.max)
        for index in 1...instances { writer.allocated(typeID: 1, object: index << 4, stackID: 0) }
        var decoder = RecordDecoder()
        var ledgers = ProcessLedgers(watchesAllocations: false)
        decoder.decode(channel, targetFinished: false, into: &ledgers)
        XCTAssertTrue(ledgers.prefersPrefetch)
        // The next pass prefetches: every other instance dies, and a few more are born.
        for index in stride(from: 2, through: instances, by: 2) { writer.deallocated(typeID: 1, object: index << 4) }
        for index in 1...100 { writer.allocated(typeID: 1, object: (instances + UInt64(index)) << 4, stackID: 0) }
        decoder.decode(channel, targetFinished: true, into: &ledgers)

        let type = try XCTUnwrap(ledgers.byIndex[0]?.types[1])
        XCTAssertEqual(type.liveCount, Int(instances / 2) + 100)
        XCTAssertEqual(type.peak, Int(instances))
        XCTAssertEqual(type.allocated, Int(instances) + 100)
        XCTAssertEqual(ledgers.byIndex[0]?.inconsistentEvents, 0)
        XCTAssertEqual(decoder.tornSlots, 0)
        XCTAssertEqual(decoder.damagedSlots, 0)
    }

    func testASlotWhoseWriterDiedIsSkippedWhenLeakAuditSaysSoAndTheRestIsRead() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        writer.allocated(typeID: 1, object: 0xA, stackID: 0)
        _ = writer.reserve(1)  // a process killed between reserve and commit
        writer.allocated(typeID: 1, object: 0xB, stackID: 0)
        var decoder = RecordDecoder()
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false), [.allocated(typeID: 1, object: 0xA, stackID: 0, sequence: 0)])
        XCTAssertTrue(decoder.isWaiting(on: channel))
        XCTAssertTrue(Reception.othersWaitBehind(decoder.cursor, in: channel), "a later record is committed")
        decoder.abandonReservations(below: 2)
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false), [.allocated(typeID: 1, object: 0xB, stackID: 0, sequence: 2)])
        XCTAssertFalse(decoder.isWaiting(on: channel))
        XCTAssertEqual(writer.consumedSlot, 3, "writers waiting for room behind it may go on")
        XCTAssertEqual(decoder.tornSlots, 1)
        XCTAssertEqual(decoder.damagedSlots, 0)
        // A slot reserved later is waited for as usual.
        _ = writer.reserve(1)
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false), [])
        XCTAssertTrue(decoder.isWaiting(on: channel))
        XCTAssertFalse(Reception.othersWaitBehind(decoder.cursor, in: channel), "nothing is written after it")
        XCTAssertEqual(decoder.tornSlots, 1)
    }

    /// A reservation of a whole ring left empty (a writer that died mid-record, or one forged),
    /// with writers waiting for room behind it: abandoned at once, in one pass, not a slot a wait.
    func testAnEmptyReservationOfAWholeRingIsAbandonedInOnePass() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        writer.allocated(typeID: 1, object: 0xA, stackID: 0)
        _ = writer.reserve(64)
        var decoder = RecordDecoder()
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false).count, 1)
        XCTAssertTrue(Reception.othersWaitBehind(decoder.cursor, in: channel), "the ring is full")
        decoder.abandonReservations(below: writer.nextSlot)
        XCTAssertEqual(drain(&decoder, channel, targetFinished: false), [])
        XCTAssertEqual(decoder.cursor, 65)
        XCTAssertEqual(decoder.tornSlots, 64)
        XCTAssertEqual(writer.consumedSlot, 65)
        writer.allocated(typeID: 1, object: 0xB, stackID: 0)
        XCTAssertEqual(
            drain(&decoder, channel, targetFinished: false), [.allocated(typeID: 1, object: 0xB, stackID: 0, sequence: 65)])
    }

    /// Announces process 200, which runs on, and its type `App.Model` (id 1); reserves a slot it
    /// has not written yet, then writes an allocation after it. Returns its index and that slot.
    private func announceSlowProcess(_ writer: ChannelWriter) -> (process: UInt8, slot: UInt64) {
        let live = writer.announce(pid: 200)
        writer.typeBlob(id: 1, name: "App.Model", max: Int64.max, process: live)
        let slot = writer.reserve(1)
        writer.allocated(typeID: 1, object: 0xB, stackID: 0, process: live)
        return (live, slot)
    }

    /// What the reader receives from `channel` while process 100 has ended and the target runs
    /// until `until` holds, calling `beforePass` at each pass.
    private func receive(_ channel: RecordChannel, until: @escaping () -> Bool, beforePass: @escaping () -> Void)
        -> Reception
    {
        let target = ScriptedTarget(until: until, ended: [100]) { _ in beforePass() }
        return Reception.receive(from: channel, while: target, watch: WatchOptions()).received
    }

    /// What the reader receives from `channel` while process 100 has ended, until `until` holds
    /// once it has read past slot `slot` while the target ran, or for 8 s at most (less than the
    /// ten seconds a slot a live process may own is waited for); and whether it read past `slot`
    /// while the target ran. `then` runs once, at the first pass after that.
    private func receiveGivingUp(
        _ channel: RecordChannel, _ writer: ChannelWriter, past slot: UInt64, until: @escaping () -> Bool,
        then: @escaping () -> Void = {}
    ) -> (Reception, Bool) {
        let started = Date()
        var past = false
        let received = receive(
            channel, until: { (past && until()) || Date().timeIntervalSince(started) > 8 },
            beforePass: {
                guard !past, writer.consumedSlot > slot else { return }
                past = true
                then()
            })
        return (received, past)
    }

    /// Asserts that `received` gave its empty reservation up while the target ran (before the ten
    /// seconds a slot a live process may own waits), counting `torn` slots torn and none damaged,
    /// and read `allocated` instances of process `live`'s type 1.
    private func assertGivenUp(
        _ received: (Reception, Bool), torn: UInt64, reading allocated: Int, of live: UInt8,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let (reception, givenUpWhileRunning) = received
        XCTAssertTrue(givenUpWhileRunning, "given up before the ten seconds", file: file, line: line)
        XCTAssertEqual(reception.ledgers[live]?.types[1]?.allocated, allocated, file: file, line: line)
        XCTAssertEqual(reception.tornSlots, torn, file: file, line: line)
        XCTAssertEqual(reception.damagedSlots, 0, file: file, line: line)
    }

    /// A writer of a live process held between reserving and committing for more than a second
    /// (a loaded machine, a stop), while another attached process has ended (swift test's XCTest
    /// bundle before its Swift Testing run): its reservation is waited for, and its record read.
    func testALiveProcesssSlowWriterIsWaitedForWhileAnotherProcessHasEnded() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        writer.announce(pid: 100)
        let (live, slow) = announceSlowProcess(writer)
        let started = Date()
        var committed = false
        let received = receive(
            channel, until: { committed && writer.consumedSlot > slow },
            beforePass: {
                guard !committed, Date().timeIntervalSince(started) > 1.5 else { return }
                XCTAssertEqual(writer.consumedSlot, slow, "the reservation is still waited for")
                writer.allocated(typeID: 1, object: 0xA, stackID: 0, process: live, at: slow)
                committed = true
            })
        XCTAssertTrue(committed)
        XCTAssertEqual(received.ledgers[live]?.types[1]?.allocated, 2, "the slow writer's record is read")
        XCTAssertEqual(received.tornSlots, 0)
        XCTAssertEqual(received.damagedSlots, 0)
    }

    /// A writer that died between reserving and committing, in a process that has ended, while
    /// a process that announced itself after the reservation writes on: abandoned after the
    /// first second (the live process cannot own it), and the live process's records are read,
    /// its own slow reservation (after its announcement, still empty then) among them.
    func testADeadProcesssReservationIsAbandonedWhileAProcessAnnouncedAfterItWritesOn() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        writer.announce(pid: 100)
        let torn = writer.reserve(1)
        let (live, slow) = announceSlowProcess(writer)
        let received = receiveGivingUp(
            channel, writer, past: torn, until: { writer.consumedSlot > slow },
            then: {
                XCTAssertEqual(writer.consumedSlot, slow, "the live process's reservation is still waited for")
                writer.allocated(typeID: 1, object: 0xA, stackID: 0, process: live, at: slow)
            })
        assertGivenUp(received, torn: 1, reading: 2, of: live)
    }

    /// A blob's writer that died mid-blob (its slots marked with its process index, one
    /// continuation committed), while a process announced before the blob runs and writes on:
    /// the blob is given up after the first second, since the process its marks name has ended,
    /// not after the ten seconds a slot any live process may own waits; the live process's
    /// records are read.
    func testABlobMarkedByAProcessThatEndedIsAbandonedWhileAnEarlierProcessWritesOn() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        let dead = writer.announce(pid: 100)
        let live = writer.announce(pid: 200)
        writer.typeBlob(id: 1, name: "App.Model", max: Int64.max, process: live)
        let torn = writer.reserve(3)
        for index in torn..<torn + 3 { writer.mark(index, process: dead) }
        writer.commit(torn + 1, tag: UInt64(LA_SLOT_BLOB_CONT) | 1 << 8)
        let read = writer.allocated(typeID: 1, object: 0xB, stackID: 0, process: live)
        assertGivenUp(receiveGivingUp(channel, writer, past: read, until: { true }), torn: 3, reading: 1, of: live)
    }

    /// A reservation mark says whose a slot is only when it is whole and names a process that
    /// announced itself and has ended: one naming a live process, another slot's index, or a
    /// process that never announced itself gives nothing up.
    func testAReservationMarkNamesADeadWriterOnlyWhenWholeAndOfAnEndedProcess() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        let dead = writer.announce(pid: 100)
        let live = writer.announce(pid: 200)
        let slot = writer.reserve(2)
        writer.allocated(typeID: 1, object: 0xB, stackID: 0, process: live)
        func owners() -> ReservationOwners {
            ReservationOwners(
                of: slot, in: channel, announced: [(index: dead, pid: 100), (index: live, pid: 200)],
                hasEnded: { $0 == 100 })
        }
        XCTAssertFalse(owners().markedOwnerEnded, "not marked")
        writer.mark(slot, process: dead)
        writer.mark(slot + 1, process: dead)
        XCTAssertTrue(owners().markedOwnerEnded)
        XCTAssertEqual(owners().markedSlotsEnd, slot + 2, "the dead writer's two slots, not the live one's record")
        XCTAssertFalse(owners().allEnded, "a live process may own it by the rule without marks")
        writer.mark(slot, process: live)
        XCTAssertFalse(owners().markedOwnerEnded, "its writer's process lives")
        writer.mark(slot, process: dead, slotIndex: slot + 64)
        XCTAssertFalse(owners().markedOwnerEnded, "a mark of the slot's place a ring later")
        writer.mark(slot, process: 7)
        XCTAssertFalse(owners().markedOwnerEnded, "a process that never announced itself")
        XCTAssertNil(ReservationOwners.markedWriter(of: slot, tag: UInt64(LA_SLOT_ALLOC) | UInt64(LA_RESERVATION_MARK) << 8))
    }

    // MARK: - Hostile values

    func testAHugeNextSlotSizesNoLoopAndCountsAsDamage() throws {
        let (channel, writer) = try makeChannel(slots: 64)
        writer.typeBlob(id: 1, name: "App.ViewModel", max: 1)
        writer.allocated(typeID: 1, object: 0xA0, stackID: 0)
        let written = writer.nextSlot
        // A process writing into the channel claims nearly 2^64 slots.
        writer.nextSlot = UInt64.max - 3
        var decoder = RecordDecoder()
        var ledger = LifetimeLedger()
        let started = Date()
        decoder.decode(channel, targetFinished: false) { event, _ in ledger.apply(event) }
        decoder.decode(channel, targetFinished: true) { event, _ in ledger.apply(event) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "one ring per pass, whatever next_slot says")
        XCTAssertEqual(ledger.types[1]?.live.count, 1, "what was written before is decoded")
        XCTAssertEqual(decoder.tornSlots, 0, "no writer tore \(UInt64.max - 3 - written) records")
        XCTAssertEqual(decoder.damagedSlots, 1, "the header")
    }

    func testATypeIDNearTheTopSizesNoTable() throws {
        let (channel, writer) = try makeChannel()
        writer.typeBlob(id: 0xFFFF_FFF0, name: "App.Huge", max: 1)
        writer.allocated(typeID: 0xFFFF_FFF1, object: 0xA0, stackID: 0)
        writer.typeBlob(id: 2, name: "App.ViewModel", max: 1)
        writer.allocated(typeID: 2, object: 0xB0, stackID: 0)
        var decoder = RecordDecoder()
        var ledger = LifetimeLedger()
        decoder.decode(channel, targetFinished: true) { event, _ in ledger.apply(event) }
        XCTAssertEqual(ledger.inconsistentEvents, 2)
        XCTAssertEqual(Array(ledger.types.keys), [2])
        XCTAssertEqual(ledger.types[2]?.live.count, 1)
    }

    // MARK: - Passes

    /// The reader pauses twice as long after each pass that found little, up to eight times the
    /// poll interval; a backlog (no pause) halves it again. Answering heap walks keeps it at the
    /// poll interval: a process waits for each answer.
    func testTheReaderPausesLongerWhileTheTargetWritesLittle() throws {
        // Records written before each pass: one, then a backlog four passes long, then two.
        let written = [1, 1, 1, 1, 1, 5_000, 5_000, 5_000, 5_000, 2, 2]
        func pauses(retainers: Bool) throws -> [UInt32] {
            let (channel, writer) = try makeChannel(slots: 1 << 16)
            writer.blob(kind: Int(LA_BLOB_PROCESS), id: 4242, value: 0, payload: [])
            writer.typeBlob(id: 1, name: "App.Model", max: Int64.max)
            var object: UInt64 = 0
            let target = ScriptedTarget(passes: written.count) { pass in
                for _ in 0..<written[pass] {
                    object += 16
                    writer.allocated(typeID: 1, object: object, stackID: 0)
                }
            }
            var watch = WatchOptions()
            watch.retainers = retainers
            let (outcome, received) = Reception.receive(from: channel, while: target, watch: watch)
            XCTAssertEqual(outcome, .exited(code: 0))
            XCTAssertEqual(received.ledgers[0]?.types[1]?.liveCount, written.reduce(0, +))
            return target.pauses
        }
        XCTAssertEqual(try pauses(retainers: false), [1_000, 2_000, 4_000, 8_000, 8_000, 1_000, 2_000])
        XCTAssertEqual(try pauses(retainers: true), Array(repeating: 1_000, count: 7))
    }
}

/// A target that runs `passes` passes of the reader (or until `until` holds, pausing as asked),
/// calling `beforePass` at the start of each (to write records), then exits; it keeps the pauses
/// the reader asked for. The processes in `ended` have ended, the others run.
private final class ScriptedTarget: RunningTarget {
    private let passes: Int
    private let until: (() -> Bool)?
    private let ended: Set<Int32>
    private let beforePass: (Int) -> Void
    private var pass = 0
    private(set) var pauses: [UInt32] = []

    init(passes: Int, beforePass: @escaping (Int) -> Void) {
        self.passes = passes
        until = nil
        ended = []
        self.beforePass = beforePass
    }

    init(until: @escaping () -> Bool, ended: Set<Int32>, beforePass: @escaping (Int) -> Void) {
        passes = Int.max
        self.until = until
        self.ended = ended
        self.beforePass = beforePass
    }

    func poll() -> TargetOutcome? {
        guard pass < passes, !(until?() ?? false) else { return .exited(code: 0) }
        beforePass(pass)
        pass += 1
        return nil
    }

    func send(_ signal: Int32) {}
    var receivedSignal: Int32? { nil }
    func hasEnded(process pid: Int32) -> Bool { ended.contains(pid) }
    func pause(microseconds: UInt32) {
        pauses.append(microseconds)
        if until != nil { usleep(microseconds) }
    }
}
