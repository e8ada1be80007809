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
