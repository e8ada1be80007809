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
///   (for example `malloc`) or the runtime has no demangler.
public func demangleSwiftSymbol(_ mangled: String) -> String? {
    if let cached = demangledNames.withLock({ $0[mangled] }) {
        return cached
    }
    let result = SwiftRuntimeDemangler.shared?.demangle(mangled)
    demangledNames.withLock { $0[mangled] = .some(result) }
    return result
}

/// Names demangled so far; `.some(nil)` records a name that is not Swift.
private let demangledNames = Mutex<[String: String?]>([:])

/// `swift_demangle`, looked up once in the already loaded libswiftCore.
///
/// Looked up with `dlsym` rather than declared with `@_silgen_name` so that the call uses the C
/// calling convention the runtime exports it with.
private struct SwiftRuntimeDemangler: @unchecked Sendable {
    // char *swift_demangle(const char *name, size_t len, char *out, size_t *outSize, uint32_t flags)
    typealias Function =
        @convention(c) (
            UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?,
            UInt32
        ) -> UnsafeMutablePointer<CChar>?

    let function: Function

    static let shared: SwiftRuntimeDemangler? = {
        // A nil handle is RTLD_DEFAULT: search every loaded object.
        guard let symbol = dlsym(nil, "swift_demangle") else {
            return nil
        }
        return SwiftRuntimeDemangler(function: unsafeBitCast(symbol, to: Function.self))
    }()

    func demangle(_ mangled: String) -> String? {
        mangled.utf8CString.withUnsafeBufferPointer { name -> String? in
            // flags must be 0: any other value aborts the process. With out == NULL the
            // result is malloc'ed and ours to free.
            guard let demangled = function(name.baseAddress, name.count - 1, nil, nil, 0) else {
                return nil
            }
            defer { free(demangled) }
            return String(cString: demangled)
        }
    }
}

/// Demangles a Swift or a C++ symbol (the Swift runtime's own functions are C++); returns nil for
/// a plain C name.
public func demangleSymbol(_ mangled: String) -> String? {
    if let swift = demangleSwiftSymbol(mangled) { return swift }
    guard mangled.hasPrefix("_Z"), let demangler = CPlusPlusDemangler.shared else { return nil }
    return demangler.demangle(mangled)
}

/// libstdc++'s `__cxa_demangle`, already loaded with the Swift runtime; looked up once.
private struct CPlusPlusDemangler: @unchecked Sendable {
    // char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status)
    typealias Function =
        @convention(c) (
            UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
        )
        -> UnsafeMutablePointer<CChar>?

    let function: Function

    static let shared: CPlusPlusDemangler? = {
        guard let symbol = dlsym(nil, "__cxa_demangle") else { return nil }
        return CPlusPlusDemangler(function: unsafeBitCast(symbol, to: Function.self))
    }()

    func demangle(_ mangled: String) -> String? {
        var status: Int32 = 0
        guard let demangled = function(mangled, nil, nil, &status), status == 0 else { return nil }
        defer { free(demangled) }
        return String(cString: demangled)
    }
}
