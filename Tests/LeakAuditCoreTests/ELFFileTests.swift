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
    /// A small shared object: one PT_LOAD of 1 MiB at 0, a `.dynstr`, a `.dynsym` of the given
    /// symbols (each an object, defined in section 1) and a `.shstrtab`; what `edit` changes in its
    /// bytes after they are laid out (offsets below).
    private struct Image {
        var symbols: [(name: String, value: UInt64, size: UInt64)] = []
        /// `.dynstr` as laid out, to lie about (every name NUL-terminated unless changed).
        var strings: [UInt8]? = nil

        static let programHeaders = 64
        static let dynamicStrings = 120

        func bytes(edit: (inout [UInt8], _ sectionHeaders: Int) -> Void = { _, _ in }) -> [UInt8] {
            var names: [UInt8] = [0]
            var symbolTable = [UInt8](repeating: 0, count: 24)
            for symbol in symbols {
                var entry = [UInt8](repeating: 0, count: 24)
                Self.put(UInt64(names.count), 4, at: 0, in: &entry)
                entry[4] = 0x11  // STB_GLOBAL, STT_OBJECT
                Self.put(1, 2, at: 6, in: &entry)
                Self.put(symbol.value, 8, at: 8, in: &entry)
                Self.put(symbol.size, 8, at: 16, in: &entry)
                symbolTable += entry
                names += Array(symbol.name.utf8) + [0]
            }
            let dynamicStrings = strings ?? names
            let symbolsAt = (Self.dynamicStrings + dynamicStrings.count + 7) / 8 * 8
            let sectionNames = Array("\0.dynstr\0.dynsym\0.shstrtab\0".utf8)
            let sectionNamesAt = symbolsAt + symbolTable.count
            let sectionHeadersAt = (sectionNamesAt + sectionNames.count + 7) / 8 * 8
            var file = [UInt8](repeating: 0, count: sectionHeadersAt + 4 * 64)
            file.replaceSubrange(0..<8, with: [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0])
            Self.put(3, 2, at: 0x10, in: &file)
            Self.put(0x3E, 2, at: 0x12, in: &file)
            Self.put(1, 4, at: 0x14, in: &file)
            Self.put(UInt64(Self.programHeaders), 8, at: 0x20, in: &file)
            Self.put(UInt64(sectionHeadersAt), 8, at: 0x28, in: &file)
            Self.put(64, 2, at: 0x34, in: &file)
            Self.put(56, 2, at: 0x36, in: &file)
            Self.put(1, 2, at: 0x38, in: &file)
            Self.put(64, 2, at: 0x3A, in: &file)
            Self.put(4, 2, at: 0x3C, in: &file)
            Self.put(3, 2, at: 0x3E, in: &file)
            // PT_LOAD: the file's first page at 0, 1 MiB in memory.
            Self.put(1, 4, at: Self.programHeaders, in: &file)
            Self.put(0x1000, 8, at: Self.programHeaders + 0x20, in: &file)
            Self.put(0x10_0000, 8, at: Self.programHeaders + 0x28, in: &file)
            file.replaceSubrange(Self.dynamicStrings..<Self.dynamicStrings + dynamicStrings.count, with: dynamicStrings)
            file.replaceSubrange(symbolsAt..<symbolsAt + symbolTable.count, with: symbolTable)
            file.replaceSubrange(sectionNamesAt..<sectionNamesAt + sectionNames.count, with: sectionNames)
            // Sections 1 to 3: name, type, offset, size, link.
            for (index, section) in [
                (1, 3, Self.dynamicStrings, dynamicStrings.count, 0), (9, 11, symbolsAt, symbolTable.count, 1),
                (17, 3, sectionNamesAt, sectionNames.count, 0),
            ].enumerated() {
                let header = sectionHeadersAt + (index + 1) * 64
                Self.put(UInt64(section.0), 4, at: header, in: &file)
                Self.put(UInt64(section.1), 4, at: header + 4, in: &file)
                Self.put(UInt64(section.2), 8, at: header + 0x18, in: &file)
                Self.put(UInt64(section.3), 8, at: header + 0x20, in: &file)
                Self.put(UInt64(section.4), 4, at: header + 0x28, in: &file)
            }
            edit(&file, sectionHeadersAt)
            return file
        }

        /// Stores the low `width` bytes of `value`, little-endian, at `offset`.
        static func put(_ value: UInt64, _ width: Int, at offset: Int, in bytes: inout [UInt8]) {
            for byte in 0..<width { bytes[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * byte)) }
        }
    }

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
