// Swift objects that nothing reaches at exit, in every shape a leak takes, for the unreachable
// check that `leak-audit run` makes with no setup. It never links LeakMonitor.
//
//   UnreachableShapes [leaky|clean] [SHAPE]      (default: leaky all)
//
// Each shape makes a known number of leaks, in functions that return, so that no global, no
// live stack slot and no register holds them when the program exits:
//
//   pairs          3 cycles PairA.other → PairB.other → PairA                         (6 objects)
//   closures       2 Downloaders whose onFinish closure captures the downloader and a label
//                  (2 downloaders, 2 closure contexts, 2 array buffers of received labels)
//   families       2 Folders whose children array holds 3 Files each, every File.parent strong
//                  (2 folders, 2 array buffers, 6 files)
//   registry       1 Registry whose entries dictionary holds 4 Entries, each Entry.registry strong
//                  (1 registry, 1 dictionary buffer, 4 entries)
//   delegates      4 Controllers holding their View, each View.delegate a strong ViewDelegate
//                  existential (protocol-typed, class-bound) holding the controller  (8 objects)
//   enum-ring      2 rings of 3 RingNodes linked through `enum Link { case next, skip, end }`, a
//                  multi-payload enum: the `skip` links carry the case in the pointer's spare bits
//                  (6 objects)
//   over-retained  5 Sessions passed to Unmanaged.passRetained and never released, no cycle; each
//                  keeps a Token that only it holds (5 sessions, 5 tokens)
//   freed-blocks   4 cycles Orphan.peer → OrphanPeer.orphan → Orphan whose only other "references"
//                  are stale words in malloc blocks (88, 104 and 1000 bytes) that were then freed
//                  (tcache, fastbins, and the unsorted bin for the large ones)         (8 objects)
//   capture-slack  2 cycles Stray.partner → StrayPartner.stray → Stray whose only other
//                  "reference" is a stale word past the last capture of a live closure context:
//                  a 32-byte context (one captured closure) made in the 48-byte chunk that a
//                  Carrier, whose last property held the stray, had just freed; a global array
//                  keeps the closures                                                  (4 objects)
//   value-slack    cycles Drifter.partner → DrifterPartner.drifter → Drifter whose only other
//                  "references" are stale words in live values of known layout: the unused
//                  third word of an `any Describer` buffer holding a one-word value, in 3 struct
//                  elements of a global array and in a global object's struct property (the
//                  fixture writes the address there, as a larger value written before leaves
//                  it); and the word past a small case's payload of a generic multi-payload
//                  enum whose payloads are a tuple of a nested generic struct and a struct, and
//                  the same generic struct (2 elements of a global array, each written
//                  `.reference` then `.fragment`, the address written where the reference's
//                  holder was); and the first word (count and flags) of a `String` payload
//                  that a case without payload leaves as it was (2 `SlackLabel.generic`
//                  elements of a global array): 8 cycles
//                                                                                       (12 objects)
//   optional-slack cycles Drifter.partner → DrifterPartner.drifter → Drifter whose only other
//                  "references" are stale words in the payload of a nil optional of a
//                  multi-payload enum, which its nil leaves unwritten (it writes only the tag
//                  byte): in 2 nil slots of a global `ContiguousArray<Message?>` (swift-nio's
//                  `CircularBuffer<NIOAny>`: a struct of a multi-payload enum one of whose payloads
//                  holds an optional of a struct of another multi-payload enum), and in the nil
//                  `Either<Bool, Leaf>?` of 1 indirect case's box that a global array holds
//                  (OpenAPIKit's `ObjectContext.additionalProperties`): 3 cycles       (6 objects)
//   tail-elements  2 Ledgers (a ManagedBuffer subclass) whose elements, past the header, are 2
//                  LedgerLines each, every LedgerLine.ledger strong                    (6 objects)
//   private-module 2 cycles Gear.axle → Axle.gear → Gear of the module `_ShapeParts`, a package
//                  module whose name starts with an underscore                         (4 objects)
//   all            every shape above, one after the other
//
// The clean twin builds the same structures with the back reference weak (pairs, closures,
// families, registry, delegates), breaks the ring before dropping it (enum-ring), or releases
// what it retained (over-retained): nothing is left. For freed-blocks the clean twin keeps the
// same cycles alive through live malloc blocks of the same sizes, interleaved with the freed ones
// that hold the same stale words, and kept by a global raw pointer: reachable, so nothing to
// report, whatever the freed blocks next to them hold. For capture-slack the clean twin makes the
// same closures over the same stale words, with each stray's back reference weak, and for
// value-slack and optional-slack the same values over the same stale words, with each drifter's
// back reference weak. For tail-elements the clean twin makes the same ledgers with each line's
// back reference weak, and for private-module the same gears with each axle's back reference weak.
//
// Prints one line when done and exits 0.

