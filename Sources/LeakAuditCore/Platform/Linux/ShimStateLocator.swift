import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where leak-audit's own shim keeps its state in a process: `leakaudit_process_state_v9`, the
/// one global every copy of the shim exports (CLeakMonitorShim's process_state.c), about 10 MB of
/// tables (stacks, types) that hold no reference to an object: stack frames are stored
/// complemented, types by their metadata. A heap walk neither copies nor searches it.
enum ShimStateLocator {
    /// The exported name of the shim's state, and of what each image's copy of it is found by.
    static let symbolName = "leakaudit_process_state_v9"

    /// An image file, as a mapping names it.
    private struct FileKey: Hashable {
        var path: String
        var inode: UInt64
    }
    /// What an image file's dynamic symbols say of the state: its link-time address and size, and
    /// the link-time range of the file's segments, to place it and to bound it.
    private struct Definition {
        var address: UInt64
        var size: UInt64
        var lowestSegment: UInt64
        var highestSegment: UInt64
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
            guard placed.insert(key).inserted, let definition = definition(of: key),
                let pages = statePages(
                    imageAt: region.start, address: definition.address, size: definition.size,
                    segments: definition.lowestSegment..<definition.highestSegment, pageSize: pageSize)
            else { continue }
            ranges.append(pages)
        }
        return ranges.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// The whole pages of a state that the image file says lies at link-time `address` and spans
    /// `size` bytes, in an image whose first page is mapped at `start` and whose segments span
    /// `segments` at link time; nil when no whole page is the state's. The file says where the
    /// state is and how large: a file made to lie (a symbol of that name past the address space,
    /// or larger than the image) must neither trap nor hide memory outside the image's own
    /// segments from the walk.
    static func statePages(
        imageAt start: UInt64, address: UInt64, size: UInt64, segments: Range<UInt64>, pageSize: UInt64
    ) -> Range<UInt64>? {
        let bias = start &- segments.lowerBound / pageSize * pageSize
        let imageStart = bias &+ segments.lowerBound
        let imageEnd = bias &+ segments.upperBound
        let state = bias &+ address
        guard imageStart < imageEnd, state >= imageStart, state < imageEnd else { return nil }
        let stateEnd = size < imageEnd - state ? state + size : imageEnd
        let first = (state / pageSize * pageSize).addingReportingOverflow(state % pageSize == 0 ? 0 : pageSize)
        let end = stateEnd / pageSize * pageSize
        return !first.overflow && first.partialValue < end ? first.partialValue..<end : nil
    }

    /// Reads what the image file at `path` says of the state ahead of the walk that needs it: the
    /// walk finds the file by the path and inode its mapping names.
    static func prepare(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        _ = definition(of: FileKey(path: path, inode: UInt64(info.st_ino)))
    }

    private static func definition(of key: FileKey) -> Definition? {
        if let known = definitions.withLock({ $0[key] }) { return known }
        let found = readDefinition(key)
        definitions.withLock { $0[key] = found }
        return found
    }

    private static func readDefinition(_ key: FileKey) -> Definition? {
        guard let file = ELFFile(path: key.path, inode: key.inode), let (address, size) = file.dynamicDefinition(of: symbolName),
            let headers = ProgramHeaders(path: key.path, inode: key.inode)
        else { return nil }
        return Definition(
            address: address, size: size, lowestSegment: headers.lowestAddress, highestSegment: headers.highestAddress)
    }
}
