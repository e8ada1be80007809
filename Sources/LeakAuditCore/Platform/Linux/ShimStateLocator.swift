import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where leak-audit's own shim keeps its state in a process: `leakaudit_process_state_v4`, the
/// one global every copy of the shim exports (CLeakMonitorShim's process_state.c), about 10 MB of
/// tables (stacks, types) that hold no reference to an object: stack frames are stored
/// complemented, types by their metadata. A heap walk neither copies nor searches it.
enum ShimStateLocator {
    /// The exported name of the shim's state, and of what each image's copy of it is found by.
    static let symbolName = "leakaudit_process_state_v4"

    /// An image file, as a mapping names it.
    private struct FileKey: Hashable {
        var path: String
        var inode: UInt64
    }
    /// What an image file's dynamic symbols say of the state: its link-time address and size, and
    /// the lowest link-time address of the file's segments, to place it.
    private struct Definition {
        var address: UInt64
        var size: UInt64
        var lowestSegment: UInt64
    }
    /// Each file's definition, or nil when it exports none: read once per file for the life of
    /// leak-audit.
    private static let definitions = Mutex<[FileKey: Definition?]>([:])

    /// The address ranges of the shim's state in the process whose mappings are `regions` (one per
    /// image that exports it), rounded inwards to whole pages: the pages that hold nothing else.
    static func pages(in regions: [ProcessSnapshot.Region]) -> [Range<UInt64>] {
        let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        var ranges: [Range<UInt64>] = []
        var placed = Set<FileKey>()
        // The mapping at offset 0 holds an image's lowest segment, page-aligned down (as
        // ProcessInspection.modules places images).
        for region in regions where region.fileOffset == 0 && region.path.hasPrefix("/") && region.inode != 0 {
            let key = FileKey(path: region.path, inode: region.inode)
            guard placed.insert(key).inserted, let definition = definition(of: key) else { continue }
            let bias = region.start &- definition.lowestSegment / pageSize * pageSize
            let start = bias &+ definition.address
            let first = (start + pageSize - 1) / pageSize * pageSize
            let end = (start &+ definition.size) / pageSize * pageSize
            if first < end { ranges.append(first..<end) }
        }
        return ranges.sorted { $0.lowerBound < $1.lowerBound }
    }

    private static func definition(of key: FileKey) -> Definition? {
        if let known = definitions.withLock({ $0[key] }) { return known }
        let found = readDefinition(key)
        definitions.withLock { $0[key] = found }
        return found
    }

    private static func readDefinition(_ key: FileKey) -> Definition? {
        let descriptor = open(key.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, UInt64(info.st_ino) == key.inode else {
            return nil
        }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            guard count >= 0, count < 256 << 20 else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got == count ? bytes : nil
        }
        func u16(_ bytes: [UInt8], _ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<4).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        guard let header = read(0, 64), header[0...3] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1 else {
            return nil
        }
        // The dynamic symbol table and its strings.
        let sectionOffset = u64(header, 0x28)
        let sectionSize = u16(header, 0x3A)
        let sectionCount = u16(header, 0x3C)
        guard sectionSize == 64, sectionCount > 0, sectionCount < 65_280,
            let table = read(sectionOffset, sectionSize * sectionCount)
        else { return nil }
        let name = Array(symbolName.utf8) + [0]
        for index in 0..<sectionCount where u32(table, index * sectionSize + 4) == 11 {  // SHT_DYNSYM
            let base = index * sectionSize
            let link = Int(u32(table, base + 0x28))
            guard link < sectionCount,
                let strings = read(u64(table, link * sectionSize + 0x18), Int(u64(table, link * sectionSize + 0x20)))
            else { continue }
            // Every offset the name can be read at (a string table may share a longer name's tail).
            var offsets = Set<UInt64>()
            var position = 0
            while position + name.count <= strings.count {
                if strings[position] == name[0], strings[position..<position + name.count].elementsEqual(name) {
                    offsets.insert(UInt64(position))
                }
                position += 1
            }
            guard !offsets.isEmpty, let symbols = read(u64(table, base + 0x18), Int(u64(table, base + 0x20))) else {
                continue
            }
            for symbol in stride(from: 0, to: symbols.count - 23, by: 24)
            where offsets.contains(u32(symbols, symbol)) && u16(symbols, symbol + 6) != 0 {  // defined here
                guard let headers = ProgramHeaders(path: key.path, inode: key.inode) else { return nil }
                return Definition(
                    address: u64(symbols, symbol + 8), size: u64(symbols, symbol + 16),
                    lowestSegment: headers.lowestAddress)
            }
        }
        return nil
    }
}