import _ShapeParts

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    fputs("UnreachableShapes: \(message)\n", stderr)
    exit(64)
}

let shapes = [
    "pairs", "closures", "families", "registry", "delegates", "enum-ring", "over-retained", "freed-blocks", "capture-slack",
    "value-slack", "optional-slack", "tail-elements", "private-module",
]
let usage = "usage: UnreachableShapes [leaky|clean] [\((shapes + ["all"]).joined(separator: "|"))]"
var arguments = Array(CommandLine.arguments.dropFirst())
let leaky = arguments.first != "clean"
if arguments.first == "leaky" || arguments.first == "clean" { arguments.removeFirst() }
let chosen = arguments.first ?? "all"
guard arguments.count <= 1, chosen == "all" || shapes.contains(chosen) else { fail(usage) }

// MARK: - pairs

final class PairA {
    var other: PairB?
}

final class PairB {
    var other: PairA?
    weak var weakOther: PairA?
}

@inline(never)
func makePairs() -> Int {
    for _ in 0..<3 {
        let a = PairA()
        let b = PairB()
        a.other = b
        if leaky { b.other = a } else { b.weakOther = a }
    }
    return 3
}

// MARK: - closures

final class Downloader {
    var received: [String] = []
    var onFinish: (() -> Void)?

    func finish() { onFinish?() }
    func didFinish(_ label: String) { received.append(label) }
}

@inline(never)
func makeClosures() -> Int {
    for index in 0..<2 {
        let downloader = Downloader()
        // Two captures, so that the closure has a context of its own (a closure capturing one
        // class reference alone uses that reference as its context).
        let label = "download \(index)"
        if leaky {
            downloader.onFinish = { downloader.didFinish(label) }
        } else {
            downloader.onFinish = { [weak downloader] in downloader?.didFinish(label) }
        }
        downloader.finish()
    }
    return 2
}

// MARK: - families

final class Folder {
    var children: [File] = []
}

final class File {
    let name: String
    var parent: Folder?
    weak var weakParent: Folder?
    init(name: String) { self.name = name }
}

@inline(never)
func makeFamilies() -> Int {
    for _ in 0..<2 {
        let folder = Folder()
        for index in 0..<3 {
            let file = File(name: "f\(index)")
            if leaky { file.parent = folder } else { file.weakParent = folder }
            folder.children.append(file)
        }
    }
    return 2
}

// MARK: - registry

final class Registry {
    var entries: [String: Entry] = [:]
}

final class Entry {
    var registry: Registry?
    weak var weakRegistry: Registry?
}

@inline(never)
func makeRegistry() -> Int {
    let registry = Registry()
    for key in ["alpha", "beta", "gamma", "delta"] {
        let entry = Entry()
        if leaky { entry.registry = registry } else { entry.weakRegistry = registry }
        registry.entries[key] = entry
    }
    return 1
}

// MARK: - delegates

protocol ViewDelegate: AnyObject {
    func viewDidAppear()
}

