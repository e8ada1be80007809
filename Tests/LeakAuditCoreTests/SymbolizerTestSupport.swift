import Foundation
import LeakAuditCore

/// The ELF images mapped into this test process, as the capture side would record them.
///
/// Read from /proc/self/maps and the images' own headers in memory (Glibc's Swift overlay
/// does not expose dl_iterate_phdr).
func loadedModuleImages() throws -> [ModuleImage] {
    // String(contentsOfFile:) stops after the first read of this size-less file.
    let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps"))
    defer { try? handle.close() }
    let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
    var images: [ModuleImage] = []
    var seen: Set<String> = []
    for line in maps.split(separator: "\n") {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count == 6, fields[2] == "00000000" else { continue }
        let path = fields[5].trimmingCharacters(in: .whitespaces)
        guard path.hasPrefix("/"), !path.hasSuffix("(deleted)"), !seen.contains(path) else {
            continue
        }
        let range = fields[0].split(separator: "-")
        guard let mapStart = UInt64(range[0], radix: 16),
            let header = UnsafeRawPointer(bitPattern: UInt(mapStart)),
            let image = moduleImage(path: path, header: header, mapStart: mapStart)
        else { continue }
        seen.insert(path)
        images.append(image)
    }
    return images
}

/// Parses the ELF header and program headers mapped at `header`.
private func moduleImage(path: String, header: UnsafeRawPointer, mapStart: UInt64) -> ModuleImage? {
    guard header.load(as: UInt32.self) == 0x464c_457f else { return nil }  // "\u{7f}ELF"
    let programHeaderOffset = Int(header.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
    let programHeaderSize = Int(header.loadUnaligned(fromByteOffset: 54, as: UInt16.self))
    let programHeaderCount = Int(header.loadUnaligned(fromByteOffset: 56, as: UInt16.self))
    var loadBias: UInt64?
    var lowest = UInt64.max
    var highest: UInt64 = 0
    var notes: [(vaddr: UInt64, size: UInt64)] = []
    for index in 0..<programHeaderCount {
        let entry = header + programHeaderOffset + index * programHeaderSize
        let type = entry.loadUnaligned(as: UInt32.self)
        let vaddr = entry.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
        let fileSize = entry.loadUnaligned(fromByteOffset: 32, as: UInt64.self)
        let memorySize = entry.loadUnaligned(fromByteOffset: 40, as: UInt64.self)
        switch type {
        case 1:  // PT_LOAD
            if loadBias == nil { loadBias = mapStart &- (vaddr & ~0xfff) }
            lowest = min(lowest, vaddr)
            highest = max(highest, vaddr + memorySize)
        case 4:  // PT_NOTE
            notes.append((vaddr, fileSize))
        default:
            break
        }
    }
    guard let loadBias else { return nil }
    var buildID: [UInt8] = []
    for note in notes where buildID.isEmpty {
        buildID = gnuBuildID(
            inNotesAt: UnsafeRawPointer(bitPattern: UInt(loadBias &+ note.vaddr))!,
            size: Int(note.size)
        )
    }
    return ModuleImage(
        path: path,
        buildID: buildID,
        loadBias: loadBias,
        start: loadBias &+ lowest,
        end: loadBias &+ highest
    )
}

/// The descriptor of the NT_GNU_BUILD_ID note among the notes at `notes`.
private func gnuBuildID(inNotesAt notes: UnsafeRawPointer, size: Int) -> [UInt8] {
    func aligned4(_ value: Int) -> Int { (value + 3) & ~3 }
    var offset = 0
    while offset + 12 <= size {
        let nameSize = Int(notes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        let descriptorSize = Int(notes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        let type = notes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
        let name = notes + offset + 12
        let descriptor = name + aligned4(nameSize)
        // NT_GNU_BUILD_ID, owner "GNU\0"
        if type == 3, nameSize == 4, name.loadUnaligned(as: UInt32.self) == 0x0055_4e47 {
            return Array(UnsafeRawBufferPointer(start: descriptor, count: descriptorSize))
        }
        offset += 12 + aligned4(nameSize) + aligned4(descriptorSize)
    }
    return []
}

/// The return addresses of the calling thread, from the caller of this function outwards
/// (with Foundation's own frames first).
@inline(never)
func recordReturnAddresses() -> [UInt64] {
    Thread.callStackReturnAddresses.map { $0.uint64Value }  // recordReturnAddresses-body
}
