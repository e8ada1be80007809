// Well-formed inputs for the heap walk's fuzz target: each a small process in the replay's
// layout (HeapSnapshotReplay) whose instances have a known retaining path.

extension HeapSnapshotReplay {
    /// Well-formed inputs, by name: an instance held by a global (with a freed chunk that still
    /// reads as its holder), a cycle of two objects, array storage holding objects (and `any P`
    /// elements, read by the type each holds), a struct property read by its lowered layout (its
    /// `Any` by the type it holds), dictionary storage with a String key, a closure context, a
    /// chain of 50,000 objects, lists of 1,200 objects no root reaches, objects in a thread arena,
    /// in mmapped chunks and outside any heap, stack, register, thread-local, task, box and
    /// enum-payload holders, and objects behind a malloc interposer's header.
    package static var seeds: [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]

        // App.store → Session.model → the instance; a freed Session also points at it.
        var global = Encoder()
        global.classType(name: Name.model)
        global.classType(name: Name.session, words: 1, fields: [(2, Encoder.symbolic(0), Name.modelProperty)])
        global.chunks(
            .heap,
            [
                (2, [Encoder.meta(1), Code.live] + Encoder.object(1), free: false),
                (2, [Encoder.meta(0), Code.live], free: false),
                (2, [Encoder.meta(1), Code.live] + Encoder.object(1), free: true),
                (2, [Encoder.meta(0), Code.live], free: false),
            ])
        global.globals(Encoder.object(0))
        global.instances(Encoder.object(1))
        seeds["global"] = global.bytes