final class View {
    var delegate: ViewDelegate?
    weak var weakDelegate: ViewDelegate?
    func appear() { (delegate ?? weakDelegate)?.viewDidAppear() }
}

final class Controller: ViewDelegate {
    let view = View()
    var appearances = 0
    func viewDidAppear() { appearances += 1 }
}

@inline(never)
func makeDelegates() -> Int {
    for _ in 0..<4 {
        let controller = Controller()
        if leaky { controller.view.delegate = controller } else { controller.view.weakDelegate = controller }
        controller.view.appear()
    }
    return 4
}

// MARK: - enum-ring

/// Two payload cases of class type: Swift stores the case in the pointer's spare bits, so a
/// `skip` link's word is not the node's address.
enum Link {
    case next(RingNode)
    case skip(RingNode)
    case end
}

final class RingNode {
    let index: Int
    var link: Link = .end
    init(index: Int) { self.index = index }
}

@inline(never)
func makeRings() -> Int {
    for _ in 0..<2 {
        let first = RingNode(index: 0)
        let second = RingNode(index: 1)
        let third = RingNode(index: 2)
        first.link = .next(second)
        second.link = .skip(third)
        third.link = .skip(first)
        if !leaky { third.link = .end }
    }
    return 2
}

// MARK: - over-retained

final class Token {
    let value: Int
    init(value: Int) { self.value = value }
}

final class Session {
    let token: Token
    init(token: Token) { self.token = token }
}

@inline(never)
func makeOverRetained() -> Int {
    for index in 0..<5 {
        let retained = Unmanaged.passRetained(Session(token: Token(value: index)))
        if !leaky { retained.release() }
    }
    return 5
}

// MARK: - freed-blocks

final class Orphan {
    var peer: OrphanPeer?
}

final class OrphanPeer {
    var orphan: Orphan?
    let serial: Int
    init(serial: Int) { self.serial = serial }
}

/// Live malloc blocks (clean twin only), each holding a retained orphan: kept by this global.
var liveBlocks: UnsafeMutablePointer<UnsafeMutableRawPointer?>? = nil

/// Fills a block of `size` bytes with `word` in every aligned slot, so that some survive what
/// free writes into a freed chunk (the tcache's next and key, a bin's fd and bk).
func fill(_ block: UnsafeMutableRawPointer, size: Int, with word: UnsafeMutableRawPointer) {
    for offset in stride(from: 0, to: size - 7, by: 8) {
        block.storeBytes(of: word, toByteOffset: offset, as: UnsafeMutableRawPointer.self)
    }
}

@inline(never)
func makeFreedBlocks() -> Int {
    let cycles = 4
    var orphans: [UnsafeMutableRawPointer] = []
    for serial in 0..<cycles {
        let orphan = Orphan()
        let peer = OrphanPeer(serial: serial)
        orphan.peer = peer
        peer.orphan = orphan
        orphans.append(Unmanaged.passUnretained(orphan).toOpaque())
    }
    // Two fastbin sizes and one past the fastbins. 40 blocks of each freed: 7 fill the tcache,
    // the rest go to fastbins (or the unsorted bin). Not the smallest sizes: the runtime's own
    // small blocks allocated after this (a metadata cache's storage) would reuse them, and a
    // block in use is read conservatively, stale tail and all: held, as a C block would be.
    let sizes = [88, 104, 1000]
    let blocksPerSize = 40
    if !leaky {
        liveBlocks = .allocate(capacity: sizes.count * blocksPerSize)
    }
    var kept = 0
    for size in sizes {
        var freed: [UnsafeMutableRawPointer] = []
        for index in 0..<(leaky ? blocksPerSize : 2 * blocksPerSize) {
            guard let block = malloc(size) else { fail("malloc(\(size)) failed") }
            // The clean twin's even blocks are live: each cycle is held by 10 of them.
            let orphan = orphans[(leaky ? index : index / 2) % cycles]
            if !leaky && index % 2 == 0 {
                // Live and holding: the block owns a retain of the orphan.
                _ = Unmanaged<Orphan>.fromOpaque(orphan).retain()
                fill(block, size: size, with: orphan)
                liveBlocks?[kept] = block
                kept += 1
            } else {
                fill(block, size: size, with: orphan)
                freed.append(block)
            }
        }
        for block in freed { free(block) }
    }
    orphans.removeAll()
    return cycles
}

