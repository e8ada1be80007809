import CLibDW
import LeakAuditFiles
import LeakAuditModel
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension Symbolizer {
    /// One module opened with libdw, with the indexes that make repeated lookups cheap.
    ///
    /// It owns a `Dwfl` session holding just this module, so that a missing, unreadable or
    /// overlapping module cannot disturb the others. Every libdw session, module and DIE stays in this
    /// type. It works at the file's link-time addresses (its module reported at bias 0), so that
    /// every process that loaded the file can share it (`SharedModuleResolvers`): a symbolizer
    /// subtracts its image's load bias.
    /// Its lookups take its lock, one at a time: every symbolizer of the file's processes shares
    /// it, and a report's stacks are symbolized on another thread while the reader's answers
    /// questions with another symbolizer (`PreparedSymbolizers`).
    final class ModuleResolver: @unchecked Sendable {
        /// The physical frame and its inlined callees at one address, before addresses and
        /// module are attached.
        struct Resolution {
            /// Innermost first, physical frame last.
            var frames: [(function: String?, location: SourceLocation?, inlined: Bool)]
        }

        /// A file, line and column from DWARF.
        struct SourceLocation {
            var file: String?
            var line: Int?
            var column: Int?
        }

        /// A function or data symbol of the ELF symbol table, at link-time addresses.
        private struct ELFSymbol {
            var address: UInt64
            var size: UInt64
            /// 2 global, 1 weak, 0 local: the name to keep when several share an address.
            var rank: UInt8
            /// Owned by the module's `Elf`, valid as long as `dwfl` is.
            var name: UnsafePointer<CChar>
        }

        /// An address range of a DIE, at DWARF (link-time) addresses.
        private struct DIERange {
            var low: UInt64
            var high: UInt64
            /// Index into `compileUnits`, or into a compile unit's `functions`.
            var index: Int
        }

        /// A sorted list of possibly nested ranges with a running maximum of their ends, so
        /// that the innermost range holding an address is found by one binary search.
        private struct RangeIndex {
            var ranges: [DIERange] = []
            var maxHighSoFar: [UInt64] = []

            init(_ unsorted: [DIERange]) {
                ranges = unsorted.sorted { ($0.low, $1.high) < ($1.low, $0.high) }
                var running: UInt64 = 0
                maxHighSoFar.reserveCapacity(ranges.count)
                for range in ranges {
                    running = max(running, range.high)
                    maxHighSoFar.append(running)
                }
            }

            /// The range that starts last among those holding `pc`: the innermost one when
            /// ranges nest.
            func lookup(_ pc: UInt64) -> DIERange? {
                var lower = 0
                var upper = ranges.count
                while lower < upper {
                    let middle = (lower + upper) / 2
                    if ranges[middle].low <= pc { lower = middle + 1 } else { upper = middle }
                }
                var candidate = lower - 1
                while candidate >= 0, maxHighSoFar[candidate] > pc {
                    if ranges[candidate].high > pc {
                        return ranges[candidate]
                    }
                    candidate -= 1
                }
                return nil
            }
        }

        /// A compile unit and, once needed, the functions it defines.
        private struct CompileUnit {
            var die: Dwarf_Die
            var functionDIEs: [Dwarf_Die]? = nil
            var functionIndex: RangeIndex? = nil
        }

        /// libdw's functions (`LibDW`).
        private let dw: leakaudit_libdw
        let path: String
        private let dwfl: OpaquePointer
        private let module: OpaquePointer
        /// Kept alive for `dwfl`, which holds on to the pointer.
        private let callbacks: UnsafeMutablePointer<Dwfl_Callbacks>

        private var symbols: [ELFSymbol]? = nil
        /// Data symbols (variables), sorted by address, built on first use.
        private var variables: [ELFSymbol]? = nil
        /// Function symbols by name, built on first use.
        private var symbolAddresses: [String: UInt64]? = nil
        private var compileUnits: [CompileUnit]? = nil
        private var compileUnitIndex = RangeIndex([])
        /// `immutableClassGlobals()`, built on first use.
        private var immutableGlobals: [Range<UInt64>]? = nil
        /// Link-time address minus DWARF address (0 but for a file whose DWARF is apart).
        private var dwarfBias: UInt64 = 0

        /// Failures that degraded this module's answers, reported once each, in the order of their
        /// descriptions (not of the lookups that met them, which threads may make in any order).
        var diagnostics: [SymbolizerError] {
            serial.withLock { _ in recordedDiagnostics }.sorted { $0.description < $1.description }
        }
        private var recordedDiagnostics: [SymbolizerError] = []
        /// Held by each lookup (`alone`), whose indexes are built on first use.
        private let serial = Mutex(())

        /// `body`'s result, with no other lookup of this module under way.
        private func alone<Result>(_ body: () -> Result) -> Result {
            serial.withLock { _ in body() }
        }

        /// Opens `image.path` offline, at link-time addresses.
        ///
        /// - Parameters:
        ///   - separateDebugInfo: Whether to look for DWARF outside the file too
        ///     (`dwfl_standard_find_debuginfo`: /usr/lib/debug by build-id, `.gnu_debuglink`).
        ///   - dw: libdw's functions (`LibDW`).
        /// - Throws: `SymbolizerError` naming the libdw call that failed, or `.buildIDMismatch`.
        static func open(
            _ image: ModuleImage,
            separateDebugInfo: Bool,
            dw: leakaudit_libdw
        ) throws(SymbolizerError) -> ModuleResolver {
            let callbacks = UnsafeMutablePointer<Dwfl_Callbacks>.allocate(capacity: 1)
            var table = Dwfl_Callbacks()
            table.find_elf = dw.dwfl_build_id_find_elf
            table.section_address = dw.dwfl_offline_section_address
            table.debuginfo_path = nil
            if separateDebugInfo {
                table.find_debuginfo = dw.dwfl_standard_find_debuginfo
            } else {
                table.find_debuginfo = findNoSeparateDebugInfo
            }
            callbacks.initialize(to: table)
            guard let dwfl = dw.dwfl_begin(callbacks) else {
                callbacks.deallocate()
                throw .dwflBegin(message: dw.lastDwflError())
            }
            func fail(_ error: SymbolizerError) -> SymbolizerError {
                dw.dwfl_end(dwfl)
                callbacks.deallocate()
                return error
            }
            let name = image.path.split(separator: "/").last.map(String.init) ?? image.path
            // The path comes from the target: opened without waiting (a FIFO would block open()
            // forever) and read only if it is a regular file.
            let descriptor = Glibc.open(image.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            guard descriptor >= 0 else { throw fail(.cannotOpen(path: image.path, message: systemErrorMessage(errno))) }
            var info = stat()
            guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                close(descriptor)
                throw fail(.notARegularFile(path: image.path))
            }
            // add_p_vaddr = true makes libdwfl take 0 as the bias itself (link-time addresses);
            // with false it would take it as the first segment's address, which differs when that
            // segment's p_vaddr is not 0. On success libdwfl owns the descriptor.
            guard let module = dw.dwfl_report_elf(dwfl, name, image.path, descriptor, 0, true)
            else {
                close(descriptor)
                throw fail(.dwflReportElf(path: image.path, message: dw.lastDwflError()))
            }
            guard dw.dwfl_report_end(dwfl, nil, nil) == 0 else {
                throw fail(.dwflReportEnd(path: image.path, message: dw.lastDwflError()))
            }
            var elfBias: GElf_Addr = 0
            guard dw.dwfl_module_getelf(module, &elfBias) != nil else {
                throw fail(.dwflModuleGetelf(path: image.path, message: dw.lastDwflError()))
            }
            if !image.buildID.isEmpty {
                var bits: UnsafePointer<UInt8>? = nil
                var vaddr: GElf_Addr = 0
                let length = dw.dwfl_module_build_id(module, &bits, &vaddr)
                guard length >= 0 else {
                    throw fail(.dwflModuleBuildID(path: image.path, message: dw.lastDwflError()))
                }
                let found =
                    bits.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
                if found != image.buildID {
                    throw fail(
                        .buildIDMismatch(
                            path: image.path,
                            recorded: hex(image.buildID),
                            found: hex(found)
                        )
                    )
                }
            }
            return ModuleResolver(
                dw: dw,
                path: image.path,
                dwfl: dwfl,
                module: module,
                callbacks: callbacks
            )
        }

        private init(
            dw: leakaudit_libdw,
            path: String,
            dwfl: OpaquePointer,
            module: OpaquePointer,
            callbacks: UnsafeMutablePointer<Dwfl_Callbacks>
        ) {
            self.dw = dw
            self.path = path
            self.dwfl = dwfl
            self.module = module
            self.callbacks = callbacks
        }

        deinit {
            dw.dwfl_end(dwfl)
            callbacks.deallocate()
        }

        /// Builds now the indexes that lookups build on first use: the function and data symbol
        /// tables and the compile units' ranges (each compile unit's functions stay on demand).
        func prepare() { alone { prepareAlone() } }

        private func prepareAlone() {
            _ = loadSymbols()
            _ = loadVariables()
            if compileUnits == nil { loadCompileUnits() }
        }

        // MARK: - Lookup

        /// Resolves the instruction at link-time address `pc` (a return address minus one, less the
        /// load bias).
        ///
        /// Returns nil when neither DWARF nor the symbol table knows the address.
        func resolve(_ pc: UInt64) -> Resolution? { alone { resolveAlone(pc) } }

        private func resolveAlone(_ pc: UInt64) -> Resolution? {
            guard let (unitIndex, dwarfPC) = compileUnit(containing: pc) else {
                return functionSymbol(containing: pc).map { Resolution(frames: [($0, nil, false)]) }
            }
            var cuDIE = compileUnits?[unitIndex].die ?? Dwarf_Die()
            let location = lineTableLocation(cuDIE: &cuDIE, dwarfPC: dwarfPC)
            guard let function = functionDIE(inUnit: unitIndex, containing: dwarfPC) else {
                return Resolution(frames: [(functionSymbol(containing: pc), location, false)])
            }
            var chain = inlineChain(from: function, dwarfPC: dwarfPC)
            var frames: [(function: String?, location: SourceLocation?, inlined: Bool)] = []
            var callerLocation = location
            for index in chain.indices.reversed() {
                let isInlined = index != chain.startIndex
                var name = functionName(&chain[index])
                if !isInlined, name == nil { name = functionSymbol(containing: pc) }
                frames.append((name, callerLocation, isInlined))
                if isInlined {
                    callerLocation = callSite(of: &chain[index], cuDIE: &cuDIE)
                }
            }
            return Resolution(frames: frames)
        }

        // MARK: - Symbol table

        /// The name of the function symbol whose extent holds `pc`, demangled when Swift.
        private func functionSymbol(containing pc: UInt64) -> String? {
            symbol(containing: pc, in: loadSymbols())
        }

        /// The name of the variable (a data symbol) whose extent holds link-time address `address`,
        /// demangled when Swift; nil when no sized data symbol covers it.
        func variableSymbol(containing address: UInt64) -> String? { alone { variableSymbolAlone(containing: address) } }

        private func variableSymbolAlone(containing address: UInt64) -> String? {
            return symbol(containing: address, in: loadVariables())
        }

        private func symbol(containing pc: UInt64, in symbols: [ELFSymbol]) -> String? {
            mangledSymbol(containing: pc, in: symbols).map { demangleSymbol($0) ?? $0 }
        }

        /// The symbol's own (mangled) name whose extent holds `pc`.
        private func mangledSymbol(containing pc: UInt64, in symbols: [ELFSymbol]) -> String? {
            var lower = 0
            var upper = symbols.count
            while lower < upper {
                let middle = (lower + upper) / 2
                if symbols[middle].address <= pc { lower = middle + 1 } else { upper = middle }
            }
            // A few symbols back cover a symbol nested in another or one without a size.
            var candidate = lower - 1
            while candidate >= 0, candidate >= lower - 4 {
                let symbol = symbols[candidate]
                if pc < symbol.address &+ symbol.size { return String(cString: symbol.name) }
                candidate -= 1
            }
            return nil
        }

        /// The parameters of the closure whose code, partial-apply forwarder or async function
        /// pointer is at link-time address `address`, in order: for a closure, its explicit
        /// parameters then its captures, named as the source names them. Empty when the module has
        /// no DWARF for it.
        func closureParameters(at address: UInt64) -> [(name: String, type: String?)] {
            alone { closureParametersAlone(at: address) }
        }

        private func closureParametersAlone(at address: UInt64) -> [(name: String, type: String?)] {
            guard
                let mangled = mangledSymbol(containing: address, in: loadSymbols())
                    ?? mangledSymbol(containing: address, in: loadVariables())
            else { return [] }
            // `…TA` is a partial-apply forwarder, `…Tu` an async function pointer: the closure is
            // the symbol without them.
            var closure = mangled
            for suffix in ["TATu", "TA", "Tu"] where closure.hasSuffix(suffix) {
                closure.removeLast(suffix.count)
                break
            }
            guard let target = closure == mangled ? address : functionAddress(named: closure),
                let (unitIndex, dwarfPC) = compileUnit(containing: target),
                var function = functionDIE(inUnit: unitIndex, containing: dwarfPC)
            else { return [] }
            var parameters: [(name: String, type: String?)] = []
            forEachChild(of: &function) { child in
                guard Int(dw.dwarf_tag(&child)) == DW_TAG_formal_parameter else { return }
                var attribute = Dwarf_Attribute()
                guard dw.dwarf_attr_integrate(&child, UInt32(DW_AT_name), &attribute) != nil,
                    let name = dw.dwarf_formstring(&attribute)
                else { return }
                parameters.append((String(cString: name), typeName(of: child)))
            }
            return parameters
        }

        /// The storage of each `let` global and `static let` of a class type that this module's
        /// DWARF describes, as link-time extents: the one word there holds a strong reference that
        /// no code can replace once it is set, so nothing the process does can release what it
        /// holds. A `let` has type `const T` in DWARF (`DW_TAG_const_type`), a `var` plain `T`; a
        /// class's type is a structure whose linkage name ends with `CD` (an `unowned let` goes
        /// through a typedef first, a struct's ends with `VD`, an optional's and a generic
        /// class's with `GD`: none is taken). Found by their linkage names among the data
        /// symbols; empty without DWARF.
        func immutableClassGlobals() -> [Range<UInt64>] { alone { immutableClassGlobalsAlone() } }

        private func immutableClassGlobalsAlone() -> [Range<UInt64>] {
            if let immutableGlobals { return immutableGlobals }
            if compileUnits == nil { loadCompileUnits() }
            var names: Set<String> = []
            // Swift puts a file's globals and statics in its module's DIE, a child of the unit.
            func collect(in parent: inout Dwarf_Die, depth: Int) {
                forEachChild(of: &parent) { child in
                    let tag = Int(dw.dwarf_tag(&child))
                    if tag == DW_TAG_module || tag == DW_TAG_namespace {
                        if depth < 4 { collect(in: &child, depth: depth + 1) }
                    } else if tag == DW_TAG_variable, isImmutableClassReference(child),
                        let name = string(DW_AT_linkage_name, of: &child)
                    {
                        names.insert(name)
                    }
                }
            }
            for unit in compileUnits ?? [] {
                var die = unit.die
                collect(in: &die, depth: 0)
            }
            var extents: [Range<UInt64>] = []
            if !names.isEmpty {
                for symbol in loadVariables()
                where symbol.size > 0 && Self.namesVariableStorage(symbol.name) && names.contains(String(cString: symbol.name)) {
                    extents.append(symbol.address..<(symbol.address &+ symbol.size))
                }
            }
            immutableGlobals = extents
            return extents
        }

        /// Whether the mangled data symbol `name` can be a variable's storage (`…vp`, a static's
        /// `…vpZ`): read before the name is made a string, since a test bundle has tens of
        /// thousands of data symbols, most of them metadata.
        private static func namesVariableStorage(_ name: UnsafePointer<CChar>) -> Bool {
            let length = strlen(name)
            guard length > 4 else { return false }
            let end = name[length - 1] == CChar(UInt8(ascii: "Z")) ? length - 1 : length
            return name[end - 1] == CChar(UInt8(ascii: "p")) && name[end - 2] == CChar(UInt8(ascii: "v"))
        }

        /// Whether variable `die`'s type is `const` of a class type itself (`immutableClassGlobals`).
        private func isImmutableClassReference(_ die: Dwarf_Die) -> Bool {
            var variable = die
            var attribute = Dwarf_Attribute()
            var constType = Dwarf_Die()
            var type = Dwarf_Die()
            guard dw.dwarf_attr_integrate(&variable, UInt32(DW_AT_type), &attribute) != nil,
                dw.dwarf_formref_die(&attribute, &constType) != nil, Int(dw.dwarf_tag(&constType)) == DW_TAG_const_type,
                dw.dwarf_attr_integrate(&constType, UInt32(DW_AT_type), &attribute) != nil,
                dw.dwarf_formref_die(&attribute, &type) != nil
            else { return false }
            let tag = Int(dw.dwarf_tag(&type))
            guard tag == DW_TAG_structure_type || tag == DW_TAG_class_type,
                let linkageName = string(DW_AT_linkage_name, of: &type)
            else { return false }
            return linkageName.hasPrefix("$s") && linkageName.hasSuffix("CD")
        }

        /// The string attribute `name` of `die`, through `DW_AT_specification`; nil without it.
        private func string(_ name: Int, of die: inout Dwarf_Die) -> String? {
            var attribute = Dwarf_Attribute()
            guard dw.dwarf_attr_integrate(&die, UInt32(name), &attribute) != nil, let text = dw.dwarf_formstring(&attribute)
            else { return nil }
            return String(cString: text)
        }

        /// The name of the type `die` has (`DW_AT_type`), through unnamed qualifiers and typedefs.
        private func typeName(of die: Dwarf_Die) -> String? {
            var current = die
            for _ in 0..<8 {
                var attribute = Dwarf_Attribute()
                var type = Dwarf_Die()
                guard dw.dwarf_attr_integrate(&current, UInt32(DW_AT_type), &attribute) != nil,
                    dw.dwarf_formref_die(&attribute, &type) != nil
                else { return nil }
                if dw.dwarf_attr_integrate(&type, UInt32(DW_AT_name), &attribute) != nil,
                    let name = dw.dwarf_formstring(&attribute)
                {
                    return String(cString: name)
                }
                current = type
            }
            return nil
        }

        /// The link-time address of the function symbol named `mangled`.
        private func functionAddress(named mangled: String) -> UInt64? {
            if symbolAddresses == nil {
                var addresses: [String: UInt64] = [:]
                for symbol in loadSymbols() { addresses[String(cString: symbol.name)] = symbol.address }
                symbolAddresses = addresses
            }
            return symbolAddresses?[mangled]
        }

        /// The sorted function-symbol index, built on first use; `dwfl_module_addrinfo` would scan
        /// the whole table on every lookup.
        private func loadSymbols() -> [ELFSymbol] {
            if symbols == nil { indexSymbolTable() }
            return symbols ?? []
        }

        /// The sorted data-symbol index (variables), built on first use.
        private func loadVariables() -> [ELFSymbol] {
            if variables == nil { indexSymbolTable() }
            return variables ?? []
        }

        /// Builds both symbol indexes in one pass over the symbol table: functions
        /// (`STT_FUNC`, `STT_GNU_IFUNC`) and variables (`STT_OBJECT`, `STT_TLS`), each sorted by
        /// address, one per address.
        private func indexSymbolTable() {
            let (functions, data) = readSymbolTable(inPlace: true) ?? readSymbolTable(inPlace: false) ?? ([], [])
            symbols = Self.onePerAddress(functions)
            variables = Self.onePerAddress(data)
        }

        /// The function and data symbols that are defined (in a section of this file), at a
        /// nonzero address, and named: read in place (`SymbolTableInPlace`), nil when the table
        /// does not allow it, or through libdwfl, symbol by symbol.
        private func readSymbolTable(inPlace: Bool) -> (functions: [ELFSymbol], data: [ELFSymbol])? {
            var functions: [ELFSymbol] = []
            var data: [ELFSymbol] = []
            let count = dw.dwfl_module_getsymtab(module)
            if count < 0, !inPlace {
                record(.dwflModuleGetsymtab(path: path, message: dw.lastDwflError()))
            }
            guard count > 1 else { return inPlace ? nil : ([], []) }
            func add(address: UInt64, size: UInt64, info: UInt8, name: UnsafePointer<CChar>) {
                let type = Int32(info & 0xf)
                let binding = Int32(info >> 4)
                let rank: UInt8 = binding == STB_GLOBAL ? 2 : binding == STB_WEAK ? 1 : 0
                let found = ELFSymbol(address: address, size: size, rank: rank, name: name)
                if type == STT_FUNC || type == STT_GNU_IFUNC {
                    functions.append(found)
                } else if type == STT_OBJECT || type == STT_TLS {
                    data.append(found)
                }
            }
            func addThroughLibdwfl(_ index: Int32) {
                guard let found = Self.symbolInfo(dw: dw, module: module, index: index),
                    found.sectionIndex != SHN_UNDEF, found.address != 0, found.name.pointee != 0
                else { return }
                add(address: found.address, size: found.symbol.st_size, info: found.symbol.st_info, name: found.name)
            }
            guard inPlace else {
                for index in 1..<count { addThroughLibdwfl(index) }
                return (functions, data)
            }
            guard let table = SymbolTableInPlace(dw: dw, module: module, count: count) else { return nil }
            for index in 1..<Int(count) {
                let symbol = table.symbol(index)
                // Its section index is in another table: libdwfl reads that one.
                if symbol.st_shndx == SHN_XINDEX {
                    addThroughLibdwfl(Int32(index))
                    continue
                }
                guard symbol.st_shndx != SHN_UNDEF, symbol.st_value != 0, let name = table.name(of: symbol)
                else { continue }
                add(address: symbol.st_value, size: symbol.st_size, info: symbol.st_info, name: name)
            }
            return (functions, data)
        }

        /// Symbol `index` of `module` as libdwfl reads it (`dwfl_module_getsym_info`): its entry,
        /// its name, its address, its section's index, and the file it is in; nil without a name.
        private static func symbolInfo(
            dw: leakaudit_libdw, module: OpaquePointer, index: Int32
        ) -> (symbol: GElf_Sym, name: UnsafePointer<CChar>, address: UInt64, sectionIndex: GElf_Word, elf: OpaquePointer?)? {
            var symbol = GElf_Sym()
            var address: GElf_Addr = 0
            var sectionIndex: GElf_Word = 0
            var elf: OpaquePointer? = nil
            var bias: Dwarf_Addr = 0
            guard let name = dw.dwfl_module_getsym_info(module, index, &symbol, &address, &sectionIndex, &elf, &bias)
            else { return nil }
            return (symbol, name, address, sectionIndex, elf)
        }

        /// Both symbol indexes as `indexSymbolTable` builds them, read in place (nil when the table
        /// does not allow it) or through libdwfl: tests compare the two, and the ELF fuzz target
        /// reads image files in place.
        func symbolIndexes(readingInPlace inPlace: Bool) -> (functions: [IndexedSymbol], variables: [IndexedSymbol])? {
            guard let (functions, data) = readSymbolTable(inPlace: inPlace) else { return nil }
            func described(_ symbols: [ELFSymbol]) -> [IndexedSymbol] {
                Self.onePerAddress(symbols).map {
                    IndexedSymbol(address: $0.address, size: $0.size, name: String(cString: $0.name))
                }
            }
            return (described(functions), described(data))
        }

        /// A symbol of an index, as tests compare them.
        struct IndexedSymbol: Equatable {
            var address: UInt64
            var size: UInt64
            var name: String
        }

        /// A module's symbol table read in place, when it is what `dwfl_module_getsym_info` would
        /// read entry by entry at ten times the cost (a section lookup and a lock per symbol): the
        /// one 64-bit symbol table section (`.symtab`, else `.dynsym`) of the executable or shared
        /// object the module loaded, with as many entries as libdwfl counts, at link-time addresses. That is every
        /// image a Swift program loads on this platform; a module whose symbols are in a separate
        /// debug file, or that adds a MiniDebugInfo table, is read through libdwfl.
        private struct SymbolTableInPlace {
            let symbols: UnsafeRawPointer
            let names: UnsafePointer<CChar>
            let namesSize: Int

            init?(dw: leakaudit_libdw, module: OpaquePointer, count: Int32) {
                var bias: GElf_Addr = 0
                var fileHeader = GElf_Ehdr()
                // A relocatable file's symbols are relative to their sections, which libdwfl places.
                guard let elf = dw.dwfl_module_getelf(module, &bias), bias == 0, dw.gelf_getclass(elf) == ELFCLASS64,
                    dw.gelf_getehdr(elf, &fileHeader) != nil,
                    fileHeader.e_type == ET_DYN || fileHeader.e_type == ET_EXEC,
                    // Where a symbol's value is all its address (no function descriptors, no
                    // Thumb bit).
                    fileHeader.e_machine == EM_X86_64 || fileHeader.e_machine == EM_AARCH64
                else { return nil }
                // The one table libdwfl reads whatever the section order: a `.symtab` alone, or a
                // `.dynsym` alone; no table of extended section indexes.
                var symbolTables: [(section: OpaquePointer, header: GElf_Shdr)] = []
                var dynamicTables: [(section: OpaquePointer, header: GElf_Shdr)] = []
                var section: OpaquePointer? = nil
                while let next = dw.elf_nextscn(elf, section) {
                    section = next
                    var header = GElf_Shdr()
                    guard dw.gelf_getshdr(next, &header) != nil, header.sh_type != SHT_SYMTAB_SHNDX else { return nil }
                    if header.sh_type == SHT_SYMTAB { symbolTables.append((next, header)) }
                    if header.sh_type == SHT_DYNSYM { dynamicTables.append((next, header)) }
                }
                let found =
                    symbolTables.count == 1
                    ? symbolTables.first : symbolTables.isEmpty && dynamicTables.count == 1 ? dynamicTables.first : nil
                let entrySize = MemoryLayout<Elf64_Sym>.size
                guard let (symbolSection, header) = found, header.sh_entsize == entrySize,
                    let symbolData = dw.elf_getdata(symbolSection, nil), let symbols = symbolData.pointee.d_buf,
                    symbolData.pointee.d_size == Int(count) * entrySize,
                    let namesSection = dw.elf_getscn(elf, Int(header.sh_link)),
                    let nameData = dw.elf_getdata(namesSection, nil), let names = nameData.pointee.d_buf,
                    nameData.pointee.d_size > 0,
                    names.load(fromByteOffset: nameData.pointee.d_size - 1, as: UInt8.self) == 0
                else { return nil }
                self.symbols = UnsafeRawPointer(symbols)
                self.names = UnsafeRawPointer(names).assumingMemoryBound(to: CChar.self)
                self.namesSize = nameData.pointee.d_size
                // libdwfl reads this very table: its first named symbol has the same name, at the
                // same place.
                let offset = Int(symbol(1).st_name)
                guard let first = ModuleResolver.symbolInfo(dw: dw, module: module, index: 1), first.elf == elf,
                    offset < namesSize, first.name == self.names + offset
                else { return nil }
            }

            func symbol(_ index: Int) -> Elf64_Sym {
                symbols.loadUnaligned(fromByteOffset: index * MemoryLayout<Elf64_Sym>.size, as: Elf64_Sym.self)
            }

            /// The symbol's name in the string table; nil when it has none or it lies outside.
            func name(of symbol: Elf64_Sym) -> UnsafePointer<CChar>? {
                let offset = Int(symbol.st_name)
                guard offset < namesSize, names[offset] != 0 else { return nil }
                return names + offset
            }
        }

        /// `found` sorted by address, keeping one symbol per address: the sized one, then the
        /// global one, then the first in the table.
        ///
        /// Sorts one 128-bit key a symbol (its address, what it is preferred by, its index)
        /// rather than the symbols by a comparing closure: a test bundle's table has tens of
        /// thousands of symbols, and the closure's sort was most of what indexing it cost.
        private static func onePerAddress(_ found: [ELFSymbol]) -> [ELFSymbol] {
            var keys: [UInt128] = []
            keys.reserveCapacity(found.count)
            for (index, symbol) in found.enumerated() {
                let unsized: UInt128 = symbol.size == 0 ? 1 : 0
                let preference = unsized << 34 | UInt128(2 &- min(symbol.rank, 2)) << 32
                keys.append(UInt128(symbol.address) << 64 | preference | UInt128(UInt32(truncatingIfNeeded: index)))
            }
            keys.sort()
            var unique: [ELFSymbol] = []
            unique.reserveCapacity(found.count)
            for key in keys {
                let symbol = found[Int(UInt32(truncatingIfNeeded: key))]
                if unique.last?.address != symbol.address { unique.append(symbol) }
            }
            return unique
        }

        // MARK: - Compile units

        /// The compile unit whose ranges hold link-time address `pc`, and `pc` at DWARF addresses.
        ///
        /// Swift emits no `.debug_aranges`, so `dwfl_module_addrdie` finds nothing: the
        /// compile units' own ranges are indexed instead.
        private func compileUnit(containing pc: UInt64) -> (Int, UInt64)? {
            if compileUnits == nil { loadCompileUnits() }
            let dwarfPC = pc &- dwarfBias
            guard let range = compileUnitIndex.lookup(dwarfPC) else { return nil }
            return (range.index, dwarfPC)
        }

        private func loadCompileUnits() {
            var units: [CompileUnit] = []
            var ranges: [DIERange] = []
            defer {
                compileUnits = units
                compileUnitIndex = RangeIndex(ranges)
            }
            var bias: Dwarf_Addr = 0
            // Modules without debug info (libc, libswiftCore, Foundation) are the usual case,
            // not a failure: their frames are named from the symbol table.
            guard dw.dwfl_module_getdwarf(module, &bias) != nil else {
                _ = dw.dwfl_errno()
                return
            }
            dwarfBias = bias
            _ = dw.dwfl_errno()
            var previous: UnsafeMutablePointer<Dwarf_Die>? = nil
            while let unit = dw.dwfl_module_nextcu(module, previous, &bias) {
                previous = unit
                let index = units.count
                units.append(CompileUnit(die: unit.pointee))
                forEachRange(of: unit) { low, high in
                    ranges.append(DIERange(low: low, high: high, index: index))
                }
            }
            // A NULL from dwfl_module_nextcu means both "no more" and "failed".
            let status = dw.dwfl_errno()
            if status != 0 {
                record(.dwflModuleNextcu(path: path, message: dw.lastDwflError(status)))
            }
        }

        /// Calls `body` with each `[low, high)` range of `die`.
        private func forEachRange(
            of die: UnsafeMutablePointer<Dwarf_Die>,
            _ body: (UInt64, UInt64) -> Void
        ) {
            var offset = 0
            var base: Dwarf_Addr = 0
            var low: Dwarf_Addr = 0
            var high: Dwarf_Addr = 0
            while true {
                offset = dw.dwarf_ranges(die, offset, &base, &low, &high)
                if offset == 0 { return }
                if offset < 0 {
                    record(.dwarfRanges(path: path, message: dw.lastDwarfError()))
                    return
                }
                if high > low { body(low, high) }
            }
        }

        // MARK: - Functions and inlining

        /// The innermost function DIE (subprogram) of compile unit `unitIndex` holding `dwarfPC`.
        private func functionDIE(inUnit unitIndex: Int, containing dwarfPC: UInt64) -> Dwarf_Die? {
            guard var unit = compileUnits?[unitIndex] else { return nil }
            if unit.functionIndex == nil {
                var functions: [Dwarf_Die] = []
                var ranges: [DIERange] = []
                collectFunctions(under: &unit.die, into: &functions, ranges: &ranges)
                unit.functionDIEs = functions
                unit.functionIndex = RangeIndex(ranges)
                compileUnits?[unitIndex] = unit
            }
            guard let range = unit.functionIndex?.lookup(dwarfPC) else { return nil }
            return unit.functionDIEs?[range.index]
        }

        /// Indexes every subprogram with code under `parent`.
        ///
        /// `dwarf_getscopes` finds nothing in Swift, whose subprograms sit inside
        /// `DW_TAG_module`: module, namespace and type DIEs are always entered here.
        private func collectFunctions(
            under parent: inout Dwarf_Die,
            into functions: inout [Dwarf_Die],
            ranges: inout [DIERange]
        ) {
            forEachChild(of: &parent) { child in
                switch Int(dw.dwarf_tag(&child)) {
                case DW_TAG_subprogram:
                    let index = functions.count
                    var hasCode = false
                    forEachRange(of: &child) { low, high in
                        hasCode = true
                        ranges.append(DIERange(low: low, high: high, index: index))
                    }
                    if hasCode {
                        functions.append(child)
                        // Nested functions (C extensions, some closures) live inside.
                        collectFunctions(under: &child, into: &functions, ranges: &ranges)
                    }
                case DW_TAG_lexical_block:
                    collectFunctions(under: &child, into: &functions, ranges: &ranges)
                case DW_TAG_module, DW_TAG_namespace, DW_TAG_structure_type, DW_TAG_class_type,
                    DW_TAG_enumeration_type, DW_TAG_union_type, DW_TAG_interface_type:
                    collectFunctions(under: &child, into: &functions, ranges: &ranges)
                default:
                    break
                }
            }
        }

        /// `function` followed by the inlined subroutines holding `dwarfPC`, outermost first.
        private func inlineChain(from function: Dwarf_Die, dwarfPC: UInt64) -> [Dwarf_Die] {
            var chain = [function]
            var scope = function
            while true {
                var inner: Dwarf_Die? = nil
                forEachChild(of: &scope) { child in
                    guard inner == nil else { return }
                    let tag = Int(dw.dwarf_tag(&child))
                    guard tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block else {
                        return
                    }
                    if dw.dwarf_haspc(&child, dwarfPC) == 1 {
                        inner = child
                    }
                }
                guard var found = inner else { return chain }
                if Int(dw.dwarf_tag(&found)) == DW_TAG_inlined_subroutine {
                    chain.append(found)
                }
                scope = found
            }
        }

        /// Calls `body` with each child of `parent`, in order.
        private func forEachChild(of parent: inout Dwarf_Die, _ body: (inout Dwarf_Die) -> Void) {
            var child = Dwarf_Die()
            var status = dw.dwarf_child(&parent, &child)
            while status == 0 {
                body(&child)
                var next = Dwarf_Die()
                status = dw.dwarf_siblingof(&child, &next)
                child = next
            }
            if status < 0 {
                record(.dwarfDIETree(path: path, message: dw.lastDwarfError()))
            }
        }

        /// The function's name: the demangled linkage name, else `DW_AT_name`, following
        /// `DW_AT_abstract_origin` and `DW_AT_specification`.
        private func functionName(_ die: inout Dwarf_Die) -> String? {
            var attribute = Dwarf_Attribute()
            for name in [DW_AT_linkage_name, DW_AT_MIPS_linkage_name] {
                if dw.dwarf_attr_integrate(&die, UInt32(name), &attribute) != nil,
                    let linkageName = dw.dwarf_formstring(&attribute)
                {
                    let mangled = String(cString: linkageName)
                    if let demangled = demangleSwiftSymbol(mangled) {
                        return demangled
                    }
                    break
                }
            }
            if dw.dwarf_attr_integrate(&die, UInt32(DW_AT_name), &attribute) != nil,
                let name = dw.dwarf_formstring(&attribute)
            {
                return String(cString: name)
            }
            return nil
        }

        /// Where the inlined subroutine `die` was called from: `DW_AT_call_file`, `_line`,
        /// `_column`.
        private func callSite(of die: inout Dwarf_Die, cuDIE: inout Dwarf_Die) -> SourceLocation? {
            func unsigned(_ name: Int) -> UInt64? {
                var attribute = Dwarf_Attribute()
                var value: Dwarf_Word = 0
                guard dw.dwarf_attr(&die, UInt32(name), &attribute) != nil,
                    dw.dwarf_formudata(&attribute, &value) == 0
                else { return nil }
                return value
            }
            var location = SourceLocation()
            if let fileIndex = unsigned(DW_AT_call_file) {
                var files: OpaquePointer? = nil
                var count = 0
                if dw.dwarf_getsrcfiles(&cuDIE, &files, &count) == 0, let files,
                    Int(fileIndex) < count,
                    let name = dw.dwarf_filesrc(files, Int(fileIndex), nil, nil)
                {
                    location.file = sourcePath(name)
                }
            }
            location.line = unsigned(DW_AT_call_line).flatMap { $0 == 0 ? nil : Int($0) }
            location.column = unsigned(DW_AT_call_column).flatMap { $0 == 0 ? nil : Int($0) }
            return location.file == nil && location.line == nil ? nil : location
        }

        /// The line-table row for `dwarfPC`.
        private func lineTableLocation(cuDIE: inout Dwarf_Die, dwarfPC: UInt64) -> SourceLocation? {
            guard let line = dw.dwarf_getsrc_die(&cuDIE, dwarfPC) else { return nil }
            var location = SourceLocation()
            if let file = dw.dwarf_linesrc(line, nil, nil) {
                location.file = sourcePath(file)
            }
            var number: Int32 = 0
            if dw.dwarf_lineno(line, &number) == 0, number > 0 { location.line = Int(number) }
            var column: Int32 = 0
            if dw.dwarf_linecol(line, &column) == 0, column > 0 { location.column = Int(column) }
            return location
        }

        // MARK: - Errors

        private func record(_ error: SymbolizerError) {
            if !recordedDiagnostics.contains(error) { recordedDiagnostics.append(error) }
        }
    }
}