        // Two nodes holding each other, and nothing else holding either.
        var cycle = Encoder()
        cycle.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        cycle.chunks(
            .heap,
            [(2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live] + Encoder.object(0))])
        cycle.instances(Encoder.object(0))
        seeds["cycle"] = cycle.bytes

        // Two nodes holding each other, the first also holding a list of two models: the models
        // are held by the cycle, not on it, and the second node, the last instance, is on it. In
        // "held-by-cycle-outside" the list's second model lies outside any heap, first met as the
        // search reads the unreached objects.
        for outsideHeaps in [false, true] {
            var held = Encoder(flags: outsideHeaps ? 2 : 0)
            held.classType(name: Name.model, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
            held.classType(
                name: Name.node, words: 2,
                fields: [(2, Encoder.symbolic(1), Name.next), (3, Encoder.symbolic(0), Name.modelProperty)])
            held.chunks(
                .heap,
                [
                    (3, [Encoder.meta(1), Code.live] + Encoder.object(1) + Encoder.object(2)),
                    (3, [Encoder.meta(1), Code.live] + Encoder.object(0) + [Code.zero]),
                    (2, [Encoder.meta(0), Code.live] + Encoder.object(3)),
                ])
            held.chunks(outsideHeaps ? .outside : .heap, [(2, [Encoder.meta(0), Code.live])])
            held.instances(Encoder.object(2) + Encoder.object(3) + Encoder.object(1))
            seeds[outsideHeaps ? "held-by-cycle-outside" : "held-by-cycle"] = held.bytes
        }

        // App.store → Screen.items → [0], [1], [2].
        var array = Encoder()
        array.classType(name: Name.model)
        array.typeSpec([Encoder.kind(.array), 0, Name.items, 0])
        array.classType(name: Name.screen, words: 1, fields: [(2, [15, 16] + Array("Say4main5ModelCG".utf8), Name.items)])
        array.chunks(
            .heap,
            [
                (2, [Encoder.meta(2), Code.live] + Encoder.object(1)),
                (
                    5,
                    [Encoder.meta(1), Code.live, Code.small + 3, Code.small + 3] + Encoder.object(2) + Encoder.object(3)
                        + Encoder.object(4)
                ),
                (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]),
            ])
        array.globals(Encoder.object(0))
        array.instances(Encoder.object(2) + Encoder.object(3) + Encoder.object(4))
        seeds["array"] = array.bytes

        // App.store → Screen.items → [0]: an array of `any P`, each element read by the type it
        // holds: the first a class instance, the second a plain struct whose word reads as the
        // address of another instance, which it does not hold.
        var existentials = Encoder()
        existentials.classType(name: Name.model)
        existentials.typeSpec([Encoder.kind(.raw), 1 | 1 << 4, Name.items, 0x03, 0x03])
        existentials.typeSpec([Encoder.kind(.array), 0, Name.items, 1])
        existentials.classType(name: Name.screen, words: 1, fields: [(2, [15, 12] + Array("Say4main1PPG".utf8), Name.items)])
        existentials.typeSpec([Encoder.kind(.structure), 1, Name.state, 8])
        existentials.chunks(
            .heap,
            [
                (2, [Encoder.meta(3), Code.live] + Encoder.object(1)),
                (
                    8,
                    [Encoder.meta(2), Code.live, Code.small + 2, Code.small + 2]
                        + Encoder.object(2) + [Code.zero, Code.zero, Encoder.meta(0), Code.zero]
                        + Encoder.object(3) + [Code.zero, Code.zero, Encoder.meta(4), Code.zero]
                ),
                (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]),
            ])
        existentials.globals(Encoder.object(0))
        existentials.instances(Encoder.object(2) + Encoder.object(3))
        seeds["existentials"] = existentials.bytes

        // App.store → Screen.state → App.Leaked: a struct property (a String, then an `Any`) read
        // by its layout, lowered from its field records. The first Screen's `Any` holds a
        // one-word integer whose buffer's third word reads as the first instance's address,
        // which it does not hold; the second's holds the second instance.
        var structValues = Encoder()
        structValues.classType(name: Name.model)
        structValues.typeSpec([Encoder.kind(.structure), 1, Name.int, 8])
        structValues.typeSpec(
            [Encoder.kind(.structure), 0x40, Name.state, 48, 2, Name.string, 15, 2] + Array("SS".utf8)
                + [Name.modelProperty, 15, 2] + Array("yp".utf8))
        structValues.classType(name: Name.screen, words: 6, fields: [(2, Encoder.symbolic(2), Name.state)])
        let text = [Code.smallStringLow, Code.smallStringHigh]
        structValues.chunks(
            .heap,
            [
                (5, [Encoder.meta(3), Code.live] + text + [Code.small + 1, Code.zero] + Encoder.object(2) + [Encoder.meta(1)]),
                (5, [Encoder.meta(3), Code.live] + text + Encoder.object(3) + [Code.zero, Code.zero, Encoder.meta(0)]),
                (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]),
            ])
        structValues.globals(Encoder.object(0) + Encoder.object(1))
        structValues.instances(Encoder.object(2) + Encoder.object(3))
        seeds["struct-values"] = structValues.bytes

        // App.store → Session.cache → ["login"]: a native dictionary of 2 buckets, one occupied.
        var dictionary = Encoder()
        dictionary.classType(name: Name.model)
        dictionary.typeSpec([Encoder.kind(.structure), 0x20, Name.string, 16])
        dictionary.typeSpec([Encoder.kind(.dictionary), 0, Name.cache, 1, 0])
        dictionary.classType(
            name: Name.session, words: 1, fields: [(2, [15, 18] + Array("SDySS4main5ModelCG".utf8), Name.cache)])
        let storage: [UInt8] = [
            Encoder.meta(2), Code.live, Code.small + 1, Code.small + 1, Code.small + 1, Code.zero, Code.inside + 9,
            Code.inside + 13, Code.small + 1, Code.smallStringLow, Code.smallStringHigh, Code.zero, Code.zero,
        ]
        dictionary.chunks(
            .heap,
            [
                (2, [Encoder.meta(3), Code.live] + Encoder.object(1)), (9, storage + Encoder.object(2)),
                (2, [Encoder.meta(0), Code.live]),
            ])
        dictionary.globals(Encoder.object(0))
        dictionary.instances(Encoder.object(2))
        seeds["dictionary"] = dictionary.bytes

        // App.store → Screen.onClose (code, context) → the context's captured model.
        var closure = Encoder()
        closure.classType(name: Name.model)
        closure.typeSpec([Encoder.kind(.closureContext), 0, Name.onClose, 16, 1] + Encoder.symbolic(0))
        closure.classType(name: Name.screen, words: 2, fields: [(2, [13], Name.onClose)])
        closure.chunks(
            .heap,
            [
                (3, [Encoder.meta(2), Code.live, Code.closureCode] + Encoder.object(1)),
                (2, [Encoder.meta(1), Code.live] + Encoder.object(2)), (2, [Encoder.meta(0), Code.live]),
            ])
        closure.globals(Encoder.object(0))
        closure.instances(Encoder.object(2))
        seeds["closure"] = closure.bytes

        // Lists of 1,200 models, each model the next one's only holder: one held by a cycle of two
        // nodes, one that nothing holds, whose 1,101st model a node that holds itself holds too
        // (the models from there on are held by that cycle, those before it by nothing). Their
        // instances' paths are longer than a path keeps; each is its holder's and one step more
        // (`heldFromOutside`).
        for heldByCycle in [true, false] {
            var list = Encoder()
            list.classType(name: Name.model, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
            list.classType(
                name: Name.node, words: 2,
                fields: [(2, Encoder.symbolic(1), Name.next), (3, Encoder.symbolic(0), Name.modelProperty)])
            let first = heldByCycle ? 2 : 0
            if heldByCycle {
                list.chunks(
                    .heap,
                    [
                        (3, [Encoder.meta(1), Code.live] + Encoder.object(1) + Encoder.object(first)),
                        (3, [Encoder.meta(1), Code.live] + Encoder.object(0) + [Code.zero]),
                    ])
            }
            list.chunks(.heap, [(2, [Encoder.meta(0), Code.live, Code.relative + 4])], repeats: 1_199)
            list.chunks(.heap, [(2, [Encoder.meta(0), Code.live])])
            if !heldByCycle {
                list.chunks(.heap, [(3, [Encoder.meta(1), Code.live, Code.relative + 3] + Encoder.object(first + 1_100))])
            }
            list.instances([1_100, 1_199, 0, 600, 1_101].flatMap { Encoder.object(first + $0) })
            seeds[heldByCycle ? "held-list" : "unreferenced-list"] = list.bytes
        }

        // App.store → 50,000 nodes, each the next one's holder.
        var chain = Encoder()
        chain.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        chain.chunks(.heap, [(2, [Encoder.meta(0), Code.live, Code.relative + 4])], repeats: 50_000)
        chain.globals(Encoder.object(0))
        chain.instances(Encoder.object(49_999) + Encoder.object(1))
        seeds["deep-chain"] = chain.bytes

        // A global → outside any heap → a thread arena → an mmapped chunk → the arena again.
        var outside = Encoder(flags: 2)
        outside.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        outside.chunks(.outside, [(2, [Encoder.meta(0), Code.live] + Encoder.object(1))])
        outside.chunks(.arena, [(2, [Encoder.meta(0), Code.live] + Encoder.object(2))])
        outside.chunks(.mmapped, [(4, [Encoder.meta(0), Code.live] + Encoder.object(3))])
        outside.chunks(.arena, [(2, [Encoder.meta(0), Code.live])])
        outside.globals(Encoder.object(0))
        outside.instances(Encoder.object(3))
        seeds["outside-malloc"] = outside.bytes

        // A stack slot → Screen.state (.loading, a tagged payload); an async task → a box → its
        // model; thread-local storage → a model.
        var roots = Encoder()
        roots.classType(name: Name.model)
        roots.typeSpec([Encoder.kind(.task), 0, Name.node])
        roots.typeSpec(
            [Encoder.kind(.enumeration), 0, 0xF9] + Array("LoadState".utf8) + [2, Name.loading, 0, Name.idle, 0xFF])
        roots.classType(name: Name.screen, words: 1, fields: [(2, Encoder.symbolic(2), Name.state)])
        roots.typeSpec([Encoder.kind(.box), 0, Name.model, 16, 0])
        roots.chunks(
            .heap,
            [
                (2, [Encoder.meta(3), Code.live, Code.relativeTagged + 4]), (2, [Encoder.meta(0), Code.live]),
                (3, [Encoder.meta(1), Code.live, Code.closureCode, Code.runtimeCode, Code.relative + 4]),
                (2, [Encoder.meta(4), Code.live, Code.relative + 4]), (2, [Encoder.meta(0), Code.live]),
                (2, [Encoder.meta(0), Code.live]),
            ])
        roots.stack(
            Encoder.object(0) + [Code.zero, Code.zero, Code.zero, Code.zero, Code.zero, Code.zero, Code.zero]
                + [Code.stack + 4, Code.closureCode] + [Code.zero, Code.zero, Code.zero, Code.zero, Code.zero, Code.zero]
                + [Code.zero, Code.thunkCode])
        roots.thread(
            instructionPointer: [Code.closureCode], stackPointer: [Code.stack], framePointer: [Code.stack + 2],
            threadPointer: [Code.threadPointer], name: Name.session, registers: [Code.small + 1])
        roots.threadLocal([Code.zero, Code.zero] + Encoder.object(5))
        roots.instances(Encoder.object(1) + Encoder.object(4) + Encoder.object(5))
        seeds["roots"] = roots.bytes

        // Behind a malloc interposer's header (each object 16 bytes into its block): App.store →
        // Session.model → the first instance; a malloc block holds the second; the third is on a
        // cycle of two nodes that nothing else holds.
        var interposed = Encoder(flags: 8)
        interposed.classType(name: Name.model)
        interposed.classType(name: Name.session, words: 1, fields: [(2, Encoder.symbolic(0), Name.modelProperty)])
        interposed.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(2), Name.next)])
        interposed.chunks(
            .heap,
            [
                (4, [Encoder.meta(1), Code.live] + Encoder.object(1), free: false),
                (4, [Encoder.meta(0), Code.live], free: false),
                (4, [Code.small + 7] + Encoder.object(3), free: false),
                (4, [Encoder.meta(0), Code.live], free: false),
                (4, [Encoder.meta(2), Code.live] + Encoder.object(5), free: false),
                (4, [Encoder.meta(2), Code.live] + Encoder.object(4), free: false),
            ])
        interposed.globals(Encoder.object(0))
        interposed.instances(Encoder.object(1) + Encoder.object(3) + Encoder.object(4))
        seeds["interposed-malloc"] = interposed.bytes
        untypedMemorySeeds(&seeds)
        return seeds
    }

    /// Untyped memory: a cycle held from a C block (an opaque retained pointer), array storage
    /// held through interior pointers (from a C block and from the stack), and the stale words of
    /// blocks malloc keeps free (a tcache list of two, a thread arena's and the main arena's
    /// fastbins) and of a side table, which hold nothing.
    private static func untypedMemorySeeds(_ seeds: inout [String: [UInt8]]) {
        let heap = HeapSnapshotReplay.starts[Area.heap.rawValue]
        // A C block of 24 bytes holds the first of a cycle of two nodes, retained (its strong
        // count is one more than the other node's reference); the same block's word, when it
        // holds no count of its own, points into the cycle that holds it.
        for (name, counts) in [("opaque-retained", Code.liveStrong), ("stale-word-into-cycle", Code.live)] {
            var opaque = Encoder()
            opaque.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
            opaque.chunks(
                .heap,
                [
                    (2, [Encoder.meta(0), counts] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live] + Encoder.object(0)),
                    (2, [Code.small + 5] + Encoder.object(0)),
                ])
            opaque.instances(Encoder.object(1))
            seeds[name] = opaque.bytes
        }

        // Two arrays' storage, each of one model: a C block points at the first's count, a stack
        // slot at the second's first element.
        var interior = Encoder()
        interior.classType(name: Name.model)
        interior.typeSpec([Encoder.kind(.array), 0, Name.items, 0])
        interior.chunks(
            .heap,
            [
                (3, [Encoder.meta(1), Code.live, Code.small + 1, Code.small + 1] + Encoder.object(2)),
                (3, [Encoder.meta(1), Code.live, Code.small + 1, Code.small + 1] + Encoder.object(3)),
                (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]),
                (2, [Code.small + 5, Code.objectField, 0]),
            ])
        interior.stack(Encoder.literal(heap + 0x40 + 32))
        interior.instances(Encoder.object(2) + Encoder.object(3))
        seeds["interior-pointers"] = interior.bytes

        // [heap] starts with the main thread's tcache (bin 0: two blocks of 32 bytes); a cycle of
        // two nodes; the two freed blocks, the second with a stale pointer to the cycle.
        let key: UInt64 = 0x5A17_C0DE_0BAD_F00D
        let first = Encoder.block(.heap, offset: 0x2F0)
        let second = Encoder.block(.heap, offset: 0x2D0)
        var tcache = Encoder()
        tcache.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        tcache.chunks(
            .heap,
            [
                (41, [Code.small + 2] + [UInt8](repeating: Code.zero, count: 15) + Encoder.literal(first)),
                (2, [Encoder.meta(0), Code.live] + Encoder.object(2)), (2, [Encoder.meta(0), Code.live] + Encoder.object(1)),
                (2, Encoder.literal(second >> 12) + Encoder.literal(key) + Encoder.object(1)),
                (2, Encoder.literal((first >> 12) ^ second) + Encoder.literal(key)),
            ])
        tcache.instances(Encoder.object(2))
        seeds["tcache-freed"] = tcache.bytes

        // A thread arena's first heap (its malloc_state after heap_info) whose fastbin for 32
        // bytes holds a freed block with stale pointers to a cycle; and the main arena, in the
        // image's data (its `top` the [heap]'s top chunk, its `next` itself), whose fastbin
        // holds another.
        let arenaBlock = Encoder.block(.arena, offset: 0x40, flags: 2)
        let heapBlock = Encoder.block(.heap, offset: 0x20)
        let mainArena = HeapSnapshotReplay.starts[Area.data.rawValue] + 0x800
        var fastbins = Encoder(flags: 2)
        fastbins.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        fastbins.chunks(
            .arena,
            [
                (2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live] + Encoder.object(0)),
                (2, Encoder.literal(arenaBlock >> 12) + Encoder.object(0) + Encoder.object(1)),
            ])
        fastbins.chunks(
            .heap,
            [
                (2, [Encoder.meta(0), Code.live] + Encoder.object(3)),
                (2, Encoder.literal(heapBlock >> 12) + Encoder.object(0) + Encoder.object(3)),
                (2, [Encoder.meta(0), Code.live] + Encoder.object(0)),
            ])
        // fastbinsY[0] at 0x10, `top` at 0x60, `next` at 0x870.
        fastbins.patch(.arena, word: 8, Encoder.literal(arenaBlock - 16))
        fastbins.patch(.data, word: 0x102, Encoder.literal(heapBlock - 16))
        fastbins.patch(.data, word: 0x10C, Encoder.literal(heap + 0x60))
        fastbins.patch(.data, word: 0x20E, Encoder.literal(mainArena))
        fastbins.instances(Encoder.object(0) + Encoder.object(3))
        seeds["fastbin-freed"] = fastbins.bytes

        // A node whose reference counts name a side table: a malloc block whose first word points
        // back at it. The node is held by nothing.
        let sideTable = Encoder.block(.heap, offset: 0x20)
        var side = Encoder()
        side.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        side.chunks(
            .heap,
            [
                (2, [Encoder.meta(0)] + Encoder.literal(sideTable >> 3 | 3 << 62) + [Code.zero]),
                (2, Encoder.object(0) + [Code.small + 3, Code.zero]),
            ])
        side.instances(Encoder.object(0))
        seeds["side-table"] = side.bytes

        // A cycle of two nodes whose only other "references" are stale words past the text of
        // two stdio buffers: stdout's (its FILE in the image's data) and an fopen'd stream's (its
        // FILE a malloc block).
        let text = Encoder.literal(0x0A21_6F6C_6C65_48)  // "Hello!\n"
        var stdio = Encoder()
        stdio.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        stdio.chunks(
            .heap,
            [
                (2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live] + Encoder.object(0)),
                (4, text + Encoder.object(0) + Encoder.object(1)),
                (
                    6,
                    Encoder.literal(0xFBAD_2484) + [Code.zero, Code.zero, Code.zero] + Encoder.object(4)
                        + [Code.objectField, 4, Code.zero] + Encoder.object(4) + Encoder.literal(heap + 0xF0 + 56)
                ),
                (4, text + Encoder.object(1)),
            ])
        stdio.patch(
            .data, word: 0x100,
            Encoder.literal(0xFBAD_2884) + [Code.zero, Code.zero, Code.zero] + Encoder.object(2) + [Code.objectField, 2]
                + [Code.zero] + Encoder.object(2) + Encoder.literal(heap + 0x50 + 56))
        stdio.instances(Encoder.object(0))
        seeds["stdio-buffers"] = stdio.bytes

        // A cycle of two nodes whose only other "references" are stale words in the inline buffer
        // of an empty ICU `UnicodeString` (flags: kUsingStackBuffer) and past the text pointer of
        // a long one (kRefCounted), and a third node that long string's text pointer holds (a
        // buffer that may alias any memory).
        let icuString = Encoder.literal(HeapSnapshotReplay.unicodeStringVTable)
        // Nodes 0 and 1 on a cycle, node 2 alone, then the blocks of untyped memory.
        let cycleAndOne: [(UInt8, [UInt8])] = [
            (2, [Encoder.meta(0), Code.live] + Encoder.object(1)), (2, [Encoder.meta(0), Code.live] + Encoder.object(0)),
            (2, [Encoder.meta(0), Code.live, Code.zero]),
        ]
        var icu = Encoder()
        icu.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        icu.chunks(
            .heap,
            cycleAndOne + [
                (5, icuString + Encoder.literal(0x7E12_0002) + Encoder.object(0) + Encoder.object(1) + Encoder.object(0)),
                (
                    5,
                    icuString + Encoder.literal(0x0000_0040_0000_0804) + Encoder.literal(0x41) + Encoder.object(2)
                        + Encoder.object(0) + Encoder.object(1)
                ),
            ])
        icu.instances(Encoder.object(0) + Encoder.object(2))
        seeds["icu-strings"] = icu.bytes

        // A cycle of two nodes whose only other "references" are stale words past the size of a
        // C block on the heap (its descriptor says 40 bytes: the header and one capture), and a
        // third node that the capture holds.
        let descriptor = HeapSnapshotReplay.starts[Area.types.rawValue] + 0xA00
        var cBlock = Encoder()
        cBlock.classType(name: Name.node, words: 1, fields: [(2, Encoder.symbolic(0), Name.next)])
        cBlock.chunks(
            .heap,
            cycleAndOne + [
                (
                    5,
                    Encoder.literal(HeapSnapshotReplay.mallocBlockClass) + Encoder.literal(0x4300_0002) + [Code.zero]
                        + Encoder.literal(descriptor) + Encoder.object(2) + Encoder.object(0) + Encoder.object(1)
                )
            ])
        cBlock.patch(.types, word: 0xA00 / 8, [Code.zero] + Encoder.literal(40))
        cBlock.instances(Encoder.object(0) + Encoder.object(2))
        seeds["c-blocks"] = cBlock.bytes

        // App.store → Screen, whose `Unmanaged` property holds a model, whose raw-pointer property
        // points into another, and whose weak one names a third, which nothing holds.
        var unmanaged = Encoder()
        unmanaged.classType(name: Name.model, words: 1)
        unmanaged.classType(
            name: Name.screen, words: 3,
            fields: [(2, [6], Name.modelProperty), (3, [7], Name.items), (4, [3], Name.next)])
        unmanaged.chunks(
            .heap,
            [
                (3, [Encoder.meta(1), Code.live] + Encoder.object(1) + [Code.objectField, 2] + Encoder.object(3)),
                (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]), (2, [Encoder.meta(0), Code.live]),
            ])
        unmanaged.globals(Encoder.object(0))
        unmanaged.instances(Encoder.object(1) + Encoder.object(2) + Encoder.object(3))
        seeds["unmanaged"] = unmanaged.bytes
    }

    /// Indexes of `names`.
    enum Name {
        static let node: UInt8 = 0
        static let model: UInt8 = 1
        static let screen: UInt8 = 2
        static let session: UInt8 = 3
        static let next: UInt8 = 4
        static let parent: UInt8 = 9
        static let modelProperty: UInt8 = 5
        static let onClose: UInt8 = 6
        static let items: UInt8 = 7
        static let state: UInt8 = 8
        static let cache: UInt8 = 11
        static let string: UInt8 = 12
        static let int: UInt8 = 13
        static let loading: UInt8 = 14
        static let idle: UInt8 = 15
    }

    /// An input under construction, section by section (the layout `HeapSnapshotReplay` reads).
    struct Encoder {
        var bytes: [UInt8]

        init(flags: UInt8 = 0) { bytes = [flags] }

        /// Object `index`'s address.
        static func object(_ index: Int) -> [UInt8] {
            index < 64 ? [Code.object + UInt8(index)] : [Code.objectWide, UInt8(index & 0xFF), UInt8(index >> 8)]
        }

        static func meta(_ type: UInt8) -> UInt8 { Code.metadata + type }

        /// A 64-bit value as it is.
        static func literal(_ value: UInt64) -> [UInt8] { [Code.literal64] + (0..<8).map { UInt8(value >> (8 * $0) & 0xFF) } }

        /// The user address of the chunk `offset` bytes into `area`'s first chunk (in a thread
        /// arena, its first heap's).
        static func block(_ area: Area, offset: UInt64, flags: UInt8 = 0) -> UInt64 {
            HeapSnapshotReplay.starts[area.rawValue] + (area == .arena ? (flags & 2 != 0 ? 0x900 : 48) : 0) + offset + 16
        }

        static func kind(_ kind: TypeSpec.Kind) -> UInt8 { UInt8(kind.rawValue) }

        /// A mangled name that refers to type `type`'s descriptor.
        static func symbolic(_ type: UInt8) -> [UInt8] { [0, type] }

        mutating func typeSpec(_ spec: [UInt8]) { bytes += [0] + spec }

        /// A class with `words` words of stored properties after the header, and fields of
        /// (offset in words, mangled name, name).
        mutating func classType(name: UInt8, words: UInt8 = 0, fields: [(UInt8, [UInt8], UInt8)] = []) {
            typeSpec([0, 0, name, words, 0xFF, UInt8(fields.count)] + fields.flatMap { [$0.0] + $0.1 + [$0.2] })
        }

        /// A group of chunks (units of 16 bytes, tokens, freed), repeated.
        mutating func chunks(_ area: Area, _ chunks: [(UInt8, [UInt8], free: Bool)], repeats: Int = 1) {
            bytes += [1, UInt8(area.rawValue)]
            bytes += repeats <= 255 ? [UInt8(repeats - 1)] : [0xFF, UInt8((repeats - 1) & 0xFF), UInt8((repeats - 1) >> 8)]
            bytes.append(UInt8(chunks.count))
            for chunk in chunks {
                bytes += [chunk.0, chunk.free ? 1 : 0, UInt8(Self.count(chunk.1))] + chunk.1
            }
        }

        mutating func chunks(_ area: Area, _ chunks: [(UInt8, [UInt8])], repeats: Int = 1) {
            self.chunks(area, chunks.map { ($0.0, $0.1, free: false) }, repeats: repeats)
        }

        mutating func globals(_ tokens: [UInt8]) { bytes += [2, UInt8(Self.count(tokens))] + tokens }
        mutating func stack(_ tokens: [UInt8]) { bytes += [3, UInt8(Self.count(tokens))] + tokens }
        mutating func instances(_ tokens: [UInt8]) { bytes += [5, UInt8(Self.count(tokens))] + tokens }
        mutating func threadLocal(_ tokens: [UInt8]) { bytes += [9, UInt8(Self.count(tokens))] + tokens }
        /// Words written over `area` from word `word` on, after everything else.
        mutating func patch(_ area: Area, word: Int, _ tokens: [UInt8]) {
            bytes += [6, UInt8(area.rawValue), UInt8(word & 0xFF), UInt8(word >> 8), UInt8(Self.count(tokens))] + tokens
        }

        mutating func thread(
            instructionPointer: [UInt8], stackPointer: [UInt8], framePointer: [UInt8], threadPointer: [UInt8], name: UInt8,
            registers: [UInt8]
        ) {
            bytes += [4] + instructionPointer + stackPointer + framePointer + threadPointer + [name]
            bytes += [UInt8(Self.count(registers))] + registers
        }

        /// How many tokens `bytes` spell.
        static func count(_ tokens: [UInt8]) -> Int {
            var position = 0
            var count = 0
            while position < tokens.count {
                position += 1 + HeapSnapshotReplay.payloadBytes(tokens[position])
                count += 1
            }
            return count
        }
    }
}
