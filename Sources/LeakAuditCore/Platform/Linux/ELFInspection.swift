import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

extension TargetKind {
    /// Reads the ELF headers of `path`: the dynamic section's DT_NEEDED names, and whether any
    /// section is Swift metadata (`swift5_*`).
    static func inspect(path: String) -> TargetKind {
        // The path may come from the target: a FIFO must not block open(), nor a device be read.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return .other }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return .other }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got == count ? bytes : nil
        }
        guard let header = read(0, 64), header[0...3] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1 else {
            return .other  // not ELF, or not 64-bit little-endian
        }
        func u16(_ bytes: [UInt8], _ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<4).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        let sectionOffset = u64(header, 0x28)
        let sectionSize = u16(header, 0x3A)
        let sectionCount = u16(header, 0x3C)
        let namesIndex = u16(header, 0x3E)
        guard sectionSize == 64, sectionCount > 0, sectionCount < 65_280, namesIndex < sectionCount,
            let table = read(sectionOffset, sectionSize * sectionCount)
        else { return .other }
        struct Section {
            var name: UInt64, type: UInt64, offset: UInt64, size: UInt64, link: Int
        }
        let sections = (0..<sectionCount).map { index -> Section in
            let base = index * sectionSize
            return Section(
                name: u32(table, base), type: u32(table, base + 4), offset: u64(table, base + 0x18),
                size: u64(table, base + 0x20), link: Int(u32(table, base + 0x28)))
        }
        func strings(_ section: Section) -> [UInt8]? {
            section.size < 64 << 20 ? read(section.offset, Int(section.size)) : nil
        }
        func string(_ table: [UInt8], _ at: UInt64) -> String {
            guard at < table.count else { return "" }
            let bytes = table[Int(at)...].prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
        var hasSwift = false
        if let names = strings(sections[namesIndex]) {
            hasSwift = sections.contains { string(names, $0.name).hasPrefix("swift5_") }
        }
        var needsSwiftRuntime = false
        var needsTestingLibrary = false
        for section in sections where section.type == 6 && section.link < sections.count {  // SHT_DYNAMIC
            guard section.size < 1 << 20, let entries = read(section.offset, Int(section.size)),
                let names = strings(sections[section.link])
            else { continue }
            for entry in stride(from: 0, to: entries.count - 15, by: 16) where u64(entries, entry) == 1 {  // DT_NEEDED
                let needed = string(names, u64(entries, entry + 8))
                if needed.hasPrefix("libswiftCore.so") { needsSwiftRuntime = true }
                if needed.hasPrefix("libXCTest.so") || needed.hasPrefix("libTesting.so") { needsTestingLibrary = true }
            }
        }
        if needsSwiftRuntime { return needsTestingLibrary ? .swiftTestBundle : .dynamicSwift }
        return hasSwift ? .staticSwift : .notSwift
    }
}
