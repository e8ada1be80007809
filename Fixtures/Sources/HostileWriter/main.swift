// A process that writes into leak-audit's channel what LeakMonitor never would: records naming
// types never defined, random bytes, a `next_slot` near 2^64, a type id near 2^32, 2^64 - 1
// dropped records, a module that is a FIFO, stacks deeper than any capture and names as long as
// it likes (`deep-stacks`); a truncation of the channel, its header written over or zeroed, a type
// defined again, records of process indexes that never announced themselves, slots reserved and
// never written, a walk request naming another process; and a slot written seconds after it was
// reserved (`slow-writer`), which is no damage. It links no LeakMonitor and forges the header's
// "attached" fields, as any process of the same user could. leak-audit must neither crash nor
// hang, must never call such a run clean, and must keep what it had decoded. The mode is the
// first argument; offsets are docs/record-format.md's (docs/reliability.md lists every mode and
// what leak-audit does).
import Glibc

let mode = CommandLine.arguments.dropFirst().first ?? "unknown-types"
guard let spec = getenv("LEAK_AUDIT_CHANNEL").map({ String(cString: $0) }),
    let colon = spec.firstIndex(of: ":")
else {
    print("HostileWriter: no LEAK_AUDIT_CHANNEL")
    exit(0)
}
// "<pid>:<fd>:<token>": the token guards LeakMonitor against a variable of another run; a process
// that opens the memfd itself needs none.
let path = "/proc/\(spec[..<colon])/fd/\(spec[spec.index(after: colon)...].prefix { $0 != ":" })"
let descriptor = open(path, O_RDWR)
guard descriptor >= 0, let page = mmap(nil, 4096, PROT_READ, MAP_SHARED, descriptor, 0), page != MAP_FAILED else {
    print("HostileWriter: cannot open \(path)")
    exit(0)
}
let capacity = page.load(fromByteOffset: 16, as: UInt64.self)
let length = 4096 + Int(capacity) * 32
guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), base != MAP_FAILED else {
    print("HostileWriter: cannot map the ring")
    exit(0)
}

/// Header fields, by offset.
func store<T>(_ value: T, at offset: Int) { base.storeBytes(of: value, toByteOffset: offset, as: T.self) }
func load<T>(_ type: T.Type, at offset: Int) -> T { base.load(fromByteOffset: offset, as: T.self) }
let nextSlotOffset = 24
let flagsOffset = 32
let attachedPIDOffset = 36
let droppedOffset = 40
let attachedProcessesOffset = 60

/// Writes slot `index` of the ring: words 1...3, then the tag.
func writeSlot(_ index: UInt64, tag: UInt64, _ w1: UInt64, _ w2: UInt64, _ w3: UInt64) {
    let slot = base + 4096 + Int(index & (capacity - 1)) * 32
    slot.storeBytes(of: w1, toByteOffset: 8, as: UInt64.self)
    slot.storeBytes(of: w2, toByteOffset: 16, as: UInt64.self)
    slot.storeBytes(of: w3, toByteOffset: 24, as: UInt64.self)
    slot.storeBytes(of: tag, toByteOffset: 0, as: UInt64.self)
}

let consumedOffset = 48

/// Reserves `count` slots as a writer would, waiting for room while leak-audit reads, and returns
/// the first.
func reserve(_ count: UInt64) -> UInt64 {
    while load(UInt64.self, at: nextSlotOffset) &+ count &- load(UInt64.self, at: consumedOffset) > capacity,
        count <= capacity
    {
        usleep(1000)
    }
    let first = load(UInt64.self, at: nextSlotOffset)
    store(first + count, at: nextSlotOffset)
    return first
}

// Looks attached and instrumented, as a LeakMonitor process would after attaching.
store(getpid(), at: attachedPIDOffset)
store(UInt32(1), at: attachedProcessesOffset)
store(load(UInt32.self, at: flagsOffset) | 1 | (1 << 7), at: flagsOffset)