// MARK: - capture-slack

final class Stray {
    var partner: StrayPartner?
}

final class StrayPartner {
    var stray: Stray?
    weak var weakStray: Stray?
}

/// 16 bytes of header and 3 references: malloc(40), the chunk size (48) of a closure context
/// that captures one closure (16 bytes of header, 16 of capture: malloc(32)).
final class Carrier {
    var first: AnyObject?
    var second: AnyObject?
    var last: AnyObject?
}

/// The closures made over the carriers' chunks, kept to the end.
var slackClosures: [() -> Int] = []

@inline(never)
func makeStray() -> Stray {
    let stray = Stray()
    let partner = StrayPartner()
    stray.partner = partner
    if leaky { partner.stray = stray } else { partner.weakStray = stray }
    return stray
}

@inline(never)
func wrapping(_ body: @escaping () -> Int) -> () -> Int {
    { body() + 1 }
}

@inline(never)
func makeCaptureSlack() -> Int {
    let cycles = 2
    slackClosures.reserveCapacity(cycles)
    for _ in 0..<cycles {
        var carrier: Carrier? = Carrier()
        carrier?.last = makeStray()
        // Freed: its chunk goes to the tcache with the stray's address still at offset 32.
        carrier = nil
        let body: () -> Int = { 1 }
        // The next 48-byte chunk malloc hands out is the carrier's: the context's captures end at
        // offset 32, and its slack keeps the stale word.
        slackClosures.append(wrapping(body))
    }
    return slackClosures.reduce(0) { $0 + $1() } / 2
}

// MARK: - value-slack

final class Drifter {
    var partner: DrifterPartner?
}

final class DrifterPartner {
    var drifter: Drifter?
    weak var weakDrifter: Drifter?
}

protocol Describer {
    func describe() -> Int
}

/// One word: an `any Describer` keeps it inline, the buffer's other two words unused.
struct Small: Describer {
    var value: Int
    func describe() -> Int { value }
}

/// A struct element whose existential lies after a String: its buffer is words 2...4.
struct Argument {
    var name: String
    var describer: any Describer
}

final class Form {
    var argument = Argument(name: "form", describer: Small(value: 0))
}

/// A namespace: a generic type nested in it is named with its parent's (empty) arguments.
enum Slack {
    struct Wrapper<Value> {
        var value: Value
        var note: String
    }
}

typealias Wrapper = Slack.Wrapper

struct Tail {
    var holder: AnyObject?
    var count: Int
}

/// Payloads of 40 and 24 bytes, the tag in a byte after them (a generic enum, laid out by the
/// runtime without spare bits): a `.fragment` uses the first 24, and the word after them is
/// where a `.reference` keeps its tail's holder.
enum Content<Value> {
    case reference(Wrapper<Value>, Tail)
    case fragment(Wrapper<Value>)
}

/// A `String` payload's first word is its count and flags, never a reference: `.generic` writes
/// only the second word's extra inhabitant (OpenAPIKit's `BooleanFormat`).
enum SlackLabel {
    case other(String)
    case generic
}

var slackArguments: [Argument] = []
var slackForm = Form()
var slackContents: [Content<Int>] = []
var slackLabels: [SlackLabel] = []

@inline(never)
func makeDrifter() -> Drifter {
    let drifter = Drifter()
    let partner = DrifterPartner()
    drifter.partner = partner
    if leaky { partner.drifter = drifter } else { partner.weakDrifter = drifter }
    return drifter
}

