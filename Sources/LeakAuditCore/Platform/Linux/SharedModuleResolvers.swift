import CLibDW
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The opened modules of every symbolizer that leak-audit makes (`LinuxPlatform.makeSymbolizer`),
/// by file, for the life of leak-audit: a test bundle that a run starts twice (`swift test`'s
/// XCTest and Swift Testing passes) is opened and indexed once, and a process's program can be
/// indexed in the background while the process runs (`prepare`), rather than after the run, when
/// the report waits for it. Resolvers work at link-time addresses, so every process's copy of a
/// file shares one.
final class SharedModuleResolvers: Sendable {
    /// The one leak-audit's symbolizers share.
    static let process = SharedModuleResolvers()

    /// A file as it is now: a file replaced during the run (a rebuild) is another one.
    private struct Key: Hashable {
        var path: String
        var buildID: [UInt8]
        var separateDebugInfo: Bool
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int

        init?(_ image: ModuleImage, separateDebugInfo: Bool) {
            var info = stat()
            guard stat(image.path, &info) == 0 else { return nil }
            path = image.path
            buildID = image.buildID
            self.separateDebugInfo = separateDebugInfo
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modifiedSeconds = info.st_mtim.tv_sec
            modifiedNanoseconds = info.st_mtim.tv_nsec
        }
    }

    /// A file's resolver, or why it could not be opened; `opening` while a thread opens it.
    private enum Entry {
        case opening(DispatchGroup)
        case opened(Result<Symbolizer.ModuleResolver, SymbolizerError>)
    }

    private let entries = Mutex<[Key: Entry]>([:])
    /// Where `prepare` indexes files, one at a time, below the reader's and the target's priority.
    private let queue = DispatchQueue(label: "leak-audit.module-index", qos: .utility)
    /// What `prepare` was given to do and `queue` has not started: each `first`, which goes ahead
    /// of every index, then the indexes, in the order they came. Each block `queue` runs takes one.
    private let pending = Mutex<(first: [@Sendable () -> Void], indexes: [@Sendable () -> Void])>(([], []))

    /// The resolver of `image`'s file: the one opened already, the one `prepare` is indexing (once
    /// it is done), or one opened now.
    func resolver(
        for image: ModuleImage, separateDebugInfo: Bool, libdw: () -> Result<leakaudit_libdw, SymbolizerError>
    ) -> Result<Symbolizer.ModuleResolver, SymbolizerError> {
        guard let key = Key(image, separateDebugInfo: separateDebugInfo) else {
            return Self.open(image, separateDebugInfo: separateDebugInfo, libdw: libdw)
        }
        while true {
            let group = DispatchGroup()
            let entry = entries.withLock { entries -> Entry? in
                if let entry = entries[key] { return entry }
                group.enter()
                entries[key] = .opening(group)
                return nil
            }
            switch entry {
            case .opened(let result)?:
                return result
            case .opening(let other)?:
                other.wait()
            case nil:
                let result = Self.open(image, separateDebugInfo: separateDebugInfo, libdw: libdw)
                entries.withLock { $0[key] = .opened(result) }
                group.leave()
                return result
            }
        }
    }

    /// Opens `image`'s file and builds its indexes on a background thread, unless it is opened or
    /// being opened already; runs `first` there too, ahead of every index not started yet (the
    /// heap walk's reads of the process's files, which a walk at exit waits for while the process
    /// is stopped, rather than behind the indexes of files heard earlier).
    func prepare(
        _ image: ModuleImage, separateDebugInfo: Bool,
        libdw: @escaping @Sendable () -> Result<leakaudit_libdw, SymbolizerError>,
        first: @escaping @Sendable () -> Void = {}
    ) {
        guard let key = Key(image, separateDebugInfo: separateDebugInfo) else { return }
        let group = DispatchGroup()
        let claimed = entries.withLock { entries in
            guard entries[key] == nil else { return false }
            group.enter()
            entries[key] = .opening(group)
            return true
        }
        guard claimed else { return }
        pending.withLock {
            $0.first.append(first)
            $0.indexes.append {
                let result = Self.open(image, separateDebugInfo: separateDebugInfo, libdw: libdw)
                if case .success(let resolver) = result { resolver.prepare() }
                self.entries.withLock { $0[key] = .opened(result) }
                group.leave()
            }
        }
        for _ in 0..<2 { queue.async { self.runNextPending() } }
    }

    /// Runs the first piece of pending work: a `first`, else an index.
    private func runNextPending() {
        let next = pending.withLock { pending -> (@Sendable () -> Void)? in
            if !pending.first.isEmpty { return pending.first.removeFirst() }
            return pending.indexes.isEmpty ? nil : pending.indexes.removeFirst()
        }
        next?()
    }

    private static func open(
        _ image: ModuleImage, separateDebugInfo: Bool, libdw: () -> Result<leakaudit_libdw, SymbolizerError>
    ) -> Result<Symbolizer.ModuleResolver, SymbolizerError> {
        Result { () throws(SymbolizerError) in
            try Symbolizer.ModuleResolver.open(image, separateDebugInfo: separateDebugInfo, dw: libdw().get())
        }
    }
}
