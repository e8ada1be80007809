// Swift objects that look leaked to a tool that does not know where Swift keeps its references,
// and are all reachable at exit: nothing here may be reported unreachable. It never links
// LeakMonitor, and it has no leaky twin (UnreachableShapes has the leaks).
//
//   ReachableHolders [HOLDER]      (default: all)
//
// Every holder keeps cycles (which a walk that missed the holder would call unreachable cycles)
// or objects retained once more than anything typed refers to them (which it would call
// over-retained):
//
//   global-cycle      3 cycles Anchor.partner → Partner.anchor → Anchor in a global array, and a
//                     ring of 3 Neighbors in a global optional
//   opaque-pointers   objects handed to "C" as opaque retained pointers
//                     (`Unmanaged.passRetained(o).toOpaque()`) and held by nothing else: in a
//                     malloc'd block kept by a global raw pointer (2 CallbackBoxes, each in a
//                     cycle with its CallbackTarget); in an `UnsafeMutableRawPointer.allocate`
//                     buffer kept by a global raw pointer (2 CallbackBoxes, no cycle); through C
//                     structs only (a global `iovec` whose base points to a malloc'd array of
//                     `iovec`s whose bases are the opaque pointers of 2 CallbackBoxes); and by an
//                     interior pointer only (the element pointer of a retained ManagedBuffer,
//                     a SampleBuffer, stored in a malloc'd block kept by a global)
//   enum-payloads     Guests, Staff and Owners held only as payloads of a multi-payload enum
//                     (`enum Member { case guest, staff, owner }`: the case is in the pointer's
//                     spare bits) in a global, a global array and a global optional; each Owner
//                     in a cycle with its Staff, which is reached only through `.staff`/`.owner`
//   sleeping-threads  2 threads, each holding a cycle Job.worker → Worker.job → Job in a local
//                     while it waits (one in sleep, one in sem_wait) when main returns; the
//                     process exits with both still waiting
//   collections       a global dictionary of arrays, [String: [Player]], 3 teams of 2 Players,
//                     each Player in a cycle with its Coach; and a global Set<Tag> of 4 Tags, each
//                     in a cycle with its TagOwner
//   closure-queue     a global TimerQueue whose priority queue (a generic struct's array of
//                     `((Int, UInt), () -> Void)` tuples) holds 5 closures, each capturing its
//                     queue `unowned` and a TimerToken by a non-class-bound protocol (an
//                     existential of 40 bytes before it, so the unowned capture's place is
//                     not known without metadata): each token is held by its closure only
//   value-layouts     cycles Keeper.partner → KeeperPartner.keeper → Keeper held only through
//                     values read by their layout: the third word of a 3-word value inline in
//                     an `any Keeping` inside struct elements of a global array, a boxed value's
//                     box, a class instance in the same existential, a global object's struct
//                     property holding one, a tuple payload of a generic struct and a struct
//                     (`.shared(Labelled<Int>, Pin)`) in a global array, a generic class's
//                     property of a generic struct of its argument, and an optional struct
//                     property (7 cycles)
//   tagged-payloads   cycles Keeper.partner → KeeperPartner.keeper → Keeper held only through
//                     the boxes of an indirect enum case (`ShapeKind.object`, its `Facet`'s
//                     `Any?`), laid out as OpenAPIKit30's `JSONSchema.Schema`: the `Any?` makes
//                     the compiler keep the tag in a byte after the payloads, though the enum's
//                     `swift5_mpenum` record lists spare bits (`.counted`'s `Int?` tag byte),
//                     which an `.object` leaves 0, the first case's (`.measure`, a number
//                     where `.object` keeps its box); in a global dictionary's values, one
//                     nested in another's box, a global array and a global object's property
//                     (4 cycles)
//   tail-elements     objects held only as the elements a ManagedBuffer allocates past its
//                     header: 3 Anchor ↔ Partner cycles in a global ManagedBuffer subclass's
//                     elements (a ring buffer: the header counts them, 8 slots), 2 in
//                     `ManagedBuffer<Int, Anchor?>` itself, and 3 Payloads (each holding a cycle)
//                     yielded to an `AsyncStream` that nothing iterates: the stream and its
//                     continuation, in a global, keep them in the concurrency library's deque, a ManagedBuffer too
//                     (swift-otel's tracer keeps the spans it starts so when its service never
//                     runs)
//   all               every holder above
//
// Prints one line when done and exits 0.

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    fputs("ReachableHolders: \(message)\n", stderr)
    exit(64)
}

