// A thread that cannot stop while it spawns, for a heap walk's copy (ProcessCopierTests): it
// posix_spawns /bin/true with the FIFO named by the first argument opened first (a file action),
// so it waits in the spawn's vfork, where no signal or ptrace interrupt stops it, until a writer
// opens the FIFO; the main thread waits for it. It links no LeakMonitor: it runs alone.
//
//   SpawnBlocked FIFO

import Foundation

/// A posix_spawn of /bin/true that opens `fifo` for reading first, in the child, while the
/// spawning thread waits in the vfork until the child execs.
final class BlockedSpawn: @unchecked Sendable {
    let fifo: String
    let done = DispatchSemaphore(value: 0)
    /// posix_spawn's result and the child's wait status, written before `done` is signalled.
    var result: Int32 = -1
    var status: Int32 = -1

    init(fifo: String) { self.fifo = fifo }

    func run() {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 0, fifo, O_RDONLY, 0)
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        var child: pid_t = 0
        result = posix_spawn(&child, "/bin/true", &actions, nil, arguments, environ)
        if result == 0 { waitpid(child, &status, 0) }
        posix_spawn_file_actions_destroy(&actions)
        done.signal()
    }
}

guard CommandLine.arguments.count > 1 else {
    print("usage: SpawnBlocked FIFO")
    exit(64)
}
let spawn = BlockedSpawn(fifo: CommandLine.arguments[1])
Thread.detachNewThread { spawn.run() }
print("SpawnBlocked: spawning with the FIFO opened first, pid \(getpid())")
fflush(stdout)
spawn.done.wait()
print("SpawnBlocked: the spawn returned \(spawn.result), its child ended with status \(spawn.status)")
