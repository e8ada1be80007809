import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// ELF files of the target's images, made to lie (offsets past any file, sections past the end, a
/// string table without terminator, a symbol past the address space): ELFFile, ProgramHeaders and
/// ShimStateLocator give a partial answer or none, and never trap.
final class ELFFileTests: XCTestCase {
    private typealias Image = ELFReplay.Image

    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "ELFFileTests-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Writes `bytes` into a new file of the test's directory; returns its path and inode.
    private func file(_ name: String, _ bytes: [UInt8]) throws -> (path: String, inode: UInt64) {
        let path = directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        return (path, UInt64(info.st_ino))
    }

    private static let state = ShimStateLocator.symbolName

    /// The ELF file at `path`, which must open.
    private func elf(_ path: String, inode: UInt64? = nil) throws -> ELFFile {
        guard let file = ELFFile(path: path, inode: inode) else { throw NotOpened(path: path) }
        return file
    }

    /// Whether the ELF file at `path` opens.
    private func opens(_ path: String) -> Bool {
        switch ELFFile(path: path) {
        case .some: true
        case .none: false
        }
    }

    private struct NotOpened: Error {
        var path: String
    }

    func testAWellFormedImageIsRead() throws {
        let image = Image(symbols: [(Self.state, 0x2000, 0x3_0000), ("other", 0x1800, 8)])
        let (path, inode) = try file("good.so", image.bytes())
        let opened = try elf(path, inode: inode)
        XCTAssertEqual(opened.sections.count, 4)
        let definition = try XCTUnwrap(opened.dynamicDefinition(of: Self.state))
        XCTAssertEqual(definition.address, 0x2000)
        XCTAssertEqual(definition.size, 0x3_0000)
        XCTAssertEqual(opened.objectSymbols { $0 == "other" }, [0x1800])
        let headers = try XCTUnwrap(ProgramHeaders(path: path, inode: inode))
        XCTAssertEqual(headers.lowestAddress, 0)
        XCTAssertEqual(headers.highestAddress, 0x10_0000)
    }

    /// Section and program header tables, and a section, at offsets beyond any file (more than
    /// 2^63, which no `off_t` holds): no answer, no trap.
    func testOffsetsBeyondAnyFileGiveNoAnswer() throws {
        let image = Image(symbols: [(Self.state, 0x2000, 0x3_0000)])
        let sections = try file("sections.so", image.bytes { file, _ in Image.put(UInt64.max - 63, 8, at: 0x28, in: &file) })
        XCTAssertFalse(opens(sections.path))
        XCTAssertNotNil(ProgramHeaders(path: sections.path, inode: sections.inode), "its program headers are sound")
        let programs = try file("programs.so", image.bytes { file, _ in Image.put(1 << 63, 8, at: 0x20, in: &file) })
        XCTAssertNil(ProgramHeaders(path: programs.path, inode: programs.inode))
        let symbols = try file(
            "symbols.so", image.bytes { file, headers in Image.put(1 << 63 | 0x40, 8, at: headers + 2 * 64 + 0x18, in: &file) })
        let opened = try elf(symbols.path)
        XCTAssertNil(opened.dynamicDefinition(of: Self.state))
        XCTAssertEqual(opened.objectSymbols { _ in true }, [])
        XCTAssertEqual(TargetKind.inspect(path: symbols.path), .notSwift)
    }

    /// A symbol table that reaches past the end of the file is not read; one whose size is no
    /// multiple of an entry is read for its whole entries; a string table whose last name has no
    /// terminator does not define that name.
    func testSectionsThatLieAboutTheirSizeGiveAPartialAnswer() throws {
        let image = Image(symbols: [("first", 0x1800, 8), (Self.state, 0x2000, 0x3_0000)])
        let pastTheEnd = try file(
            "past-the-end.so", image.bytes { file, headers in Image.put(1 << 24, 8, at: headers + 2 * 64 + 0x20, in: &file) })
        XCTAssertNil(try elf(pastTheEnd.path).dynamicDefinition(of: "first"))
        let ragged = try file(
            "ragged.so", image.bytes { file, headers in Image.put(24 + 24 + 11, 8, at: headers + 2 * 64 + 0x20, in: &file) })
        let raggedFile = try elf(ragged.path)
        XCTAssertEqual(raggedFile.dynamicDefinition(of: "first")?.address, 0x1800)
        XCTAssertNil(raggedFile.dynamicDefinition(of: Self.state), "its entry is cut short")
        var unterminated = image
        unterminated.strings = [0] + Array("first".utf8) + [0] + Array(Self.state.utf8)
        let cut = try file("unterminated.so", unterminated.bytes())
        let cutFile = try elf(cut.path)
        XCTAssertEqual(cutFile.dynamicDefinition(of: "first")?.address, 0x1800)
        XCTAssertNil(cutFile.dynamicDefinition(of: Self.state))
        XCTAssertEqual(cutFile.objectSymbols { $0 == Self.state }, [0x2000], "the name as far as the table goes")
    }

    /// The fuzz target's seeds read as what they define, and thousands of their mutations (bytes
    /// flipped, cut short, words of all ones) neither trap nor hang (Fuzz/ELFFuzzer runs longer).
    func testTheFuzzersSeedsReadAndTheirMutationsNeverTrap() {
        let seeds = ELFReplay.seeds.sorted { $0.key < $1.key }.map(\.value)
        // Each has 4 sections and is an ELF file TargetKind reads (5); the ICU class: 6; the
        // state's 48 whole pages and the malloc-block class: 54; a name without terminator: 5.
        XCTAssertEqual(seeds.map { $0.withUnsafeBytes(ELFReplay.read) }, [6, 54, 5])
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func random() -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(truncatingIfNeeded: state >> 1)
        }
        for round in 0..<3_000 {
            var input = seeds[round % seeds.count]
            for _ in 0..<(1 + random() % 8) {
                let at = random() % input.count
                switch random() % 3 {
                case 0: input[at] ^= UInt8(truncatingIfNeeded: random())
                case 1: for offset in at..<Swift.min(at + 8, input.count) { input[offset] = 0xFF }
                default: input.removeLast(random() % Swift.max(1, input.count / 4))
                }
                if input.isEmpty { break }
            }
            _ = input.withUnsafeBytes(ELFReplay.read)
        }
    }

    /// An image whose shim state is said to lie at the top of the address space, or to be larger
    /// than the image: no trap, and no page outside the image's own segments is left out of a walk.
    func testAShimStateThatLiesIsKeptWithinItsImage() throws {
        let start: UInt64 = 0x7000_0000
        func pages(_ name: String, address: UInt64, size: UInt64) throws -> [Range<UInt64>] {
            let (path, inode) = try file(name, Image(symbols: [(Self.state, address, size)]).bytes())
            let region = ProcessSnapshot.Region(
                start: start, end: start + 0x1000, isWritable: false, isExecutable: false, path: path, fileOffset: 0,
                inode: inode, copiedStart: start, bytes: RegionBytes())
            return ShimStateLocator.pages(in: [region])
        }
        XCTAssertEqual(try pages("top.so", address: UInt64.max - start - 0xF, size: 0x3_0000), [])
        XCTAssertEqual(try pages("huge.so", address: 0x1800, size: 1 << 62), [start + 0x2000..<start + 0x10_0000])
        XCTAssertEqual(try pages("sound.so", address: 0x1800, size: 0x3_0000), [start + 0x2000..<start + 0x3_1000])
    }
}
