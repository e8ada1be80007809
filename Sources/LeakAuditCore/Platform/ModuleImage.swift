import LeakAuditModel

/// One loaded ELF image of the target as recorded while it ran.
///
/// The capture side records these from `dl_iterate_phdr` (and `/proc/self/exe` for the main
/// executable); the symbolizer opens `path` afterwards, out of the target's process.
public struct ModuleImage: Sendable, Hashable {
    /// The absolute path of the ELF file.
    public var path: String
    /// The GNU build-id of the file as loaded; empty when unknown.
    ///
    /// When it is not empty, the symbolizer refuses a file on disk whose build-id differs
    /// (the file was rebuilt since the run) and falls back to module + offset.
    public var buildID: [UInt8]
    /// `dlpi_addr`: the difference between runtime and link-time addresses.
    public var loadBias: UInt64
    /// The lowest runtime address of the image's `PT_LOAD` segments.
    public var start: UInt64
    /// One past the highest runtime address of the image's `PT_LOAD` segments.
    public var end: UInt64

    /// Creates a module image from values recorded while the target ran.
    public init(path: String, buildID: [UInt8], loadBias: UInt64, start: UInt64, end: UInt64) {
        self.path = path
        self.buildID = buildID
        self.loadBias = loadBias
        self.start = start
        self.end = end
    }

    /// Whether `address` lies within the image's mapped range.
    public func contains(_ address: UInt64) -> Bool {
        address >= start && address < end
    }
}
