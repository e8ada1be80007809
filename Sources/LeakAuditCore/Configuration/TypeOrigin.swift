/// Where a type comes from, told by the module its name starts with: the toolchain's and the test
/// harnesses' types, which users cannot act on, apart from the package's own. The watch asks it
/// first (which classes the census takes without stacks), then the heap walk after each test and
/// the report (which types a test is judged by: Recording/JudgedTypes.swift).
enum TypeOrigin {
    /// Modules of the toolchain whose types users cannot act on.
    static let internalModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "_RegexParser", "Foundation", "FoundationEssentials",
        "FoundationInternationalization", "FoundationNetworking", "FoundationXML", "CoreFoundation", "XCTest",
        "Testing", "_Testing_Foundation", "Dispatch", "Synchronization", "Observation", "Distributed", "RegexBuilder",
        "__C", "_SwiftConcurrencyShims", "_Builtin_float", "_Differentiation", "_FoundationCollections", "_FoundationCShims",
        "_TestDiscovery", "_TestingInterop", "_Volatile", "Cxx", "CxxStdlib", "Glibc", "Runtime",
    ]

    /// Modules of the test harnesses, whose objects (test cases, runners, locks) live as long as
    /// the harness needs them.
    static let harnessModules: Set<String> = ["XCTest", "Testing", "_Testing_Foundation", "_TestingInterop", "_TestDiscovery"]

    /// The names `isInternalType` is true for, as LEAK_AUDIT_WATCH's glob patterns (`Module.*`,
    /// and `__*` for the runtime's own modules), in a stable order. `Swift.` is left out: the
    /// writer never watches the standard library's classes.
    static let internalTypePatterns: [String] = internalModules.subtracting(["Swift"]).sorted().map { $0 + ".*" } + ["__*"]

    /// True for a type of the Swift runtime, Foundation, XCTest or another toolchain library.
    static func isInternalType(_ name: String) -> Bool {
        isToolchainModule(name.prefix { $0 != "." && $0 != "<" })
    }

    /// True for a module of the toolchain: one of `internalModules`, or one whose name starts
    /// with two underscores (the runtime's own names). A package's module whose name starts with
    /// one (`_CryptoExtras`, `_NIOFileSystem`) is the package's.
    private static func isToolchainModule(_ module: Substring) -> Bool {
        internalModules.contains(String(module)) || module.hasPrefix("__")
    }

    /// True for a name that mentions a type of the program: a module-qualified type whose module
    /// is not the toolchain's (`App.Model`, `[App.Model]`, `Swift.Optional<App.Model>`). An
    /// unnamed object (a closure context whose closure is not known, a box) is nobody's.
    static func isProgramType(_ name: String) -> Bool {
        func isIdentifier(_ character: Character) -> Bool { character.isLetter || character.isNumber || character == "_" }
        var index = name.startIndex
        while index < name.endIndex {
            guard isIdentifier(name[index]) else {
                index = name.index(after: index)
                continue
            }
            // An identifier: a module when a "." follows it and no "." came just before it.
            let start = index
            while index < name.endIndex, isIdentifier(name[index]) { index = name.index(after: index) }
            let qualifies = start == name.startIndex || name[name.index(before: start)] != "."
            if qualifies, index < name.endIndex, name[index] == "." {
                if !isToolchainModule(name[start..<index]) { return true }
            }
        }
        return false
    }

    /// True for a type of XCTest or Swift Testing.
    static func isHarnessType(_ name: String) -> Bool {
        harnessModules.contains(String(name.prefix { $0 != "." && $0 != "<" }))
    }
}
