// A process that writes into leak-audit's channel what LeakMonitor never would: records naming
// types never defined, random bytes, a `next_slot` near 2^64, a type id near 2^32, 2^64 - 1
// dropped records. It links no LeakMonitor and forges the header's "attached" fields, as any
// process of the same user could. leak-audit must neither crash nor hang, and must never call
// such a run clean. The mode is the first argument; offsets are docs/record-format.md's.
import Glibc

let mode = CommandLine.arguments.dropFirst().first ?? "unknown-types"
guard let spec = getenv("LEAK_AUDIT_CHANNEL").map({ String(cString: $0) }),
    let colon = spec.firstIndex(of: ":")
else {
    print("HostileWriter: no LEAK_AUDIT_CHANNEL")
    exit(0)
}
let path = "/proc/\(spec[..<colon])/fd/\(spec[spec.index(after: colon)...])"
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

/// Reserves `count` slots as a writer would, and returns the first.
func reserve(_ count: UInt64) -> UInt64 {
    let first = load(UInt64.self, at: nextSlotOffset)
    store(first + count, at: nextSlotOffset)
    return first
}

// Looks attached and instrumented, as a LeakMonitor process would after attaching.
store(getpid(), at: attachedPIDOffset)
store(UInt32(1), at: attachedProcessesOffset)
store(load(UInt32.self, at: flagsOffset) | 1 | (1 << 7), at: flagsOffset)

let allocKind: UInt64 = 1
switch mode {
case "unknown-types":
    // 100 allocations of type 7, which no record defines.
    let first = reserve(100)
    for index in 0..<UInt64(100) { writeSlot(first + index, tag: allocKind | (7 << 32), 0x1000 + index * 16, 0, 0) }
case "huge-type-id":
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