/// Writes a blob as LeakMonitor's writer does: continuations first, then the head; `process` is
/// the process index in the head's tag bits 16–23.
func writeBlob(kind: UInt64, id: UInt64, value: UInt64, payload: [UInt8], process: UInt64 = 0) {
    let continuations = (payload.count + 23) / 24
    let first = reserve(UInt64(1 + continuations))
    for index in 0..<continuations {
        var chunk = [UInt8](repeating: 0, count: 24)
        let bytes = payload[(index * 24)..<Swift.min(payload.count, index * 24 + 24)]
        chunk.replaceSubrange(0..<bytes.count, with: bytes)
        let words = chunk.withUnsafeBytes { raw in (0..<3).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self) } }
        // A continuation's bits 8–31 are its place in the blob: no process index.
        writeSlot(first + 1 + UInt64(index), tag: 4 | (UInt64(index + 1) << 8), words[0], words[1], words[2])
    }
    writeSlot(
        first, tag: 3 | (kind << 8) | (process << 16) | (UInt64(1 + continuations) << 32), id, UInt64(payload.count), value)
}

/// The little-endian bytes of `value`.
func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

let allocKind: UInt64 = 1
let deallocKind: UInt64 = 2
let consumedSlotOffset = 48

/// This process's own record, which every process writes first: its pid (or `pid`) and command line.
func announce(pid: Int32 = getpid(), process: UInt64 = 0) {
    writeBlob(kind: 5, id: UInt64(UInt32(bitPattern: pid)), value: 0, payload: Array("HostileWriter".utf8), process: process)
}

/// A type whose budget is declared in code, as MemoryLeakMonitor.validate registers it.
func defineType(id: UInt64 = 0, name: String = "Hostile.Thing", max: Int64 = 1, process: UInt64 = 0) {
    writeBlob(
        kind: 1, id: id, value: UInt64(bitPattern: max), payload: bytes(UInt32(0)) + bytes(UInt32(0)) + Array(name.utf8),
        process: process)
}

/// Three instances of type 0 allocated and one freed: a peak of 3, 2 alive at exit.
func allocateThree() {
    let first = reserve(4)
    for index in UInt64(0)..<3 { writeSlot(first + index, tag: allocKind, 0x1000 + index * 16, UInt64(UInt32.max), 0) }
    writeSlot(first + 3, tag: deallocKind, 0x1000, 0, 0)
}

/// Waits, up to 20 s, until leak-audit has read every slot reserved so far.
func awaitReader() -> Bool {
    for _ in 0..<20_000 {
        if load(UInt64.self, at: consumedSlotOffset) >= load(UInt64.self, at: nextSlotOffset) { return true }
        usleep(1_000)
    }
    return false
}