let holders = [
    "global-cycle", "opaque-pointers", "enum-payloads", "sleeping-threads", "collections", "closure-queue", "value-layouts",
    "tagged-payloads", "tail-elements",
]
let usage = "usage: ReachableHolders [\((holders + ["all"]).joined(separator: "|"))]"
let arguments = Array(CommandLine.arguments.dropFirst())
let chosen = arguments.first ?? "all"
guard arguments.count <= 1, chosen == "all" || holders.contains(chosen) else { fail(usage) }

// MARK: - global-cycle

final class Anchor {
    var partner: Partner?
}

final class Partner {
    var anchor: Anchor?
}

final class Neighbor {
    var next: Neighbor?
}

var anchors: [Anchor] = []
var ring: Neighbor? = nil

@inline(never)
func holdGlobalCycles() -> String {
    for _ in 0..<3 {
        let anchor = Anchor()
        let partner = Partner()
        anchor.partner = partner
        partner.anchor = anchor
        anchors.append(anchor)
    }
    let first = Neighbor()
    let second = Neighbor()
    let third = Neighbor()
    first.next = second
    second.next = third
    third.next = first
    ring = first
    return "3 anchor cycles and a ring of 3 in globals"
}

// MARK: - opaque-pointers

/// What a C callback's context pointer usually is: an object the C side keeps and hands back.
final class CallbackBox {
    let id: Int
    var target: CallbackTarget?
    init(id: Int) { self.id = id }
}

final class CallbackTarget {
    var box: CallbackBox?
}

final class SampleBuffer: ManagedBuffer<Int, Double> {}

/// A malloc'd block of two opaque retained pointers.
var mallocBlock: UnsafeMutableRawPointer? = nil
/// An `UnsafeMutableRawPointer.allocate` buffer of two opaque retained pointers.
var rawBuffer: UnsafeMutableRawPointer? = nil
/// A C struct whose base points to a malloc'd array of two `iovec`s, whose bases are opaque
/// retained pointers.
var vector = iovec()
/// A malloc'd block holding the element pointer of a retained SampleBuffer, and nothing else.
var samplesBlock: UnsafeMutableRawPointer? = nil

func opaqueRetained(_ object: AnyObject) -> UnsafeMutableRawPointer {
    Unmanaged.passRetained(object).toOpaque()
}

@inline(never)
func holdOpaquePointers() -> String {
    guard let block = malloc(2 * MemoryLayout<UnsafeMutableRawPointer>.stride) else { fail("malloc failed") }
    for index in 0..<2 {
        let box = CallbackBox(id: index)
        let target = CallbackTarget()
        box.target = target
        target.box = box
        block.storeBytes(
            of: opaqueRetained(box), toByteOffset: index * MemoryLayout<UnsafeMutableRawPointer>.stride,
            as: UnsafeMutableRawPointer.self)
    }
    mallocBlock = block

    let buffer = UnsafeMutableRawPointer.allocate(
        byteCount: 2 * MemoryLayout<UnsafeMutableRawPointer>.stride, alignment: MemoryLayout<UnsafeMutableRawPointer>.alignment)
    for index in 0..<2 {
        buffer.storeBytes(
            of: opaqueRetained(CallbackBox(id: 10 + index)), toByteOffset: index * MemoryLayout<UnsafeMutableRawPointer>.stride,
            as: UnsafeMutableRawPointer.self)
    }
    rawBuffer = buffer

    guard let vectors = malloc(2 * MemoryLayout<iovec>.stride)?.bindMemory(to: iovec.self, capacity: 2) else {
        fail("malloc failed")
    }
    for index in 0..<2 {
        vectors[index] = iovec(iov_base: opaqueRetained(CallbackBox(id: 20 + index)), iov_len: 1)
    }
    vector = iovec(iov_base: UnsafeMutableRawPointer(vectors), iov_len: 2)

    let samples = SampleBuffer.create(minimumCapacity: 16) { _ in 16 }
    let elements = samples.withUnsafeMutablePointerToElements { pointer in
        pointer.initialize(repeating: 0.5, count: 16)
        return UnsafeMutableRawPointer(pointer)
    }
    _ = Unmanaged.passRetained(samples)
    guard let holder = malloc(MemoryLayout<UnsafeMutableRawPointer>.stride) else { fail("malloc failed") }
    holder.storeBytes(of: elements, as: UnsafeMutableRawPointer.self)
    samplesBlock = holder
    return "6 callback boxes behind opaque pointers and a sample buffer behind an interior pointer"
}

