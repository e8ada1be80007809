import CLeakAuditHost
import LeakAuditModel
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The pid signals are forwarded to; 0 while no target runs.
private let forwardingTarget = Atomic<Int32>(0)
/// The first signal leak-audit received and forwarded; 0 for none.
private let forwardedSignal = Atomic<Int32>(0)
/// leak-audit itself stopped the target (`--timeout`).
private let stopSent = Atomic<Bool>(false)

/// A child process started with the terminal's standard streams and the caller's environment plus
/// the given variables, and with SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to leak-audit forwarded
/// to it, so that the report is still written when a user or CI stops the run; once it has ended,
/// stopped so or by `--timeout`, the processes it left running are killed.
struct TargetProcess: RunningTarget {
    let pid: pid_t
    let executablePath: String
    /// Readable once the target has ended (a pidfd, close-on-exec), or -1 when the kernel has none.
    let endDescriptor: Int32

    static let forwardedSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// Finds `command` as a shell would: a path when it contains a slash, else on PATH.
    static func resolve(_ command: String) throws(LeakAuditError) -> String {
        if command.contains("/") {
            try checkExecutable(command)
            return try checkRunsAsCaller(command)
        }
        let searchPath = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for directory in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + command
            if (try? checkExecutable(candidate)) != nil { return try checkRunsAsCaller(candidate) }
        }
        if (try? checkExecutable("./" + command)) != nil { throw .targetNotOnPath(name: command) }
        throw .targetNotFound(path: command)
    }

    private static func checkExecutable(_ path: String) throws(LeakAuditError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .targetNotFound(path: path) }
        let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        guard !isDirectory, access(path, X_OK) == 0 else { throw .targetNotExecutable(path: path) }
    }

    /// Refuses a set-user-ID or set-group-ID program of another user or group rather than run it
    /// unaudited: it would run as them (docs/reliability.md, "The channel").
    private static func checkRunsAsCaller(_ path: String) throws(LeakAuditError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return path }
        if (info.st_mode & S_ISUID != 0 && info.st_uid != geteuid())
            || (info.st_mode & S_ISGID != 0 && info.st_gid != getegid())
        {
            throw .targetRunsAsAnotherUser(path: path)
        }
        return path
    }

    /// Starts `executablePath` with `arguments` (argv[1...]) and `extraEnvironment` added.
    static func spawn(executablePath: String, displayName: String, arguments: [[UInt8]], extraEnvironment: [String: String])
        throws(LeakAuditError) -> TargetProcess
    {
        var environment: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if extraEnvironment[name] == nil { environment.append(text) }
            index += 1
        }
        environment += extraEnvironment.map { "\($0.key)=\($0.value)" }

        let argv = ([Array(displayName.utf8)] + arguments).map(Self.cString) + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        // posix_spawn, with a parent-death signal: the target dies with leak-audit, even by SIGKILL.
        let result = leakaudit_host_spawn(&pid, executablePath, argv, envp)
        guard result == 0 else {
            switch result {
            case ENOENT: throw .targetNotFound(path: displayName)
            case EACCES: throw .targetNotExecutable(path: displayName)
            case ENOEXEC: throw .targetNotAProgram(path: displayName)
            default: throw .targetSpawnFailed(path: displayName, errno: result)
            }
        }
        forwardingTarget.store(pid, ordering: .releasing)
        for signalNumber in forwardedSignals {
            signal(signalNumber) { received in
                let target = forwardingTarget.load(ordering: .acquiring)
                if target > 0 { kill(target, received) }
                _ = forwardedSignal.compareExchange(expected: 0, desired: received, ordering: .relaxed)
            }
        }
        return TargetProcess(pid: pid, executablePath: executablePath, endDescriptor: leakaudit_host_pidfd_open(pid))
    }

    /// A malloc'ed NUL-terminated copy of `bytes`, for argv (free it).
    private static func cString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar>? {
        guard let copy = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
        bytes.withUnsafeBytes { source in
            if let start = source.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: start, byteCount: bytes.count) }
        }
        copy[bytes.count] = 0
        return copy
    }

    var receivedSignal: Int32? {
        let signal = forwardedSignal.load(ordering: .relaxed)
        return signal == 0 ? nil : signal
    }

    func send(_ signal: Int32) {
        stopSent.store(true, ordering: .relaxed)
        kill(pid, signal)
    }

    func pause(microseconds: UInt32) {
        if endDescriptor >= 0 {
            _ = leakaudit_host_wait_readable(endDescriptor, microseconds)
        } else {
            usleep(microseconds)
        }
    }

    func hasEnded(process pid: Int32) -> Bool {
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        // A zombie still answers kill: its state, after "pid (comm)", is Z.
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var stat = [UInt8](repeating: 0, count: 512)
        let count = read(descriptor, &stat, stat.count)
        guard count > 0, let nameEnd = stat[..<count].lastIndex(of: UInt8(ascii: ")")), nameEnd + 2 < count else {
            return false
        }
        return stat[nameEnd + 2] == UInt8(ascii: "Z")
    }

    /// Returns the outcome if the target has ended, without waiting; reaps it.
    func poll() -> TargetOutcome? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        guard result == pid else { return nil }
        // A stop of a thread leak-audit traced for a heap walk is not the target's end.
        if status & 0xFF == 0x7F { return nil }
        if endDescriptor >= 0 { close(endDescriptor) }
        forwardingTarget.store(0, ordering: .releasing)
        // A signal or --timeout stopped the run: the signal reached the target only, and what the
        // target started in another process group (swift test's test bundle), or left behind when
        // it ended, would run on after leak-audit. It is killed before the report is written.
        if forwardedSignal.load(ordering: .relaxed) != 0 || stopSent.load(ordering: .relaxed) {
            ProcessGuard.killDescendants()
        }
        for signalNumber in Self.forwardedSignals { ProcessGuard.endOn(signalNumber) }
        let terminatingSignal = status & 0x7F
        return terminatingSignal == 0 ? .exited(code: (status >> 8) & 0xFF) : .signaled(signal: terminatingSignal)
    }
}