/// Writes `drifter`'s address at `place`: bytes that no value uses, as a larger value written
/// there before leaves them.
@inline(never)
func leaveStaleWord(of drifter: Drifter, at place: UnsafeMutableRawPointer) {
    place.storeBytes(of: UInt(bitPattern: Unmanaged.passUnretained(drifter).toOpaque()), as: UInt.self)
}

@inline(never)
func makeValueSlack() -> Int {
    // The existential's buffer starts after the String; its third word is unused.
    let unusedWord = (MemoryLayout<Argument>.offset(of: \Argument.describer) ?? 16) + 16
    for index in 0..<3 {
        slackArguments.append(Argument(name: "argument \(index)", describer: Small(value: index)))
        slackArguments.withUnsafeMutableBytes { bytes in
            let element = bytes.baseAddress! + index * MemoryLayout<Argument>.stride
            leaveStaleWord(of: makeDrifter(), at: element + unusedWord)
        }
    }
    withUnsafeMutablePointer(to: &slackForm.argument) { argument in
        leaveStaleWord(of: makeDrifter(), at: UnsafeMutableRawPointer(argument) + unusedWord)
    }
    // A `.fragment` uses the payload's first 24 bytes: the tail's holder would be next.
    let tailHolder = MemoryLayout<Wrapper<Int>>.stride
    for index in 0..<2 {
        slackContents.append(.reference(Wrapper(value: index, note: "reference"), Tail(holder: Drifter(), count: 1)))
        slackContents[index] = .fragment(Wrapper(value: index, note: "fragment"))
        slackContents.withUnsafeMutableBytes { bytes in
            let element = bytes.baseAddress! + index * MemoryLayout<Content<Int>>.stride
            leaveStaleWord(of: makeDrifter(), at: element + tailHolder)
        }
    }
    for index in 0..<2 {
        slackLabels.append(.generic)
        slackLabels.withUnsafeMutableBytes { bytes in
            leaveStaleWord(of: makeDrifter(), at: bytes.baseAddress! + index * MemoryLayout<SlackLabel>.stride)
        }
    }
    return slackArguments.count + 1 + slackContents.count + slackLabels.count
}

// MARK: - optional-slack

final class Packet {
    var bytes = [UInt8](repeating: 1, count: 4)
}

/// A multi-payload enum of references (its tag in their spare bits): swift-nio's `SocketAddress`.
enum Address {
    case local(Packet)
    case remote(Drifter)
}

struct PacketInfo {
    var address: Address
    var index: Int
}

struct EnvelopeMetadata {
    var info: PacketInfo?
}

struct Envelope {
    var address: Address
    var data: Packet
    var metadata: EnvelopeMetadata?
}

/// swift-nio's `_NIOAnyStorage`: its tag in a byte after the largest payload (an `Any`'s 32
/// bytes leave no spare bits), so a `nil` of an optional of it writes that byte only.
enum MessageStorage {
    case packet(Packet)
    case envelope(Envelope)
    case other(Any)
}

struct Message {
    var storage: MessageStorage
}

/// A generic multi-payload enum: its tag in a byte of its own.
enum Either<A, B> {
    case first(A)
    case second(B)
}

struct Leaf {
    var name: String
    var holder: Packet?
    var count: Int
}

struct NodeContext {
    var limit: Int?
    var additional: Either<Bool, Leaf>?
}

/// One indirect case: its value is its box, whose one capture is the tuple of the case's payload.
indirect enum Node {
    case branch(Leaf, NodeContext)
    case end
}

var slackMessages = ContiguousArray<Message?>()
var slackNodes: [Node] = []

