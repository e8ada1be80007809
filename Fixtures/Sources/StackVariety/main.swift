// One thread allocates one type from different stacks in turn: two call sites, two depths of one
// recursion, and recursions deeper than the deepest capture (48 frames). Each stack must be
// counted apart, except the deep ones, alike over their first 48 frames, which count together.
// The stacks follow each other so that every way a stack can differ from the one before (at its
// first frame, in its middle, past the deepest capture) is taken. The clean twin lets each session
// go as soon as it is made. With the argument `flood`, it first makes and lets go 262,144 sessions,
// each from a stack of its own (more than the shim's first stack table holds), then keeps the
// sessions the leaky run keeps: their stacks must still be recorded.
import LeakMonitor

final class Session: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

/// Frames below each allocation, so that every level of a recursion keeps its own frame.
nonisolated(unsafe) var levels = 0

@inline(never) func openFromMenu() -> Session { Session() }

@inline(never) func openFromLink() -> Session { Session() }

@inline(never) func openNested(_ depth: Int) -> Session {
    let session = depth == 0 ? Session() : openNested(depth - 1)
    levels += 1  // after the call: no tail call, whatever the optimizer
    return session
}

/// A session from one of 2^depth stacks, which `path`'s low `depth` bits choose: each level calls
/// the next from one of two lines.
@inline(never) func openBranch(_ path: Int, _ depth: Int) -> Session {
    guard depth > 0 else { return Session() }
    let session: Session
    if (path >> (depth - 1)) & 1 == 0 {
        session = openBranch(path, depth - 1)
    } else {
        session = openBranch(path, depth - 1)
    }
    levels += 1
    return session
}

if CommandLine.arguments.dropFirst().first == "flood" {
    for path in 0..<(1 << 18) { _ = openBranch(path, 18) }
}
let leaky = CommandLine.arguments.dropFirst().first != "clean"
var kept: [Session] = []
var opened = 0
func keep(_ session: Session) {
    opened += 1
    if leaky { kept.append(session) }
}
for round in 0..<3 {
    keep(openFromMenu())
    if round < 2 { keep(openFromLink()) }
    keep(openNested(3))
    keep(openNested(4))
    keep(openNested(60))
    keep(openNested(61))
    keep(openNested(3))
}
print("StackVariety: opened \(opened) sessions")
