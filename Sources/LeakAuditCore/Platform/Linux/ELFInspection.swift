import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

extension TargetKind {
    /// Reads the ELF headers of `path`: the dynamic section's DT_NEEDED names, and whether any
    /// section is Swift metadata (`swift5_*`); `.other` when it is no ELF file.
    static func inspect(path: String) -> TargetKind {
        guard let file = ELFFile(path: path) else { return .other }
        let sections = file.sections
        var hasSwift = false
        if let names = file.bytes(of: sections[file.namesIndex]) {
            hasSwift = sections.contains { ELFFile.string(names, $0.name).hasPrefix("swift5_") }
        }
        var needsSwiftRuntime = false
        var needsTestingLibrary = false
        for section in sections where section.type == ELFFile.dynamicSection && section.link < sections.count {
            guard let entries = file.bytes(of: section, limit: 1 << 20), let names = file.bytes(of: sections[section.link])
            else { continue }
            for entry in stride(from: 0, to: entries.count - 15, by: 16) where ELFFile.u64(entries, entry) == 1 {  // DT_NEEDED
                let needed = ELFFile.string(names, ELFFile.u64(entries, entry + 8))
                if needed.hasPrefix("libswiftCore.so") { needsSwiftRuntime = true }
                if needed.hasPrefix("libXCTest.so") || needed.hasPrefix("libTesting.so") { needsTestingLibrary = true }
            }
        }
        if needsSwiftRuntime { return needsTestingLibrary ? .swiftTestBundle : .dynamicSwift }
        return hasSwift ? .staticSwift : .notSwift
    }
}