@inline(never)
func makeOptionalSlack() -> Int {
    slackMessages.reserveCapacity(8)
    slackMessages.append(Message(storage: .packet(Packet())))
    slackMessages.append(nil)
    slackMessages.append(Message(storage: .other(7)))
    slackMessages.append(nil)
    // A nil slot's tag byte follows the payload; the payload's first word is where a packet's
    // reference would be.
    for index in [1, 3] {
        slackMessages.withUnsafeMutableBytes { bytes in
            leaveStaleWord(of: makeDrifter(), at: bytes.baseAddress! + index * MemoryLayout<Message?>.stride)
        }
    }
    let node = Node.branch(
        Leaf(name: "branch", holder: Packet(), count: 1), NodeContext(limit: 3, additional: nil))
    slackNodes.append(node)
    // The box: the enum's one word. The nil `Either<Bool, Leaf>?` leaves its payload (a `Leaf`,
    // whose `holder` is a reference) unwritten.
    let box = unsafeBitCast(node, to: UnsafeMutableRawPointer.self)
    let context =
        (MemoryLayout<Leaf>.size + MemoryLayout<NodeContext>.alignment - 1) / MemoryLayout<NodeContext>.alignment
        * MemoryLayout<NodeContext>.alignment
    let additional = context + MemoryLayout<NodeContext>.offset(of: \NodeContext.additional)!
    let holder = MemoryLayout<Leaf>.offset(of: \Leaf.holder)!
    leaveStaleWord(of: makeDrifter(), at: box + 16 + additional + holder)
    return slackMessages.count + slackNodes.count
}

// MARK: - tail-elements

/// A ledger's lines are its elements, allocated past its header (the line count).
final class Ledger: ManagedBuffer<Int, LedgerLine> {
    // ManagedBuffer leaves its elements' lifetime to its subclass.
    deinit {
        withUnsafeMutablePointers { count, lines in _ = lines.deinitialize(count: count.pointee) }
    }
}

final class LedgerLine {
    var ledger: Ledger?
    weak var weakLedger: Ledger?
}

@inline(never)
func makeLedgers() -> Int {
    for _ in 0..<2 {
        let ledger = Ledger.create(minimumCapacity: 2) { _ in 0 } as! Ledger
        ledger.withUnsafeMutablePointers { count, lines in
            for index in 0..<2 {
                let line = LedgerLine()
                if leaky { line.ledger = ledger } else { line.weakLedger = ledger }
                (lines + index).initialize(to: line)
            }
            count.pointee = 2
        }
    }
    return 2
}

// MARK: - entry point

/// Overwrites the dead stack below the caller with zeros (1 KiB a frame, 32 frames), so that no
/// word a returned maker left there still points to its leak: conservative scanners (LeakSanitizer,
/// valgrind, a conservative root phase) read whole frames, and a later call's frame may be live
/// where it never wrote.
@inline(never)
func scrubStack(depth: Int = 32) {
    withUnsafeTemporaryAllocation(byteCount: 1024, alignment: 16) { bytes in
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        if depth > 1 { scrubStack(depth: depth - 1) }
    }
}

let makers: [(String, () -> Int)] = [
    ("pairs", makePairs),
    ("private-module", { makeGearCycles(2, leaky: leaky) }),
    ("closures", makeClosures),
    ("families", makeFamilies),
    ("registry", makeRegistry),
    ("delegates", makeDelegates),
    ("enum-ring", makeRings),
    ("over-retained", makeOverRetained),
    ("freed-blocks", makeFreedBlocks),
    ("capture-slack", makeCaptureSlack),
    ("value-slack", makeValueSlack),
    ("optional-slack", makeOptionalSlack),
    ("tail-elements", makeLedgers),
]
var made: [String] = []
for (name, make) in makers where chosen == "all" || chosen == name {
    made.append("\(make()) \(name)")
    scrubStack()
}
print("UnreachableShapes: \(leaky ? "leaky" : "clean"): made \(made.joined(separator: ", "))")
// LeakSanitizer ends the process with _exit after its report: flush what was printed first.
fflush(stdout)
