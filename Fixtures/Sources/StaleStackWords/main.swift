import CStaleStack
import Foundation
import LeakMonitor

/// A model a transfer keeps while it waits: one at a time.
final class TransferViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
    func finish() {}
}

/// Runs on its own thread: the model lives in this function's frame until the transfer's pipe
/// says it is done, and is gone before `done` says so. A call before the wait leaves the model's
/// address in the stack below this frame, where the wait's frame then lies: stale words of a
/// returned call, not a holder.
func transferLoop(reading descriptor: Int32, started: DispatchSemaphore, done: DispatchSemaphore) {
    do {
        let model = TransferViewModel()
        started.signal()
        stale_stack_scribble(Unmanaged.passUnretained(model).toOpaque())
        stale_stack_wait(descriptor)
        model.finish()
    }
    done.signal()
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
var writers: [Int32] = []
let done = DispatchSemaphore(value: 0)
for _ in 0..<3 {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { fatalError("pipe failed") }
    writers.append(ends[1])
    let started = DispatchSemaphore(value: 0)
    let reader = ends[0]
    Thread { transferLoop(reading: reader, started: started, done: done) }.start()
    started.wait()
    // Leaky: each transfer never ends, and the next screen starts another.
    if !leaky {
        close(ends[1])
        done.wait()
    }
}
// Time for the last transfer's thread to reach its wait.
usleep(50_000)
