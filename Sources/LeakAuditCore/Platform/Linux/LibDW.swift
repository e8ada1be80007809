import CLibDW

/// elfutils' libdw, loaded by the first module a report symbolizes (CLibDW says why not at start).
enum LibDW {
    /// libdw.so.1's functions, or why it could not be loaded: worked out once, on first use.
    static let loaded: Result<leakaudit_libdw, SymbolizerError> = load("libdw.so.1")

    /// Loads `library` (a file name the dynamic loader searches for, or a path).
    static func load(_ library: String) -> Result<leakaudit_libdw, SymbolizerError> {
        let functions = UnsafeMutablePointer<leakaudit_libdw>.allocate(capacity: 1)
        defer { functions.deallocate() }
        let capacity = 512
        let failure = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        defer { failure.deallocate() }
        guard leakaudit_libdw_open(library, functions, failure, capacity) else {
            return .failure(.libdwUnavailable(message: String(cString: failure).lowercased()))
        }
        return .success(functions.pointee)
    }
}
