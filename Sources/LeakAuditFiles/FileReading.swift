#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Reading the files leak-audit is given (a configuration, a baseline, a saved JSON report): the
// reading side of `stableJSON`. Every such file is read here, bounded, so that a device, a FIFO or a
// runaway file fails with the same words whichever option named it.

/// The most a file leak-audit reads may hold: a configuration or baseline is a few kilobytes, and a
/// saved report with every frame of every stack a few megabytes. A device or a runaway file
/// (`/dev/zero`) must not fill memory.
package let largestReadableFile = 64_000_000

/// Why a file leak-audit was given could not be read.
package enum FileReadingError: Error, Equatable {
    /// It could not be opened or read, is empty, or is larger than `largestReadableFile`; `reason`
    /// is a lowercase phrase ("it is empty", "no such file or directory").
    case unreadable(reason: String)

    /// The lowercase phrase that says why.
    package var reason: String {
        switch self {
        case .unreadable(let reason): reason
        }
    }
}

/// The whole file at `path`, read with POSIX calls so that the error names the cause.
///
/// A FIFO is opened without waiting (no writer would block `open` forever) and then reads as empty;
/// a pipe with a writer (`--config <(…)`) reads as usual. A directory fails on its first read.
package func readWholeFile(at path: String) throws(FileReadingError) -> [UInt8] {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard descriptor >= 0 else { throw .unreadable(reason: systemErrorMessage(errno)) }
    defer { close(descriptor) }
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
    let tooLarge = FileReadingError.unreadable(
        reason: "larger than \(largestReadableFile / 1_000_000) megabytes, so not a leak-audit file")
    // A regular file says its size: a large one fails before a byte of it is read.
    var info = stat()
    if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > largestReadableFile {
        throw tooLarge
    }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw .unreadable(reason: systemErrorMessage(errno))
        }
        if count == 0 {
            guard !bytes.isEmpty else { throw .unreadable(reason: "it is empty") }
            return bytes
        }
        bytes += buffer[..<count]
        guard bytes.count <= largestReadableFile else { throw tooLarge }
    }
}

/// The C library's message for `code`, lowercased to fit inside leak-audit's one-line errors.
package func systemErrorMessage(_ code: Int32) -> String {
    guard let message = strerror(code) else { return "error \(code)" }
    return String(cString: message).lowercased()
}
