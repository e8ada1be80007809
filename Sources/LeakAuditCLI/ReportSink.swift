import LeakAuditCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the report goes: standard error, or a file opened before the target runs (so that a bad
/// path costs no run).
///
/// A regular file is written whole or not at all: into a temporary file beside it
/// (`NAME.leak-audit-PID.partial`, created before the target starts), renamed over it once
/// complete, so that a reader sees the old file or the new one, never a part of one. If
/// leak-audit dies before, the guard removes the temporary file (`ProcessGuard`); after a SIGKILL
/// it stays, with the name that says it is partial. A symlink stays a link (the file it names is
/// replaced), and a replaced file keeps its permissions. Anything that cannot be replaced so is
/// written in place, as before: a device, a FIFO, a path under /dev or /proc, a file with other
/// hard links or of another owner, or one in a directory where leak-audit cannot create a file.
struct ReportSink {
    private let descriptor: Int32
    /// The path given with --output, nil for standard error or standard output.
    let path: String?
    private let createdHere: Bool
    /// For a file written through a temporary file: that file, and where it goes.
    private let replacement: Replacement?

    /// A temporary file that becomes the destination once it is complete.
    private final class Replacement: Sendable {
        let temporaryPath: String
        let finalPath: String
        /// Its registration with the guard, which removes it if leak-audit dies first.
        let registration: Int32?
        /// Renamed into place, or removed.
        let finished = Atomic<Bool>(false)

        init(temporaryPath: String, finalPath: String) {
            self.temporaryPath = temporaryPath
            self.finalPath = finalPath
            registration = ProcessGuard.registerPartialFile(temporaryPath)
        }

        /// Removes the temporary file (the destination was never touched).
        func abandon() {
            guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
            unlink(temporaryPath)
            if let registration { ProcessGuard.forgetPartialFile(registration) }
        }

        /// Renames the temporary file over the destination; returns the errno value of a failure.
        func commit() -> Int32? {
            guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return nil }
            let failure: Int32? = rename(temporaryPath, finalPath) == 0 ? nil : errno
            if failure != nil { unlink(temporaryPath) }
            if let registration { ProcessGuard.forgetPartialFile(registration) }
            return failure
        }
    }

    private init(descriptor: Int32, path: String?, createdHere: Bool, replacement: Replacement? = nil) {
        self.descriptor = descriptor
        self.path = path
        self.createdHere = createdHere
        self.replacement = replacement
    }

    /// Standard error: where `run` writes the report (the target's output is on standard output).
    static let standardError = ReportSink(descriptor: 2, path: nil, createdHere: false)

    /// Standard output: where `report` writes what it renders.
    static let standardOutput = ReportSink(descriptor: 1, path: nil, createdHere: false)

    /// Opens `path` for writing: a temporary file beside a regular file, else `path` itself
    /// without truncating it yet. Either way nothing is lost if the run never produces a report.
    static func open(path: String) throws(SinkError) -> ReportSink {
        if let sink = try openReplacing(path: path) { return sink }
        var created = true
        var descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if descriptor < 0 && errno == EEXIST {
            created = false
            descriptor = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        }
        guard descriptor >= 0 else { throw SinkError(path: path, code: errno) }
        return ReportSink(descriptor: descriptor, path: path, createdHere: created)
    }

    /// A sink that writes `path` through a temporary file beside it, or nil when `path` is to be
    /// written in place (see the type's summary; a path that cannot be written at all is left to
    /// the in-place open, whose error names it as before).
    private static func openReplacing(path: String) throws(SinkError) -> ReportSink? {
        func isSpecial(_ path: String) -> Bool { path.hasPrefix("/dev/") || path.hasPrefix("/proc/") }
        guard !isSpecial(path) else { return nil }
        var link = stat()
        var existing = stat()
        var finalPath = path
        let exists = stat(path, &existing) == 0
        if exists {
            guard (existing.st_mode & S_IFMT) == S_IFREG, existing.st_nlink == 1, existing.st_uid == geteuid() else {
                return nil
            }
            // A file leak-audit may not write is refused, as in place, not replaced.
            let check = Glibc.open(path, O_WRONLY | O_CLOEXEC)
            guard check >= 0 else { throw SinkError(path: path, code: errno) }
            close(check)
            if lstat(path, &link) == 0, (link.st_mode & S_IFMT) == S_IFLNK {
                // The link stays: the file it names is replaced.
                guard let resolved = realpath(path, nil) else { return nil }
                finalPath = String(cString: resolved)
                free(resolved)
                guard !isSpecial(finalPath) else { return nil }
            }
        } else if errno != ENOENT || lstat(path, &link) == 0 {
            // A dangling symlink, or a path that cannot be looked at: as in place.
            return nil
        }
        for attempt in 0..<100 {
            // The pid, and a number when a file of a killed run with the same pid is still there.
            let temporaryPath = finalPath + ".leak-audit-\(getpid())" + (attempt == 0 ? "" : "-\(attempt)") + ".partial"
            let descriptor = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0o600 : 0o644)
            guard descriptor >= 0 else {
                if errno == EEXIST { continue }
                return nil
            }
            // A replaced file keeps its permissions and group; where that cannot be, in place.
            let keeps =
                !exists
                || (fchmod(descriptor, existing.st_mode & 0o7777) == 0
                    && (existing.st_gid == getegid() || fchown(descriptor, existing.st_uid, existing.st_gid) == 0))
            guard keeps else {
                close(descriptor)
                unlink(temporaryPath)
                return nil
            }
            let replacement = Replacement(temporaryPath: temporaryPath, finalPath: finalPath)
            return ReportSink(descriptor: descriptor, path: path, createdHere: true, replacement: replacement)
        }
        return nil
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
        if let failure, let path {
            replacement?.abandon()
            throw SinkError(path: path, code: failure)
        }
        // Complete: it takes the destination's place.
        if let replacement, let path, let failure = replacement.commit() { throw SinkError(path: path, code: failure) }
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
        if let replacement {
            replacement.abandon()
        } else if createdHere {
            unlink(path)
        }
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