/// A `find_debuginfo` callback that finds nothing, leaving the module's own DWARF (if any).
private func findNoSeparateDebugInfo(
    _ module: OpaquePointer?,
    _ userData: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ moduleName: UnsafePointer<CChar>?,
    _ base: Dwarf_Addr,
    _ fileName: UnsafePointer<CChar>?,
    _ debugLinkFile: UnsafePointer<CChar>?,
    _ debugLinkCRC: GElf_Word,
    _ debugInfoFileName: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    -1
}

/// A line-table file name as a path, or nil for Swift's `<compiler-generated>` pseudo-file
/// (which libdw joins with its directory into `//<compiler-generated>`).
private func sourcePath(_ name: UnsafePointer<CChar>) -> String? {
    let path = String(cString: name)
    return path.hasSuffix("<compiler-generated>") ? nil : path
}

extension leakaudit_libdw {
    /// The message of libdwfl error `status`, by default the last one.
    fileprivate func lastDwflError(_ status: Int32 = -1) -> String {
        self.dwfl_errmsg(status).map { String(cString: $0).lowercased() } ?? "unknown error"
    }

    /// The message of the last libdw error.
    fileprivate func lastDwarfError() -> String {
        self.dwarf_errmsg(-1).map { String(cString: $0).lowercased() } ?? "unknown error"
    }
}

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined()
}
