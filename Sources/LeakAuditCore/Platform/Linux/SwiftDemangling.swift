import CLeakAuditHost
import LeakAuditModel
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Demangles a Swift symbol with the runtime's `swift_demangle`.
///
/// Results (including "not a Swift name") are cached by name; the function is safe to call from
/// any thread.
///
/// - Parameter mangled: A symbol name as found in an ELF symbol table or `DW_AT_linkage_name`,
///   e.g. `$sSi`.
/// - Returns: The demangled name, e.g. `Swift.Int`, or nil when `mangled` is not a Swift symbol
///   (for example `malloc`).
public func demangleSwiftSymbol(_ mangled: String) -> String? {
    if let cached = demangledNames.withLock({ $0[mangled] }) {
        return cached
    }
    let result = mangled.utf8CString.withUnsafeBufferPointer { name -> String? in
        // flags must be 0: any other value aborts the process. With no output buffer the result is
        // malloc'ed and ours to free.
        guard let demangled = swift_demangle(name.baseAddress, name.count - 1, nil, nil, 0) else { return nil }
        defer { free(demangled) }
        return String(cString: demangled)
    }
    demangledNames.withLock { $0[mangled] = .some(result) }
    return result
}

/// Names demangled so far; `.some(nil)` records a name that is not Swift.
private let demangledNames = Mutex<[String: String?]>([:])

/// Demangles a Swift or a C++ symbol (the Swift runtime's own functions are C++); returns nil for
/// a plain C name.
public func demangleSymbol(_ mangled: String) -> String? {
    if let swift = demangleSwiftSymbol(mangled) { return swift }
    guard mangled.hasPrefix("_Z") else { return nil }
    var status: Int32 = 0
    guard let demangled = __cxa_demangle(mangled, nil, nil, &status), status == 0 else { return nil }
    defer { free(demangled) }
    return String(cString: demangled)
}
