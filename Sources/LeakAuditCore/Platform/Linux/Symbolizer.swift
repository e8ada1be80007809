import CLibDW
import LeakAuditModel

/// Turns return addresses captured in a target into functions, files, lines and inlined frames,
/// out of the target's process, with elfutils.
///
/// Each module is opened on first use and indexed once (symbol table, compile units, then the
/// functions of each compile unit as they are needed); answers are cached per address. A module
/// that cannot be opened degrades to module + offset and leaves a reason in `diagnostics`.
///
/// Not thread-safe: use one instance from one thread (or task) at a time.
public final class Symbolizer: AddressSymbolizer {
    /// The modules, sorted by start address.
    private let modules: [ModuleImage]
    /// Opened modules by index into `modules`; nil for a module that failed to open.
    private var resolvers: [Int: ModuleResolver?] = [:]
    private var cache: [UInt64: [SymbolizedFrame]] = [:]
    private var openFailures: [SymbolizerError] = []
    private let separateDebugInfo: Bool
    /// libdw's functions, loaded by the first module opened.
    private let libdw: () -> Result<leakaudit_libdw, SymbolizerError>
    /// Where modules are opened when they are shared with other symbolizers; nil: opened here.
    private let shared: SharedModuleResolvers?

    /// Creates a symbolizer for a target whose loaded images were `modules`.
    ///
    /// Nothing is opened until an address in a module is symbolized.
    ///
    /// - Parameters:
    ///   - modules: The target's loaded images, as recorded while it ran.
    ///   - separateDebugInfo: Whether to also read DWARF installed apart from a module's file
    ///     (`/usr/lib/debug` by build-id or `.gnu_debuglink`, as `-dbg` packages install it, or
    ///     debuginfod when `DEBUGINFOD_URLS` is set). Off by default: system libraries read best
    ///     by symbol name, and their detached DWARF costs 100–200 µs per address. DWARF inside
    ///     the module's own file (Swift debug builds) is always read.
    public convenience init(modules: [ModuleImage], separateDebugInfo: Bool = false) {
        self.init(modules: modules, separateDebugInfo: separateDebugInfo, libdw: { LibDW.loaded })
    }

    /// Creates a symbolizer that opens modules with the libdw that `libdw` gives (tests: one that
    /// cannot be loaded), or from `shared` when given.
    init(
        modules: [ModuleImage], separateDebugInfo: Bool,
        libdw: @escaping () -> Result<leakaudit_libdw, SymbolizerError>, shared: SharedModuleResolvers? = nil
    ) {
        self.modules = modules.sorted { ($0.start, $0.end) < ($1.start, $1.end) }
        self.separateDebugInfo = separateDebugInfo
        self.libdw = libdw
        self.shared = shared
    }

    /// Why some frames have less detail than they could: libdw failures met so far, once each.
    public var diagnostics: [SymbolizerError] {
        openFailures
            + resolvers.keys.sorted().compactMap { resolvers[$0] ?? nil }.flatMap(\.diagnostics)
    }

    /// `diagnostics` as lines for the report.
    var problems: [String] { diagnostics.map(\.description) }

    /// Resolves one return address into frames, innermost inlined frame first and the physical
    /// frame last.
    ///
    /// The call instruction (`returnAddress - 1`) is looked up; every frame reports
    /// `returnAddress` as its `address`. Never returns an empty array: an address without debug
    /// information or symbol falls back to module + offset, and one outside every module to the
    /// bare address.
    public func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame] {
        if let frames = cache[returnAddress] { return frames }
        let frames = resolve(returnAddress)
        cache[returnAddress] = frames
        return frames
    }

    /// The storage of every `let` global and `static let` of a class type in the modules
    /// (`ModuleResolver.immutableClassGlobals`), at the process's addresses.
    func immutableClassGlobals() -> [Range<UInt64>] {
        modules.indices.flatMap { index in
            (resolver(for: index)?.immutableClassGlobals() ?? []).map {
                ($0.lowerBound &+ modules[index].loadBias)..<($0.upperBound &+ modules[index].loadBias)
            }
        }
    }

    /// The variable whose storage holds `address` (a global or static), as its data symbol names
    /// it, demangled; nil when no symbol covers it.
    public func variable(at address: UInt64) -> String? {
        guard let moduleIndex = moduleIndex(containing: address) else { return nil }
        return resolver(for: moduleIndex)?.variableSymbol(containing: address &- modules[moduleIndex].loadBias)
    }

    /// The parameters (a closure's captures among them) of the closure whose code, forwarder or
    /// async function pointer is at `address`, in order, with their types' names.
    public func closureParameters(at address: UInt64) -> [(name: String, type: String?)] {
        guard let moduleIndex = moduleIndex(containing: address) else { return [] }
        return resolver(for: moduleIndex)?.closureParameters(at: address &- modules[moduleIndex].loadBias) ?? []
    }

    private func resolve(_ returnAddress: UInt64) -> [SymbolizedFrame] {
        // The return address may already belong to the next function (or module) when the call
        // was the last instruction.
        let pc = returnAddress > 0 ? returnAddress - 1 : 0
        guard let moduleIndex = moduleIndex(containing: pc) else {
            return [SymbolizedFrame(address: returnAddress)]
        }
        let image = modules[moduleIndex]
        let fallback = SymbolizedFrame(
            address: returnAddress,
            module: image.path,
            moduleOffset: returnAddress &- image.loadBias
        )
        guard let resolver = resolver(for: moduleIndex), let resolution = resolver.resolve(pc &- image.loadBias),
            !resolution.frames.isEmpty
        else {
            return [fallback]
        }
        return resolution.frames.map { frame in
            var symbolized = fallback
            symbolized.function = frame.function
            symbolized.file = frame.location?.file
            symbolized.line = frame.location?.line
            symbolized.column = frame.location?.column
            symbolized.inlined = frame.inlined
            return symbolized
        }
    }

    /// The module holding `address`, preferring the one that starts last when ranges overlap.
    private func moduleIndex(containing address: UInt64) -> Int? {
        var lower = 0
        var upper = modules.count
        while lower < upper {
            let middle = (lower + upper) / 2
            if modules[middle].start <= address { lower = middle + 1 } else { upper = middle }
        }
        return modules[..<lower].lastIndex { $0.contains(address) }
    }

    private func resolver(for moduleIndex: Int) -> ModuleResolver? {
        if let opened = resolvers[moduleIndex] { return opened }
        let image = modules[moduleIndex]
        let result =
            shared?.resolver(for: image, separateDebugInfo: separateDebugInfo, libdw: libdw)
            ?? Result { () throws(SymbolizerError) in
                try ModuleResolver.open(image, separateDebugInfo: separateDebugInfo, dw: libdw().get())
            }
        switch result {
        case .success(let resolver):
            resolvers[moduleIndex] = .some(resolver)
            return resolver
        case .failure(let error):
            // Once each: libdw missing fails every module alike.
            if !openFailures.contains(error) { openFailures.append(error) }
            resolvers[moduleIndex] = .some(nil)
            return nil
        }
    }
}
