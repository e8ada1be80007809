// Objects the optimizer frees where it made them (issue: a Swift Testing process's heap "was not
// understood"). A value made and dropped in one function, never escaping, is not released: the
// compiled code runs its deinit's body inline and frees it with swift_deallocClassInstance, and no
// destroy word is read. Put on the stack when it can be; here it cannot, as its size is only known
// at run time (its header is an optional task reference, a type of the concurrency library whose
// size its module keeps to itself), so it is a heap object that dies unseen by a destroy hook.
// Each such buffer's block is then taken by untyped memory, as a process's other allocations take
// it, and a ledger that missed the deaths names blocks that hold no object.
//
//   InlinedDeaths clean   64 task references, each made as its type's initializer does (a default
//                         lock dropped at once for the one kept), then all dropped: no lock is
//                         alive at exit and nothing is unreachable
//   InlinedDeaths leaky   the same, and a Node cycle that nothing reaches: that cycle is reported
import Glibc

/// glibc's malloc_usable_size (in malloc.h, which the Glibc module leaves out).
@_silgen_name("malloc_usable_size") func mallocUsableSize(_ block: UnsafeMutableRawPointer?) -> Int

/// A value behind a lock, in one block: a ManagedBuffer whose header is the value and whose
/// element is the mutex (the deinit destroys it, so the death has an effect and is not removed).
struct Locked<Value>: @unchecked Sendable {
    private final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit { withUnsafeMutablePointerToElements { _ = pthread_mutex_destroy($0) } }
    }

    private var storage: ManagedBuffer<Value, pthread_mutex_t>

    init(rawValue: Value) {
        storage = Storage.create(minimumCapacity: 1, makingHeaderWith: { _ in rawValue })
        storage.withUnsafeMutablePointerToElements { _ = pthread_mutex_init($0, nil) }
    }

    /// The value, read under the lock.
    var value: Value {
        storage.withUnsafeMutablePointers { value, lock in
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            return value.pointee
        }
    }

    /// The usable size of the buffer's malloc block.
    var blockSize: Int { mallocUsableSize(Unmanaged.passUnretained(storage).toOpaque()) }
}

extension Locked where Value: ExpressibleByNilLiteral {
    init() { self.init(rawValue: nil) }
}

/// The current task, if any: none here, read where the optimizer cannot see it.
@inline(never) func currentTask() -> UnsafeCurrentTask? { withUnsafeCurrentTask { $0 } }

/// A property with a default value that the initializer replaces: the default lock is made and
/// dropped inside the initializer.
struct TaskReference {
    private var task = Locked<UnsafeCurrentTask?>()

    init() {
        let current = currentTask()
        task = Locked(rawValue: current)
    }

    var hasTask: Bool { task.value != nil }
    var blockSize: Int { task.blockSize }
}

final class Node {
    var next: Node?
}

@inline(never) func makeCycle() {
    let first = Node()
    let second = Node()
    first.next = second
    second.next = first
}

let leaky = CommandLine.arguments.dropFirst().first == "leaky"
var references: [TaskReference] = []
var untyped: [UnsafeMutableRawPointer] = []
for _ in 0..<64 {
    let reference = TaskReference()
    references.append(reference)
    // The block the dropped lock just left, taken by memory that is no object.
    if let block = malloc(reference.blockSize) { untyped.append(block) }
}
print("\(references.count) task references, \(references.filter(\.hasTask).count) with a task, \(untyped.count) blocks")
// Every lock is gone now, the kept ones released the usual way: none is alive at exit.
references.removeAll()
if leaky { makeCycle() }