switch mode {
case "truncate":
    // A type over budget, then the channel truncated to nothing, and to one page with one more
    // record: leak-audit's channel is sealed against shrinking, so both are refused.
    announce()
    defineType()
    allocateThree()
    let toNothing = ftruncate(descriptor, 0) == 0 ? "done" : String(cString: strerror(errno))
    let toOnePage = ftruncate(descriptor, 4096) == 0 ? "done" : String(cString: strerror(errno))
    print("HostileWriter: truncation to 0 bytes: \(toNothing); to one page: \(toOnePage)")
    let next = reserve(1)
    writeSlot(next, tag: allocKind, 0x2000, UInt64(UInt32.max), 0)
case "header-random", "header-zeroed":
    // A type over budget, read by leak-audit; then the header page covered with random words, or
    // its flags and attached fields zeroed, as any process of the same user may.
    announce()
    defineType()
    allocateThree()
    guard awaitReader() else {
        print("HostileWriter: leak-audit read nothing")
        exit(1)
    }
    if mode == "header-zeroed" {
        store(UInt32(0), at: flagsOffset)
        store(Int32(0), at: attachedPIDOffset)
        store(UInt32(0), at: attachedProcessesOffset)
    } else {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for offset in stride(from: 0, to: 4096, by: 8) {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            store(state, at: offset)
        }
    }
case "redefine":
    // The type defined again after its instances: another name, a budget of 1,000.
    announce()
    defineType()
    allocateThree()
    defineType(name: "Hostile.Other", max: 1_000)
case "unannounced":
    // Records for process indexes 1 to 255, none of which wrote its process record.
    announce()
    for process in UInt64(1)...255 {
        defineType(name: "Forged.Type\(process)", max: 0, process: process)
        let slot = reserve(1)
        writeSlot(slot, tag: allocKind | (process << 16), 0x1000, UInt64(UInt32.max), 0)
    }
case "cut-short":
    // 524,298 slots reserved and never written, then a normal exit.
    announce()
    store(load(UInt64.self, at: nextSlotOffset) + 524_298, at: nextSlotOffset)
case "empty-reservation":
    // A whole ring reserved and left empty, as a writer that died mid-record would leave it; then
    // 1,000 more records, each waiting for room as a writer does.
    announce()
    defineType(max: 1_000)
    _ = reserve(capacity)
    for index in UInt64(0)..<1_000 {
        let slot = reserve(1)
        var waited = 0
        while slot >= load(UInt64.self, at: consumedSlotOffset) + capacity {
            waited += 1
            if waited > 60_000 {
                print("HostileWriter: waited 60 s for room")
                exit(1)
            }
            usleep(1_000)
        }
        writeSlot(slot, tag: allocKind, 0x10_0000 + index * 16, UInt64(UInt32.max), 0)
    }
case "slow-writer":
    // `slow-writer PROGRAM`: a type of budget 1 and two instances; PROGRAM (a process that
    // attaches and ends: another attached process) run to its end and read by leak-audit; then a
    // slot reserved, and the third instance written into it 3 s later. A writer held between
    // reserving and committing, as a loaded machine or a stop holds one, after another process of
    // the run has ended (swift test's Swift Testing run after its XCTest bundle).
    guard CommandLine.arguments.count > 2 else {
        print("HostileWriter: slow-writer needs a program")
        exit(64)
    }
    announce()
    defineType()
    let first = reserve(2)
    for index in UInt64(0)..<2 { writeSlot(first + index, tag: allocKind, 0x1000 + index * 16, UInt64(UInt32.max), 0) }
    var child: pid_t = 0
    let program = CommandLine.arguments[2]
    var argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup("clean"), nil]
    guard posix_spawn(&child, program, nil, nil, &argv, environ) == 0 else {
        print("HostileWriter: cannot start \(program)")
        exit(1)
    }
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    guard awaitReader() else {
        print("HostileWriter: leak-audit read nothing")
        exit(1)
    }
    let held = reserve(1)
    sleep(3)
    writeSlot(held, tag: allocKind, 0x1020, UInt64(UInt32.max), 0)
case "walk-unrelated":
    // A process record naming another process (the second argument), a type over budget, then a
    // heap-walk request at exit (--retainers): leak-audit must not stop or read that process.
    guard CommandLine.arguments.count > 2, let unrelated = Int32(CommandLine.arguments[2]) else {
        print("HostileWriter: walk-unrelated needs a pid")
        exit(64)
    }
    announce(pid: unrelated)
    defineType(max: 0)
    let slot = reserve(1)
    writeSlot(slot, tag: allocKind, 0x1000, UInt64(UInt32.max), 0)
    guard awaitReader() else {
        print("HostileWriter: leak-audit read nothing")
        exit(1)
    }
    let walkOffset = 2048
    store(UInt32(1) | 0x8000_0000, at: walkOffset)
    var answered = false
    for _ in 0..<20_000 where !answered {
        answered = load(UInt32.self, at: walkOffset + 4) == 1
        if !answered { usleep(1_000) }
    }
    print("HostileWriter: walk \(answered ? "answered" : "not answered")")
