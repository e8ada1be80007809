import CLeakAuditHost
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// leak-audit's readers of the target's image files, on a file's bytes alone, for the ELF fuzz
/// target (Fuzz/ELFFuzzer) and the tests: the section headers and both symbol tables (`ELFFile`:
/// the shim's state, ICU's and the blocks runtime's classes), the program headers and build-id
/// (`ProgramHeaders`), the dynamic section (`TargetKind.inspect`), the pages of the shim's state
/// as a heap walk leaves them out (`ShimStateLocator.statePages`), and the symbolizer's symbol
/// indexes, read in place (`Symbolizer.ModuleResolver`).
package enum ELFReplay {
    /// Reads `bytes` as an image file, through an anonymous file of them; returns a figure of what
    /// was read (sections, symbols, build-id bytes, pages).
    package static func read(_ bytes: UnsafeRawBufferPointer) -> Int {
        let descriptor = leakaudit_host_memfd_create("leak-audit-elf-replay")
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count, let base = bytes.baseAddress {
            let count = write(descriptor, base + written, bytes.count - written)
            guard count > 0 else { return 0 }
            written += count
        }
        let path = "/proc/self/fd/\(descriptor)"
        var found = 0
        var state: (address: UInt64, size: UInt64)? = nil
        if let file = ELFFile(path: path) {
            found += file.sections.count
            state = file.dynamicDefinition(of: ShimStateLocator.symbolName)
            let classes = ForeignClassSymbols.classes(in: file)
            found += classes.unicodeStrings.count + classes.mallocBlocks.count
        }
        if let headers = ProgramHeaders(path: path, inode: 0) {
            found += headers.buildID.count
            if let state,
                let pages = ShimStateLocator.statePages(
                    imageAt: 0x7F00_0000_0000, address: state.address, size: state.size,
                    segments: headers.lowestAddress..<headers.highestAddress, pageSize: 4096)
            {
                found += Int((pages.upperBound - pages.lowerBound) / 4096)
            }
        }
        if TargetKind.inspect(path: path) != .other { found += 1 }
        found += symbolIndexes(path: path)
        return found
    }

    /// The symbols the symbolizer indexes in the file at `path` (`Symbolizer.ModuleResolver`) when
    /// it reads the symbol table in place; 0 when libdw cannot open the file or the table is not
    /// read in place (libdwfl's own reading is libdw's to fuzz).
    private static func symbolIndexes(path: String) -> Int {
        guard case .success(let dw) = LibDW.loaded,
            let resolver = try? Symbolizer.ModuleResolver.open(
                ModuleImage(path: path, buildID: [], loadBias: 0, start: 0, end: 0), separateDebugInfo: false, dw: dw),
            let indexes = resolver.symbolIndexes(readingInPlace: true)
        else { return 0 }
        return indexes.functions.count + indexes.variables.count
    }

    /// Well-formed images to start fuzzing from, by name: the shim's state and a foreign class
    /// defined, and a string table without terminator.
    package static var seeds: [String: [UInt8]] {
        [
            "state": Image(symbols: [(ShimStateLocator.symbolName, 0x2000, 0x3_0000), ("_NSConcreteMallocBlock", 0x1800, 8)])
                .bytes(),
            "icu": Image(symbols: [("_ZTVN6icu_7613UnicodeStringE", 0x1000, 0x40)]).bytes(),
            "unterminated": Image(symbols: [("first", 0x1800, 8)], strings: [0] + Array("first".utf8)).bytes(),
        ]
    }

    /// A small shared object: one PT_LOAD of 1 MiB at 0, a `.dynstr`, a `.dynsym` of the given
    /// symbols (each an object, defined in section 1) and a `.shstrtab`; what `edit` changes in its
    /// bytes after they are laid out (offsets below).
    package struct Image {
        package var symbols: [(name: String, value: UInt64, size: UInt64)] = []
        /// `.dynstr` as laid out, to lie about (every name NUL-terminated unless changed).
        package var strings: [UInt8]? = nil

        static let programHeaders = 64
        static let dynamicStrings = 120

        package init(symbols: [(name: String, value: UInt64, size: UInt64)] = [], strings: [UInt8]? = nil) {
            self.symbols = symbols
            self.strings = strings
        }

        package func bytes(edit: (inout [UInt8], _ sectionHeaders: Int) -> Void = { _, _ in }) -> [UInt8] {
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
        package static func put(_ value: UInt64, _ width: Int, at offset: Int, in bytes: inout [UInt8]) {
            for byte in 0..<width { bytes[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * byte)) }
        }
    }
}
