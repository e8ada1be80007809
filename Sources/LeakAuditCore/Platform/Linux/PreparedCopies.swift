import Dispatch
import Synchronization

/// The memory the copies of processes about to end will be made in, made ahead: when a process
/// first waits at its end (its last tests' grace periods: `Reception.receive`'s `processEnding`),
/// on another thread, while the process waits. Its walk at exit then copies into memory made
/// already (`ProcessCopier.prepare`: its anonymous mappings'): making it (zeroed pages, mapped
/// one by one) was most of the copy's time on GraphQL's suite, after the grace period. The walk
/// at exit's copy takes its process's preparation (waiting for it if it is under way); a mapping
/// changed since is made anew then.
///
/// One process's at a time: memory held for a process whose walk never came (its last tests'
/// instances were released within their grace periods) is given back when the next process
/// waits at its end (a test bundle's Swift Testing pass after its XCTest pass), and when the run
/// ends (`discard`). Of two processes that end together, the later one's is kept.
final class PreparedCopies: Sendable {
    /// The one store of this leak-audit process: the platform's copies find it.
    static let process = PreparedCopies()

    /// One process's memory, made on another thread: `destinations` is written before `done`
    /// is signalled, and read after it was waited for. One dropped (`cancelled`) stops being made
    /// at its next mapping.
    private final class Preparation: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        let cancelled = Atomic<Bool>(false)
        var destinations: [Range<UInt64>: ProcessCopier.Destination] = [:]
    }

    /// The preparation not taken yet, and its process.
    private let waiting = Mutex<(pid: Int32, preparation: Preparation)?>(nil)

    /// Starts making the memory a copy of `pid` will be made in, in place of any other
    /// preparation.
    func prepare(_ pid: Int32) {
        let preparation = Preparation()
        let dropped = waiting.withLock { waiting in
            defer { waiting = (pid, preparation) }
            return waiting?.preparation
        }
        // Released outside the lock: one dropped while it is made stops, and is freed once done.
        dropped?.cancelled.store(true, ordering: .releasing)
        DispatchQueue.global(qos: .userInitiated).async {
            preparation.destinations = ProcessCopier.prepare(pid) { preparation.cancelled.load(ordering: .acquiring) }
            preparation.done.signal()
        }
    }

    /// The memory made for a copy of `pid`, given once; empty when none was prepared.
    func take(_ pid: Int32) -> [Range<UInt64>: ProcessCopier.Destination] {
        let taken = waiting.withLock { waiting -> Preparation? in
            guard let (waitingPID, preparation) = waiting, waitingPID == pid else { return nil }
            waiting = nil
            return preparation
        }
        guard let taken else { return [:] }
        taken.done.wait()
        return taken.destinations
    }

    /// Gives back the memory of the preparation not taken.
    func discard() {
        let dropped = waiting.withLock { waiting in
            defer { waiting = nil }
            return waiting?.preparation
        }
        dropped?.cancelled.store(true, ordering: .releasing)
    }
}