// MARK: - enum-payloads

final class Guest {}

final class Staff {
    var owner: Owner?
}

final class Owner {
    var staff: [Member] = []
}

/// Three payload cases of class type: `staff` and `owner` carry the case in the pointer's spare
/// bits, so their words are not the objects' addresses.
enum Member {
    case guest(Guest)
    case staff(Staff)
    case owner(Owner)
}

var lead: Member = .guest(Guest())
var members: [Member] = []
var deputy: Member? = nil

@inline(never)
func holdEnumPayloads() -> String {
    for _ in 0..<2 {
        let owner = Owner()
        let staff = Staff()
        staff.owner = owner
        owner.staff = [.staff(staff)]
        members.append(.owner(owner))
        members.append(.guest(Guest()))
    }
    let owner = Owner()
    let staff = Staff()
    staff.owner = owner
    owner.staff = [.staff(staff), .guest(Guest())]
    lead = .owner(owner)
    deputy = .staff(Staff())
    return "\(members.count) members, a lead and a deputy in enum payloads"
}

// MARK: - sleeping-threads

final class Job {
    var worker: Worker?
}

final class Worker {
    var job: Job?
}

/// Posted by each thread once its cycle is made; never posted: `gate`, on which one thread waits.
let started = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
let gate = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

@inline(never)
func makeJob() -> Job {
    let job = Job()
    let worker = Worker()
    job.worker = worker
    worker.job = job
    return job
}

func sleepingThread(_: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let job = makeJob()
    withExtendedLifetime(job) {
        sem_post(started)
        for _ in 0..<24 { sleep(3600) }
    }
    return nil
}

func waitingThread(_: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let job = makeJob()
    withExtendedLifetime(job) {
        sem_post(started)
        while sem_wait(gate) != 0 {}
    }
    return nil
}

@inline(never)
func holdInSleepingThreads() -> String {
    guard sem_init(started, 0, 0) == 0, sem_init(gate, 0, 0) == 0 else { fail("sem_init failed") }
    for body in [sleepingThread, waitingThread] as [@convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?] {
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, body, nil)
        guard status == 0 else { fail("pthread_create failed: \(String(cString: strerror(status)))") }
        pthread_detach(thread)
    }
    for _ in 0..<2 {
        while sem_wait(started) != 0 {}
    }
    return "2 threads waiting, each holding a job cycle in a local"
}

// MARK: - collections

final class Player {
    var coach: Coach?
}

final class Coach {
    var player: Player?
}

final class Tag: Hashable {
    let name: String
    var owner: TagOwner?
    init(name: String) { self.name = name }
    static func == (lhs: Tag, rhs: Tag) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

final class TagOwner {
    var tag: Tag?
}

var teams: [String: [Player]] = [:]
var tags: Set<Tag> = []

@inline(never)
func holdCollections() -> String {
    for team in ["red", "green", "blue"] {
        teams[team] = (0..<2).map { _ in
            let player = Player()
            let coach = Coach()
            player.coach = coach
            coach.player = player
            return player
        }
    }
    for name in ["urgent", "later", "home", "work"] {
        let tag = Tag(name: name)
        let owner = TagOwner()
        tag.owner = owner
        owner.tag = tag
        tags.insert(tag)
    }
    return "\(teams.count) teams and \(tags.count) tags in global collections"
}

// MARK: - closure-queue

protocol TimerCancellable {
    var isCancelled: Bool { get }
}

final class TimerToken: TimerCancellable {
    weak var queue: TimerQueue?
    init(queue: TimerQueue) { self.queue = queue }
    var isCancelled: Bool { false }
}

struct FairQueue<Priority: Comparable, Element> {
    private var storage: [((Priority, UInt), Element)] = []
    private var next: UInt = 0
    mutating func insert(_ element: Element, priority: Priority) {
        storage.append(((priority, next), element))
        next += 1
    }
    var count: Int { storage.count }
}

final class TimerQueue {
    var work = FairQueue<Int, () -> Void>()
    var fired = 0