case "module-fifo":
    // Well-formed records, but the module holding the stack is a FIFO whose name carries a newline
    // and an ANSI escape: symbolizing must neither open it and wait nor print its name raw.
    // In the directory the second argument names (the test removes it).
    let directory = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : "/tmp"
    let fifo = directory + "/lib\n\u{1B}[31mfifo.so"
    guard mkfifo(fifo, 0o600) == 0 else {
        print("HostileWriter: cannot make a FIFO")
        exit(1)
    }
    announce()
    let start: UInt64 = 0x7000_0000
    writeBlob(
        kind: 3, id: 0, value: 0,
        payload: bytes(start) + bytes(start + 0x10000) + bytes(UInt32(0)) + bytes(UInt32(fifo.utf8.count)) + Array(fifo.utf8))
    writeBlob(kind: 1, id: 0, value: 0, payload: bytes(UInt32(0)) + bytes(UInt32(0)) + Array("Hostile.Thing".utf8))
    writeBlob(kind: 2, id: 0, value: 0, payload: bytes(start + 0x100) + bytes(start + 0x200))
    let first = reserve(2)
    for index in UInt64(0)..<2 { writeSlot(first + index, tag: allocKind, 0x1000 + index * 16, 0, 0) }
case "deep-stacks":
    // `deep-stacks TYPES FRAMES [NAME_BYTES]`: TYPES types of max 1 (named `Hostile.TypeN`, padded
    // with `N` to NAME_BYTES), each with two instances alive allocated by a stack of FRAMES return
    // addresses. More than 48 frames is more than any capture writes.
    let arguments = CommandLine.arguments.dropFirst(2).compactMap { Int($0) }
    let types = arguments.first ?? 1
    let frames = arguments.count > 1 ? arguments[1] : 48
    let nameBytes = arguments.count > 2 ? arguments[2] : 0
    announce()
    for type in 0..<types {
        var name = "Hostile.Type\(type)"
        if name.utf8.count < nameBytes { name += String(repeating: "N", count: nameBytes - name.utf8.count) }
        writeBlob(kind: 1, id: UInt64(type), value: 1, payload: bytes(UInt32(0)) + bytes(UInt32(0)) + Array(name.utf8))
        var stack: [UInt8] = []
        stack.reserveCapacity(frames * 8)
        for frame in 0..<frames { stack += bytes(UInt64(0x7000_0000 + (type * 64 + frame % 64) * 16)) }
        writeBlob(kind: 2, id: UInt64(type), value: 0, payload: stack)
        let first = reserve(2)
        for index in UInt64(0)..<2 {
            writeSlot(
                first + index, tag: allocKind | (UInt64(type) << 32), 0x1000_0000 + (UInt64(type) * 2 + index) * 16,
                UInt64(type), 0)
        }
    }
case "unknown-types":
    // 100 allocations of type 7, which no record defines.
    announce()
    let first = reserve(100)
    for index in 0..<UInt64(100) { writeSlot(first + index, tag: allocKind | (7 << 32), 0x1000 + index * 16, 0, 0) }
case "huge-type-id":
    announce()
    let first = reserve(2)
    writeSlot(first, tag: allocKind | (0xFFFF_FFF0 << 32), 0x1000, 0, 0)
    writeSlot(first + 1, tag: 2 | (0xFFFF_FFF1 << 32), 0x1000, 0, 0)
case "huge-next-slot":
    store(UInt64.max - 3, at: nextSlotOffset)
case "dropped-max":
    store(UInt64.max, at: droppedOffset)
case "garbage":
    // A ring of random words, and a random next_slot (a fixed seed: the same bytes each run).
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func random() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
    for index in 0..<capacity { writeSlot(index, tag: random(), random(), random(), random()) }
    store(random(), at: nextSlotOffset)
default:
    print("HostileWriter: unknown mode '\(mode)'")
    exit(64)
}
print("HostileWriter: wrote \(mode)")
