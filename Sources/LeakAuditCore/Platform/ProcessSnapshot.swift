import LeakAuditFiles
import LeakAuditModel

/// A copy of a stopped process: its memory regions, threads and their registers, taken while every
/// thread was stopped, so that its heap can be walked after the process ran on (docs/retainers.md).
/// Addresses are the process's own.
struct ProcessSnapshot {
    /// A mapped region, as /proc/<pid>/maps lists it, with what was copied of it.
    struct Region {
        /// First address of the mapping.
        var start: UInt64
        /// One past its last address.
        var end: UInt64
        var isWritable: Bool
        var isExecutable: Bool
        /// The mapped file's path, a kernel name such as `[heap]` or `[stack]`, or empty for
        /// anonymous memory.
        var path: String
        /// Where the mapping starts in its file.
        var fileOffset: UInt64 = 0
        /// The mapped file's inode, as /proc/<pid>/maps lists it (0: none), so that a file
        /// replaced since it was mapped is not read in its place.
        var inode: UInt64 = 0
        /// The address of `bytes[0]`: a thread's stack is copied from its stack pointer up.
        var copiedStart: UInt64
        /// The copied bytes: empty when the region was not copied (device mappings).
        var bytes: RegionBytes

        /// The copied part's end.
        var copiedEnd: UInt64 { copiedStart + UInt64(bytes.count) }
    }

    /// A thread, stopped.
    struct Thread {
        var id: Int32
        /// Its name (/proc/<pid>/task/<tid>/comm).
        var name: String
        var instructionPointer: UInt64
        var stackPointer: UInt64
        var framePointer: UInt64
        /// Where its thread-local storage is (x86_64 fs_base).
        var threadPointer: UInt64
        /// Every general-purpose register.
        var registers: [UInt64]
    }

    var pid: Int32
    /// Sorted by start address, not overlapping.
    var regions: [Region]
    var threads: [Thread]
    /// How long the process was stopped while it was copied, in nanoseconds (0: not measured).
    var stoppedNanoseconds: UInt64 = 0

    /// How many bytes of writable memory the copy holds: where every object lies.
    var writableBytes: Int { regions.reduce(0) { $0 + ($1.isWritable ? $1.bytes.count : 0) } }

    /// The copied region holding `address`, by binary search.
    func regionIndex(containing address: UInt64) -> Int? {
        var low = 0
        var high = regions.count
        while low < high {
            let middle = (low + high) / 2
            if regions[middle].end <= address {
                low = middle + 1
            } else {
                high = middle
            }
        }
        guard low < regions.count, regions[low].start <= address, address < regions[low].end else { return nil }
        return low
    }
}

/// Why a process's memory could not be copied, for the report.
enum SnapshotFailure: Error, Equatable {
    /// The kernel refused to let leak-audit trace the process (ptrace): `detail` says how to allow it.
    case notPermitted(detail: String)
    /// The process ended before it could be stopped.
    case processGone
    /// Another system call failed.
    case failed(call: String, errno: Int32)
    /// A thread did not stop within the copy's time (blocked where it cannot stop, such as a
    /// parent waiting for its vfork child to exec): its stack and registers, roots, were not read.
    case threadDidNotStop(thread: Int32, milliseconds: Int32)
    /// The pid the channel named is no process leak-audit started (not the target nor one of its
    /// descendants): it was neither stopped nor read.
    case notStartedByLeakAudit

    /// One line for the report.
    var message: String {
        switch self {
        case .notPermitted(let detail): "leak-audit may not stop the process to copy its memory (\(detail))"
        case .processGone: "the process ended before its memory could be copied"
        case .failed(let call, let errno): "\(call) failed (\(systemErrorMessage(errno)))"
        case .threadDidNotStop(let thread, let milliseconds):
            "its thread \(thread) did not stop within \(milliseconds) ms (blocked where it cannot stop), so its roots could not be read"
        case .notStartedByLeakAudit:
            "the pid its process record names is not the target's nor a descendant's, so leak-audit did not stop or read it"
        }
    }
}

/// A region's bytes, owned: copied out of the process (malloc'd), or, for code and read-only data
/// that the loader never writes, the mapped file itself (the page cache's pages, not a copy).
final class RegionBytes {
    let buffer: UnsafeRawBufferPointer
    private let release: (UnsafeRawBufferPointer) -> Void
    /// The byte ranges of `buffer` that were copied, in order, when only those were (the rest
    /// reads as zeros, as it did in the process); nil: any of it may hold data.
    var writtenRanges: [Range<Int>]? = nil

    var count: Int { buffer.count }
    var isEmpty: Bool { buffer.isEmpty }

    /// No bytes.
    init() {
        buffer = UnsafeRawBufferPointer(start: nil, count: 0)
        release = { _ in }
    }

    /// Takes ownership of `buffer`; `release` frees it.
    init(_ buffer: UnsafeRawBufferPointer, release: @escaping (UnsafeRawBufferPointer) -> Void) {
        self.buffer = buffer
        self.release = release
    }

    /// A copy of `bytes` (for tests and small regions).
    convenience init(copying bytes: [UInt8]) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
        storage.copyBytes(from: bytes)
        self.init(UnsafeRawBufferPointer(storage)) { $0.deallocate() }
    }

    deinit { release(buffer) }
}