    @inline(never)
    func schedule(at time: Int, every interval: Int) {
        let token: TimerCancellable = TimerToken(queue: self)
        let action: () -> Void = { [unowned self] in
            if token.isCancelled { return }
            self.fired += 1
            self.schedule(at: time + interval, every: interval)
        }
        work.insert(action, priority: time)
    }
}

var timers: TimerQueue? = nil

@inline(never)
func holdClosureQueue() -> String {
    let queue = TimerQueue()
    for time in 0..<5 { queue.schedule(at: time, every: 1) }
    timers = queue
    return "\(queue.work.count) timers in a global queue's closures"
}

// MARK: - value-layouts

final class Keeper: Keeping {
    var partner: KeeperPartner?
    func keep() -> Int { 1 }
}

final class KeeperPartner {
    var keeper: Keeper?
}

protocol Keeping {
    func keep() -> Int
}

/// Three words, inline in an existential's buffer: the keeper is its last word.
struct Inline: Keeping {
    var first: Int
    var second: Int
    var keeper: Keeper?
    func keep() -> Int { first }
}

/// Five words: an existential keeps it in a box, its buffer's first word the box.
struct Boxed: Keeping {
    var words: (Int, Int, Int, Int)
    var keeper: Keeper
    func keep() -> Int { words.0 }
}

struct Parameter {
    var name: String
    var keeping: any Keeping
}

final class Panel {
    var parameter: Parameter
    var pin: Pin?

    init(parameter: Parameter) {
        self.parameter = parameter
    }
}

/// A namespace: a generic type nested in it is named with its parent's (empty) arguments.
enum Labels {
    struct Labelled<Value> {
        var value: Value
        var label: String
    }
}

typealias Labelled = Labels.Labelled

struct Pin {
    var keeper: AnyObject?
    var count: Int
}

enum Share {
    case shared(Labelled<Int>, Pin)
    case plain(Labelled<Int>)
}

final class Holding<Value> {
    var held: Labelled<Value>

    init(held: Labelled<Value>) {
        self.held = held
    }
}

var parameters: [Parameter] = []
var panel: Panel? = nil
var shares: [Share] = []
var holding: Holding<Keeper>? = nil

@inline(never)
func makeKeeper() -> Keeper {
    let keeper = Keeper()
    let partner = KeeperPartner()
    keeper.partner = partner
    partner.keeper = keeper
    return keeper
}

@inline(never)
func holdValueLayouts() -> String {
    parameters = [
        Parameter(name: "inline", keeping: Inline(first: 1, second: 2, keeper: makeKeeper())),
        Parameter(name: "boxed", keeping: Boxed(words: (1, 2, 3, 4), keeper: makeKeeper())),
        Parameter(name: "instance", keeping: makeKeeper()),
    ]
    let held = Panel(parameter: Parameter(name: "panel", keeping: makeKeeper()))
    held.pin = Pin(keeper: makeKeeper(), count: 1)
    panel = held
    shares = [
        .plain(Labelled(value: 0, label: "plain")),
        .shared(Labelled(value: 1, label: "shared"), Pin(keeper: makeKeeper(), count: 2)),
    ]
    holding = Holding(held: Labelled(value: makeKeeper(), label: "held"))
    return "7 keepers in values of known layout"
}

// MARK: - tagged-payloads

enum FacetFormat {
    case other(String)
    case generic
}

/// The `Any?` keeps the compiler from putting `ShapeKind`'s tag in its payloads' spare bits.
struct Facet {
    var format: FacetFormat
    var required: Bool
    var title: String?
    var example: Any?
}

struct Shape {
    var value: ShapeKind
    var notes: [String: Int]
}

enum ShapeKind {
    /// Case 0: a number in the word where `.object` keeps its box.
    case measure(Double, Facet)
    case counted(Facet, Int?)
    indirect case object(Facet, [String: Shape])
}

final class Catalog {
    var shape: Shape

