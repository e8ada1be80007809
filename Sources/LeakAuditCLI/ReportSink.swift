#if canImport(Glibc)
    import Glibc
#endif

/// Where the report goes: standard error, or a file opened before the target runs (so that a bad
/// path costs no run) and written into in place, so that a symlink, a device, a FIFO or a file's
/// permissions stay what they were.
struct ReportSink {
    private let descriptor: Int32
    /// The path given with --output, nil for standard error or standard output.
    let path: String?
    private let createdHere: Bool

    /// Standard error: where `run` writes the report (the target's output is on standard output).
    static let standardError = ReportSink(descriptor: 2, path: nil, createdHere: false)

    /// Standard output: where `report` writes what it renders.
    static let standardOutput = ReportSink(descriptor: 1, path: nil, createdHere: false)

    /// Opens `path` for writing without truncating it yet: nothing is lost if the run never
    /// produces a report.
    static func open(path: String) throws(SinkError) -> ReportSink {
        var created = true
        var descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if descriptor < 0 && errno == EEXIST {
            created = false
            descriptor = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        }
        guard descriptor >= 0 else { throw SinkError(path: path, code: errno) }
        return ReportSink(descriptor: descriptor, path: path, createdHere: created)
    }

    /// Replaces the file's contents with `text` (a regular file is truncated first; anything else
    /// is written to as it is).
    func write(_ text: String) throws(SinkError) {
        var info = stat()
        if path != nil, fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw SinkError(path: path ?? "", code: errno)
            }
        }
        var text = text
        let failure: Int32? = text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                guard let start = bytes.baseAddress else { return nil }
                let written = Glibc.write(descriptor, start + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        if let failure, let path { throw SinkError(path: path, code: failure) }
    }

    /// True when this is a terminal (standard error on one, or a path naming one).
    var isTerminal: Bool { isatty(descriptor) == 1 }

    /// How wide a text report's lines may be here: a terminal's columns, else 80 (a CI log, a
    /// pipe, a file).
    var columns: Int {
        guard isTerminal else { return 80 }
        var size = winsize()
        if ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 40 { return Int(size.ws_col) }
        if let text = getenv("COLUMNS"), let columns = Int(String(cString: text)), columns >= 40 { return columns }
        return 80
    }

    /// Leaves no empty file behind when the run produced no report.
    func discard() {
        guard let path else { return }
        close(descriptor)
        if createdHere { unlink(path) }
    }
}

/// The report's destination could not be opened or written.
struct SinkError: Error, CustomStringConvertible {
    var path: String
    var code: Int32
    /// What was to be written there: the report, or the baseline.
    var subject = "the report"

    var description: String {
        let reason = strerror(code).map { String(cString: $0).lowercased() } ?? "error \(code)"
        return "cannot write \(subject) to '\(path)': \(reason); check the directory exists and is writable"
    }
}
