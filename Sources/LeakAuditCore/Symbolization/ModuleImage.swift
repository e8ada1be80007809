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

/// One frame of a symbolized return address.
///
/// `Symbolizer.symbolize(_:)` returns inlined frames first (innermost first) and the physical
/// frame last.
public struct SymbolizedFrame: Sendable, Hashable {
    /// The return address as captured (not the call instruction looked up).
    public var address: UInt64
    /// The module's path; nil when the address lies in no known module.
    public var module: String?
    /// `address - loadBias` of the module; nil when the address lies in no known module.
    public var moduleOffset: UInt64?
    /// The demangled Swift name, or the C symbol name, or nil when unknown.
    public var function: String?
    /// The source file path from DWARF; nil without debug information.
    public var file: String?
    /// The 1-based source line; nil when unknown.
    public var line: Int?
    /// The 1-based source column; nil when unknown.
    public var column: Int?
    /// Whether this frame was inlined into the frame that follows it.
    public var inlined: Bool

    /// Creates a frame from its parts.
    public init(
        address: UInt64,
        module: String? = nil,
        moduleOffset: UInt64? = nil,
        function: String? = nil,
        file: String? = nil,
        line: Int? = nil,
        column: Int? = nil,
        inlined: Bool = false
    ) {
        self.address = address
        self.module = module
        self.moduleOffset = moduleOffset
        self.function = function
        self.file = file
        self.line = line
        self.column = column
        self.inlined = inlined
    }
}