    init(shape: Shape) {
        self.shape = shape
    }
}

var shapes: [String: Shape] = [:]
var shapeKinds: [ShapeKind] = []
var catalog: Catalog? = nil

@inline(never)
func holdTaggedPayloads() -> String {
    func object(_ keeper: Keeper?, _ inner: [String: Shape] = [:]) -> ShapeKind {
        .object(Facet(format: .generic, required: false, title: nil, example: keeper), inner)
    }
    let plain = Facet(format: .other("plain"), required: true, title: "plain", example: nil)
    shapes = [
        "first": Shape(value: object(makeKeeper()), notes: [:]),
        "outer": Shape(value: object(nil, ["inner": Shape(value: object(makeKeeper()), notes: [:])]), notes: ["n": 1]),
        "measure": Shape(value: .measure(1.5, plain), notes: [:]),
    ]
    shapeKinds = [.counted(plain, 3), object(makeKeeper())]
    catalog = Catalog(shape: Shape(value: object(makeKeeper()), notes: [:]))
    return "4 keepers in the boxes of an enum tagged by a byte of its own"
}

// MARK: - tail-elements

/// A ring of Anchors in a ManagedBuffer's elements; the header counts them.
final class AnchorRing: ManagedBuffer<Int, Anchor> {}

enum StreamEvent {
    case started(Payload, tag: Int)
    case ended(Int, Int, Int, Int)
    case flushed
}

final class Payload {
    var anchor: Anchor?
}

var anchorRing: AnchorRing? = nil
var optionalAnchors: ManagedBuffer<Int, Anchor?>? = nil
/// The stream and its continuation, as a producer keeps them for a consumer that never comes
/// (a stream dropped is cancelled, and drops what is yielded to it).
var events: (AsyncStream<StreamEvent>, AsyncStream<StreamEvent>.Continuation)? = nil

/// An Anchor in a cycle with its Partner, held by nothing else yet.
func makeAnchoredPair() -> Anchor {
    let anchor = Anchor()
    let partner = Partner()
    anchor.partner = partner
    partner.anchor = anchor
    return anchor
}

@inline(never)
func holdTailElements() -> String {
    let ring = AnchorRing.create(minimumCapacity: 8) { _ in 0 } as! AnchorRing
    ring.withUnsafeMutablePointers { count, elements in
        for index in 0..<3 { (elements + index).initialize(to: makeAnchoredPair()) }
        count.pointee = 3
    }
    anchorRing = ring
    let optionals = ManagedBuffer<Int, Anchor?>.create(minimumCapacity: 2) { _ in 2 }
    optionals.withUnsafeMutablePointerToElements { elements in
        for index in 0..<2 { (elements + index).initialize(to: makeAnchoredPair()) }
    }
    optionalAnchors = optionals
    let (stream, continuation) = AsyncStream<StreamEvent>.makeStream()
    for tag in 0..<3 {
        let payload = Payload()
        payload.anchor = makeAnchoredPair()
        continuation.yield(.started(payload, tag: tag))
    }
    events = (stream, continuation)
    return "8 anchors in the elements of 2 managed buffers and of a stream's pending events"
}

// MARK: - entry point

let makers: [(String, () -> String)] = [
    ("global-cycle", holdGlobalCycles),
    ("opaque-pointers", holdOpaquePointers),
    ("enum-payloads", holdEnumPayloads),
    ("sleeping-threads", holdInSleepingThreads),
    ("collections", holdCollections),
    ("closure-queue", holdClosureQueue),
    ("value-layouts", holdValueLayouts),
    ("tagged-payloads", holdTaggedPayloads),
    ("tail-elements", holdTailElements),
]
var held: [String] = []
for (name, hold) in makers where chosen == "all" || chosen == name {
    held.append(hold())
}
print("ReachableHolders: \(held.joined(separator: "; "))")
// LeakSanitizer ends the process with _exit after its report: flush what was printed first.
fflush(stdout)
