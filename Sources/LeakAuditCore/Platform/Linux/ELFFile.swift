#if canImport(Glibc)
    import Glibc
#endif

/// A 64-bit little-endian ELF file opened for reading its section headers and the sections they
/// describe, with `pread`: nothing is mapped, and a section is read only when asked for.
struct ELFFile: ~Copyable {
    /// One section header: where its bytes are and what they are.
    struct Section {
        var name: UInt64
        var type: UInt64
        /// Where the section lies at run time, before the load bias (0: not loaded).
        var address: UInt64
        var offset: UInt64
        var size: UInt64
        var link: Int
    }

    /// `SHT_SYMTAB`, `SHT_DYNAMIC` and `SHT_DYNSYM`.
    static let symbolTable: UInt64 = 2
    static let dynamicSection: UInt64 = 6
    static let dynamicSymbolTable: UInt64 = 11

    private let descriptor: Int32
    /// The file's size when it was opened: no section reaches past it.
    private let size: UInt64
    /// The section headers, in the file's order.
    let sections: [Section]
    /// The index of the section holding the sections' names.
    let namesIndex: Int

    /// Opens `path`; nil when it is no regular file (or not the file `inode` names, when given),
    /// or not a 64-bit little-endian ELF file with section headers of the usual size.
    init?(path: String, inode: UInt64? = nil) {
        guard let (descriptor, header, fileSize) = Self.open(path, inode: inode) else { return nil }
        let sectionOffset = Self.u64(header, 0x28)
        let sectionSize = Int(Self.u16(header, 0x3A))
        let sectionCount = Int(Self.u16(header, 0x3C))
        let namesIndex = Int(Self.u16(header, 0x3E))
        // The table must lie within the file: a header's count is not an allocation's size.
        guard sectionSize == 64, sectionCount > 0, sectionCount < 65_280, namesIndex < sectionCount,
            sectionOffset <= fileSize, UInt64(sectionSize * sectionCount) <= fileSize - sectionOffset,
            let table = Self.read(descriptor, sectionOffset, sectionSize * sectionCount)
        else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        size = fileSize
        self.namesIndex = namesIndex
        sections = (0..<sectionCount).map { index in
            let base = index * sectionSize
            return Section(
                name: Self.u32(table, base), type: Self.u32(table, base + 4), address: Self.u64(table, base + 0x10),
                offset: Self.u64(table, base + 0x18),
                size: Self.u64(table, base + 0x20), link: Int(Self.u32(table, base + 0x28)))
        }
    }

    deinit { close(descriptor) }

    /// Opens `path` for reading: its descriptor, its first 64 bytes (the ELF header) and its size;
    /// nil when it is no regular file (or not the file `inode` names, when given), or not a 64-bit
    /// little-endian ELF file. The caller closes the descriptor.
    static func open(_ path: String, inode: UInt64?) -> (descriptor: Int32, header: [UInt8], size: UInt64)? {
        // The path may come from the target: a FIFO must not block open(), nor a device be read.
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, inode.map({ UInt64(info.st_ino) == $0 }) ?? true,
            let header = read(descriptor, 0, 64), header[0...3] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1
        else {
            close(descriptor)
            return nil
        }
        return (descriptor, header, UInt64(clamping: info.st_size))
    }

    /// The bytes of `section`, when it is smaller than `limit` and lies within the file.
    func bytes(of section: Section, limit: UInt64 = 64 << 20) -> [UInt8]? {
        guard section.size < limit, section.offset <= size, section.size <= size - section.offset else { return nil }
        return Self.read(descriptor, section.offset, Int(section.size))
    }

    /// The NUL-terminated string at `offset` in a string table.
    static func string(_ table: [UInt8], _ offset: UInt64) -> String {
        guard offset < table.count else { return "" }
        return String(decoding: table[Int(offset)...].prefix { $0 != 0 }, as: UTF8.self)
    }

    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt64 { UInt64(bytes[at]) | UInt64(bytes[at + 1]) << 8 }
    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<4).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
    static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }

    /// `count` bytes of the file open as `descriptor` from `offset`; nil when the file ends before
    /// them, or `offset` is beyond any file (an offset the file's headers give: any 64 bits).
    static func read(_ descriptor: Int32, _ offset: UInt64, _ count: Int) -> [UInt8]? {
        guard count >= 0, offset <= UInt64(Int64.max) - UInt64(count) else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return got == count ? bytes : nil
    }

    /// The link-time address and size of the symbol named `name` that the dynamic symbol table
    /// defines (in a section of this file, not imported); nil when it defines none.
    func dynamicDefinition(of name: String) -> (address: UInt64, size: UInt64)? {
        let name = Array(name.utf8)
        for section in sections where section.type == Self.dynamicSymbolTable && section.link < sections.count {
            guard let names = bytes(of: sections[section.link], limit: 256 << 20),
                let symbols = bytes(of: section, limit: 256 << 20)
            else { continue }
            for entry in stride(from: 0, to: symbols.count - 23, by: 24) where Self.u16(symbols, entry + 6) != 0 {
                let start = Int(Self.u32(symbols, entry))
                guard start + name.count < names.count, names[start + name.count] == 0,
                    names[start..<start + name.count].elementsEqual(name)
                else { continue }
                return (Self.u64(symbols, entry + 8), Self.u64(symbols, entry + 16))
            }
        }
        return nil
    }

    /// The value of every data object symbol (`STT_OBJECT`) of the symbol tables whose name
    /// `matches`, at link-time addresses.
    func objectSymbols(where matches: (String) -> Bool) -> [UInt64] {
        var found: [UInt64] = []
        for section in sections
        where (section.type == Self.symbolTable || section.type == Self.dynamicSymbolTable) && section.link < sections.count {
            guard let symbols = bytes(of: section), let names = bytes(of: sections[section.link]) else { continue }
            for entry in stride(from: 0, to: symbols.count - 23, by: 24) where symbols[entry + 4] & 0xF == 1 {
                let value = Self.u64(symbols, entry + 8)
                if value != 0, matches(Self.string(names, Self.u32(symbols, entry))) { found.append(value) }
            }
        }
        return found
    }

    /// The link-time address range of the loaded section named `name`; nil when there is none.
    func loadedRange(ofSection name: String) -> Range<UInt64>? {
        guard let names = bytes(of: sections[namesIndex]) else { return nil }
        for section in sections where section.address != 0 && Self.string(names, section.name) == name {
            return section.address..<section.address &+ section.size
        }
        return nil
    }
}
