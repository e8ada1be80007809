import Synchronization

/// Where the loaded libraries keep the first words of the C and C++ objects whose layout the heap
/// walk knows, found by name in each library's symbol tables (`.symtab` too: ICU's `UnicodeString`
/// vtable is a local symbol, which the toolchain's `lib_FoundationICU.so` keeps).
enum ForeignClassSymbols {
    /// What each library's symbols say, at link-time addresses, by path: read once.
    private static let classesByPath = Mutex<[String: ForeignClasses]>([:])

    /// The foreign classes of `modules`, at runtime addresses: in each library whose file name says
    /// it is ICU's (`lib_FoundationICU.so`, `libicuuc.so.72`), the address point of
    /// `UnicodeString`'s vtable (16 bytes into it, past the offset to top and the type info, as
    /// the Itanium C++ ABI lays a vtable out); in the blocks runtime (`libBlocksRuntime.so`),
    /// `_NSConcreteMallocBlock`; in every image, its `swift5_mpenum` and `swift5_builtin` sections.
    static func classes(in modules: [ModuleImage]) -> ForeignClasses {
        var found = ForeignClasses()
        for module in modules {
            let linkTime = classesByPath.withLock { $0[module.path] } ?? read(module.path)
            found.unicodeStrings += linkTime.unicodeStrings.map { $0 &+ module.loadBias &+ 16 }
            found.mallocBlocks += linkTime.mallocBlocks.map { $0 &+ module.loadBias }
            found.multiPayloadEnumSections += linkTime.multiPayloadEnumSections.map {
                ($0.lowerBound &+ module.loadBias)..<($0.upperBound &+ module.loadBias)
            }
            found.builtinTypeSections += linkTime.builtinTypeSections.map {
                ($0.lowerBound &+ module.loadBias)..<($0.upperBound &+ module.loadBias)
            }
        }
        return found
    }

    /// Reads what the library at `path` defines ahead of the walk that needs it, unless it is read.
    static func prepare(path: String) {
        if classesByPath.withLock({ $0[path] }) == nil { _ = read(path) }
    }

    /// The classes the library at `path` defines, at link-time addresses, kept for the next walk.
    private static func read(_ path: String) -> ForeignClasses {
        var classes = ForeignClasses()
        if let file = ELFFile(path: path) {
            // Only ICU's libraries and the blocks runtime define the classes searched by name.
            let name = path.split(separator: "/").last.map { $0.lowercased() } ?? ""
            classes = Self.classes(in: file, searchingSymbols: name.contains("icu") || name.hasPrefix("libblocksruntime"))
        }
        classesByPath.withLock { $0[path] = classes }
        return classes
    }

    /// The classes `file` defines, at link-time addresses: its `swift5_mpenum` and `swift5_builtin`
    /// sections, and, when
    /// `searchingSymbols`, `UnicodeString`'s vtable (`_ZTVN6icu_7613UnicodeStringE`: the namespace
    /// carries ICU's version, or is plain `icu` in a build without renaming) and
    /// `_NSConcreteMallocBlock`.
    static func classes(in file: borrowing ELFFile, searchingSymbols: Bool = true) -> ForeignClasses {
        var classes = ForeignClasses(
            multiPayloadEnumSections: file.loadedRange(ofSection: "swift5_mpenum").map { [$0] } ?? [],
            builtinTypeSections: file.loadedRange(ofSection: "swift5_builtin").map { [$0] } ?? [])
        guard searchingSymbols else { return classes }
        classes.unicodeStrings = file.objectSymbols {
            $0.hasPrefix("_ZTVN") && $0.hasSuffix("13UnicodeStringE") && $0.contains("icu")
        }
        classes.mallocBlocks = file.objectSymbols { $0 == "_NSConcreteMallocBlock" }
        return classes
    }
}
