import LeakAuditModel
import LeakAuditPresentation
import LeakAuditWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the channel's header says once the target is gone: written by the processes that attached.
struct ChannelSummary {
    /// A process attached.
    var attached: Bool
    /// How many processes attached (at most LA_WIRE_MAX_PROCESSES are audited).
    var attachedProcesses: Int
    /// Swift processes whose allocations the preloaded library watched.
    var watchedProcesses = 0
    /// Swift processes left out: SwiftPM's manifests and plugins, build helpers.
    var skippedProcesses = 0
    /// Children forked without exec by attached processes: not audited.
    var forkedProcesses = 0
    /// Records the target could not write.
    var droppedRecords: UInt64 = 0
    /// What went wrong or was found while writing.
    var flags: ChannelFlags = [.instrumented]

    /// The header of `channel`, read now.
    init(_ channel: RecordChannel) {
        attached = channel.attachedPID != 0
        attachedProcesses = Swift.min(channel.attachedProcesses, Int(LA_WIRE_MAX_PROCESSES))
        watchedProcesses = channel.watchedProcesses
        skippedProcesses = channel.skippedProcesses
        forkedProcesses = channel.forkedProcesses
        droppedRecords = channel.droppedRecords
        flags = ChannelFlags(rawValue: channel.flags)
    }

    /// Makes the header agree with the records received (`ledgers`, by process index, of the
    /// processes that announced themselves) over a run of `milliseconds`, and says what it
    /// contradicted. A process writes the header's fields before its records, so records that
    /// arrived outweigh a header that says otherwise: it was written over. A count no run can
    /// reach (more than one process a microsecond, or one record a nanosecond) is replaced by 0:
    /// such a figure means nothing, and is not printed.
    mutating func reconcile(with ledgers: [UInt8: LifetimeLedger], milliseconds: UInt64) -> [String] {
        var problems: [String] = []
        if ledgers.isEmpty && attached {
            // A process announces itself right after it takes its index: one that died in between
            // is as untrustworthy as a header written over.
            problems.append("it names an attached process, but no process announced itself")
        }
        if let highest = ledgers.keys.max() {
            if !attached {
                attached = true
                problems.append(
                    "it says that no process attached, but \(counted(ledgers.count, "process", plural: "processes")) wrote records"
                )
            }
            if attachedProcesses <= Int(highest) {
                problems.append(
                    "it counts \(counted(attachedProcesses, "attached process", plural: "attached processes")), but process index \(highest) wrote records"
                )
                attachedProcesses = Int(highest) + 1
            } else if attachedProcesses > Int(highest) + 1 {
                // Indexes taken by processes that never announced themselves: not audited, and
                // not counted as attached (a process killed between the two, or a forged count).
                attachedProcesses = Int(highest) + 1
            }
            if !flags.contains(.instrumented) && ledgers.values.contains(where: \.definesTypesInCode) {
                flags.insert(.instrumented)
                problems.append(
                    "its flags say that no process linked LeakMonitor, but types whose budget is declared in code arrived")
            }
            let allocating = ledgers.values.map(\.sawAllocations).filter(\.any)
            if flags.contains(.staticRuntime) && !allocating.isEmpty && allocating.allSatisfy(\.deaths) {
                flags.remove(.staticRuntime)
                problems.append(
                    "its flags say that deallocations could not be seen, but every process that allocated reported some")
            }
        }
        let mostProcesses = (milliseconds &+ 1).multipliedReportingOverflow(by: 1_000)
        let processLimit = mostProcesses.overflow ? UInt64.max : mostProcesses.partialValue
        for (count, what) in [
            (\ChannelSummary.watchedProcesses, "watched processes"), (\ChannelSummary.skippedProcesses, "skipped processes"),
            (\ChannelSummary.forkedProcesses, "children forked without exec"),
        ] where UInt64(clamping: self[keyPath: count]) > processLimit {
            self[keyPath: count] = 0
            problems.append("its count of \(what) is more than one a microsecond of the run")
        }
        let mostRecords = (milliseconds &+ 1).multipliedReportingOverflow(by: 1_000_000)
        if !mostRecords.overflow && droppedRecords > mostRecords.partialValue {
            droppedRecords = 0
            problems.append("its count of records not written is more than one a nanosecond of the run")
        }
        return problems
    }

    init(
        attached: Bool, attachedProcesses: Int, watchedProcesses: Int = 0, skippedProcesses: Int = 0,
        droppedRecords: UInt64 = 0, flags: ChannelFlags = [.instrumented]
    ) {
        self.attached = attached
        self.attachedProcesses = attachedProcesses
        self.watchedProcesses = watchedProcesses
        self.skippedProcesses = skippedProcesses
        self.droppedRecords = droppedRecords
        self.flags = flags
    }
}

/// The header's LA_FLAG_* bits.
struct ChannelFlags: OptionSet {
    let rawValue: UInt32

    /// The Swift runtime is linked statically: deallocations were invisible.
    static let staticRuntime = ChannelFlags(rawValue: UInt32(LA_FLAG_STATIC_RUNTIME))
    /// A process's LeakMonitor writes another record format version.
    static let recordFormatMismatch = ChannelFlags(rawValue: UInt32(LA_FLAG_VERSION_MISMATCH))
    /// Some allocations have no stack: the stack table was full.
    static let stackTableFull = ChannelFlags(rawValue: UInt32(LA_FLAG_STACK_TABLE_FULL))
    /// Later types were not tracked: the type table was full.
    static let typeTableFull = ChannelFlags(rawValue: UInt32(LA_FLAG_TYPE_TABLE_FULL))
    /// More processes than the channel has indices: the later ones were not audited.
    static let tooManyProcesses = ChannelFlags(rawValue: UInt32(LA_FLAG_TOO_MANY_PROCESSES))
    /// A process linking LeakMonitor attached (the preloaded library alone also attaches, to name
    /// tests).
    static let instrumented = ChannelFlags(rawValue: UInt32(LA_FLAG_INSTRUMENTED))
}

/// What the target's processes wrote, decoded.
struct Reception {
    /// One ledger per attached process, by process index: ids and addresses are per process.
    var ledgers: [UInt8: LifetimeLedger]
    /// The channel's header.
    var channel: ChannelSummary
    /// Records torn by the target's death: reserved and never written.
    var tornSlots: UInt64 = 0
    /// Slots the decoder found no writer could have written (a damaged stream), stacks longer than
    /// LA_WIRE_MAX_FRAMES among them.
    var malformedSlots: UInt64 = 0
    /// Stacks longer than LA_WIRE_MAX_FRAMES (damage), cut there, and the addresses cut.
    var overlongStacks: UInt64 = 0
    var cutFrames: UInt64 = 0
    /// Type and test names longer than LA_WIRE_MAX_NAME bytes, cut there.
    var longNames: UInt64 = 0
    /// Records of process indexes that never announced themselves: damage, applied nowhere.
    var unannouncedRecords: UInt64 = 0
    /// How the channel's header contradicted the records received (`ChannelSummary.reconcile`),
    /// each a damaged record.
    var headerProblems: [String] = []
    /// Reservations that were never filled while their writers lived, and torn records more than
    /// writers can leave (`Reception.mostCutShort`), each a line and a damaged record.
    var reservationProblems: [String] = []

    /// Every damaged record: malformed slots, records of processes that never announced
    /// themselves, and each header contradiction and reservation problem.
    var damagedSlots: UInt64 {
        malformedSlots &+ unannouncedRecords &+ UInt64(headerProblems.count) &+ UInt64(reservationProblems.count)
    }
    /// `--timeout` ran out and the target was stopped.
    var timedOut = false
    /// A signal leak-audit received and passed to the target (SIGINT from a user, SIGTERM from CI).
    var receivedSignal: Int32? = nil
    /// From the channel's creation until its last record was read, in milliseconds.
    var durationMilliseconds: UInt64 = 0

    /// The most records the processes of a run can leave cut short when they end: one reservation
    /// of each writer between reserve and commit, or waiting for room (`mostWaitingWriters`).
    /// More is damage, not deaths.
    static let mostCutShort = RecordDecoder.mostWaitingWriters

    /// Slots decoded in one pass from which the reader takes the next pass at once.
    static let backlogSlots: UInt64 = 4096

    /// Fewer slots than this in a pass make the pause after it twice as long, up to
    /// `quietPauseFactor` times the poll interval; four times as many halve it.
    static let quietSlots: UInt64 = 1024
    static let quietPauseFactor: UInt32 = 8

    /// How many times a process's grace question may be answered by a copy of it
    /// (`answerGraceQuestions`): each costs about what the walk at exit's copy costs.
    static let testCaseChecks = 3

    /// Whether XCTest's test case objects in process `pid` (with the images it loaded) hold every
    /// one of the instances in a stored property of their own, or through `let` properties of
    /// what those hold (`RetainerSearch.testCasesHold`): XCTest releases those when the run ends.
    /// False when it cannot be told.
    typealias TestCasesHold = (_ pid: Int32, _ instances: [UInt64], _ modules: [ModuleImage]) -> Bool

    /// What the `let` globals and `static let`s of a class type of process `pid` (with the images
    /// it loaded) hold now (`AuditPlatform.immutableGlobalReferences`): kept until it ends.
    typealias ImmutableGlobalsHold = (_ pid: Int32, _ modules: [ModuleImage]) -> Set<UInt64>

    /// Decodes `channel` into one ledger per process while `target` runs (a pass every
    /// `pollMicroseconds`, longer while the target writes little, or at once after a pass that
    /// found a backlog), and once more after it ended, so that every committed record is read.
    /// With `--retainers` (or another walk), `walkHeaps` answers the processes that wait for a heap
    /// walk, given each process's ledger by index, and in a test run those that ask whether their
    /// finished tests still have instances alive, which `immutableGlobalsHold` may tell are kept
    /// by `let` globals and `testCasesHold` by test case objects' properties. `progress` hears the
    /// counts at most every `ProgressReporter.interval`.
    /// `imageInUse` hears each process's program as soon as its record is read, and each other
    /// image as soon as a stack it recorded passes through it. `processEnding` hears each
    /// process's ledger once, when the process first waits at its end (for its last tests' grace
    /// periods, or for its walk at exit).
    static func receive(
        from channel: RecordChannel, while target: any RunningTarget, watch: WatchOptions, timeoutSeconds: Int? = nil,
        pollMicroseconds: UInt32 = 1_000, walkHeaps: (RecordChannel, [LifetimeLedger?]) -> Void = { _, _ in },
        immutableGlobalsHold: ImmutableGlobalsHold? = nil, testCasesHold: TestCasesHold? = nil,
        imageInUse: ((ModuleImage) -> Void)? = nil, processEnding: ((Int, LifetimeLedger) -> Void)? = nil,
        progress: ProgressReporter? = nil
    ) -> (outcome: TargetOutcome, received: Reception) {
        var reader = Reader(
            channel: channel, target: target, watch: watch, timeoutSeconds: timeoutSeconds,
            pollMicroseconds: pollMicroseconds)
        reader.immutableGlobalsHold = immutableGlobalsHold
        reader.testCasesHold = testCasesHold
        reader.processEnding = processEnding
        reader.ledgers.imageInUse = imageInUse
        let outcome: TargetOutcome
        while true {
            if let ended = target.poll() {
                outcome = ended
                break
            }
            let decodedSlots = reader.decodePass()
            if reader.abandonsStalledReservation() { continue }
            reader.stopOnTimeout()
            if (watch.walksHeaps || watch.observesTests) && channel.hasPendingWalk { reader.answerWalks(walkHeaps) }
            // Once per pass, never per record: the tally is made only when a snapshot is due.
            if let progress, progress.isDue() {
                progress.recording(reader.ledgers.progressTally(), attachedProcesses: channel.attachedProcesses)
            }
            reader.pause(afterDecoding: decodedSlots)
        }
        return (outcome, reader.finish())
    }

    /// The reader's state from one pass over the channel to the next while the target runs.
    private struct Reader {
        let channel: RecordChannel
        let target: any RunningTarget
        let watch: WatchOptions
        let pollMicroseconds: UInt32
        var decoder = RecordDecoder()
        var ledgers: ProcessLedgers  // var: the decoder's inout sink
        // Times, in the channel's clock (milliseconds), which every pass reads: when the run
        // started, how long it may run, and when a --timeout asked the target to stop.
        let started: UInt64
        let timeout: UInt64?
        var stoppedAt: UInt64? = nil
        // The slot the decoder has waited on, and since when (the channel's clock, in ms): a writer
        // that died between reserve and commit while other processes of the target write on.
        var waitingSlot: UInt64? = nil
        var waitingSince: UInt64 = 0
        // The slots reserved when that wait began: all were reserved before it.
        var reservedWhenWaiting: UInt64 = 0
        // When the possible owners of that slot are looked at next (`ReservationOwners`: a pass
        // of the ring's tags and a look at each process), in the channel's clock.
        var nextOwnerCheck: UInt64 = 0
        // Reservations abandoned while every process that may have made them still ran.
        var unfilledReservations: UInt64 = 0
        // The pause after the pass under way (`quietSlots`).
        var pause: UInt32
        // What a process's `let` globals hold, whether XCTest's test case objects' properties
        // hold every one of some instances of a process (`answerGraceQuestions`), and the
        // processes asked so far.
        var immutableGlobalsHold: ImmutableGlobalsHold? = nil
        var testCasesHold: TestCasesHold? = nil
        var testCasesAsked: [Int: (checks: Int, instances: Int)] = [:]
        // Hears each process once, when it first waits at its end (`receive`), and the processes
        // it heard.
        var processEnding: ((Int, LifetimeLedger) -> Void)? = nil
        var processesEnding: Set<Int> = []

        init(
            channel: RecordChannel, target: any RunningTarget, watch: WatchOptions, timeoutSeconds: Int?,
            pollMicroseconds: UInt32
        ) {
            self.channel = channel
            self.target = target
            self.watch = watch
            self.pollMicroseconds = pollMicroseconds
            ledgers = ProcessLedgers(watchesAllocations: watch.watchesAllocations)
            started = channel.publishClock()
            timeout = timeoutSeconds.map { Swift.min(UInt64(clamping: $0), UInt64.max / 1_000) * 1_000 }
            pause = pollMicroseconds
        }

        /// Decodes what was committed since the last pass; returns how many slots it read.
        mutating func decodePass() -> UInt64 {
            let cursorBefore = decoder.cursor
            decoder.decode(channel, targetFinished: false, into: &ledgers)
            return decoder.cursor &- cursorBefore
        }

        /// Whether the reservation the decoder waits on was given up (then the next pass comes at
        /// once).
        mutating func abandonsStalledReservation() -> Bool {
            guard decoder.isWaiting(on: channel) else {
                waitingSlot = nil
                return false
            }
            if waitingSlot != decoder.cursor {
                (waitingSlot, waitingSince) = (decoder.cursor, decoder.clock)
                reservedWhenWaiting = channel.reservedSlots
                return false
            }
            let waited = decoder.clock &- waitingSince
            guard waited > Reception.deadWriterMilliseconds, decoder.clock >= nextOwnerCheck else { return false }
            // A record takes microseconds to write: its writer is taken for dead after a second
            // once every process that may have reserved the slot has ended, or the process its
            // writer marked it with (a blob's) has (`ReservationOwners`); for stalled after ten once others wait behind it (the ring
            // is full, or a later record is committed); and after 30 s whatever happened (one
            // that died before it said who it is). A live writer that is only slow must not be
            // passed over (its record would land in a slot the ring hands out again): on a
            // loaded machine a thread can wait more than a second for a core, but ten only when
            // something stopped it. Where a live process may own the slot, a reservation left
            // empty costs the longer wait, and is damage unless one that may own it has ended.
            nextOwnerCheck = decoder.clock &+ Reception.ownerCheckMilliseconds
            let owners = ReservationOwners(
                of: decoder.cursor, in: channel, announced: ledgers.announced,
                hasEnded: { target.hasEnded(process: $0) })
            let below: UInt64
            if owners.allEnded {
                // Every slot reserved before the wait began and still empty is torn, in one pass (a
                // dead writer's reservation costs one wait, not one per slot), up to the first
                // process that announced itself after the slot: those after it may be its own.
                below = Swift.min(reservedWhenWaiting, owners.firstLaterAnnouncement ?? UInt64.max)
            } else if owners.markedOwnerEnded {
                // Its writer marked it (a blob's) and that process has ended: the blob's slots
                // are never written, whoever else lives.
                below = owners.markedSlotsEnd
            } else if (waited > Reception.stalledWriterMilliseconds
                && Reception.othersWaitBehind(decoder.cursor, in: channel))
                || waited > Reception.silentWriterMilliseconds
            {
                if !owners.someEnded { unfilledReservations &+= 1 }
                below = reservedWhenWaiting
            } else {
                return false
            }
            // At most a ring at a time: a `next_slot` further ahead is a damaged
            // header (counted once at the end), not slots to walk through each pass.
            decoder.abandonReservations(
                below: Swift.min(Swift.max(below, decoder.cursor &+ 1), decoder.cursor &+ channel.slotCapacity))
            waitingSlot = nil
            return true
        }

        /// With `--timeout`: stops the target as a person would stop it, asked first, then killed.
        mutating func stopOnTimeout() {
            guard let timeout else { return }
            if stoppedAt == nil, decoder.clock &- started > timeout {
                target.send(SIGTERM)
                stoppedAt = decoder.clock
            } else if let stoppedAt, decoder.clock &- stoppedAt > 5_000 {
                target.send(SIGKILL)
            }
        }

        /// Answers the processes that wait for a heap walk or ask a grace question.
        mutating func answerWalks(_ walkHeaps: (RecordChannel, [LifetimeLedger?]) -> Void) {
            // A process asks only once its records are written: decoding again now puts all of
            // them in its ledger before its heap is searched.
            decoder.decode(channel, targetFinished: false, into: &ledgers)
            noteProcessesEnding()
            answerGraceQuestions()
            if watch.walksHeaps { walkHeaps(channel, ledgers.byIndex) }
            // The target was stopped while its memory was copied: a writer it stopped between
            // reserving and writing a record has not stalled. Its wait starts again.
            waitingSlot = nil
        }

        /// Gives `processEnding` the index and ledger of each process that waits at its end for the first
        /// time: its grace question (asked only then) or its walk at exit.
        mutating func noteProcessesEnding() {
            guard let processEnding else { return }
            for index in 0..<Swift.min(channel.attachedProcesses, Int(LA_WIRE_MAX_PROCESSES))
            where !processesEnding.contains(index) {
                guard let request = channel.pendingWalk(of: index), request.graceQuestion || request.atExit,
                    let ledger = ledgers.ledger(ofProcess: index)
                else { continue }
                processesEnding.insert(index)
                processEnding(index, ledger)
            }
        }

        /// Tells each test process that asks before it exits (`LA_WALK_GRACE_QUESTION`) whether
        /// its finished tests still have instances alive that work in flight may release: it
        /// waits for their grace periods only then. Not for what a `let` global or `static let`
        /// holds (`immutableGlobalsHold`, read while the process runs): nothing can store another
        /// reference there. Nor when XCTest's test case objects hold every other one in a stored
        /// property of their own or through `let`s (`testCasesHold`: asked again only once fewer
        /// instances are left, `testCaseChecks` times at most a process): XCTest releases those at
        /// the run's end, and only work in flight that sets such a property again could before. A
        /// process whose ledger is unknown is told yes, and waits as it would unasked.
        mutating func answerGraceQuestions() {
            for index in 0..<Swift.min(channel.attachedProcesses, Int(LA_WIRE_MAX_PROCESSES)) {
                guard let request = channel.pendingWalk(of: index), request.graceQuestion else { continue }
                var needed = true
                if let question = ledgers.graceQuestion(inProcess: index, watch: watch) {
                    var instances = question.instances
                    if !instances.isEmpty, let pid = question.pid, let immutableGlobalsHold {
                        let kept = immutableGlobalsHold(pid, question.modules)
                        if !kept.isEmpty { instances.removeAll(where: kept.contains) }
                    }
                    needed = !instances.isEmpty
                    // Asked again once fewer instances are left (tests settled, work in flight
                    // released some), at most `testCaseChecks` times a process.
                    let asked = testCasesAsked[index] ?? (checks: 0, instances: Int.max)
                    if needed, let pid = question.pid, let testCasesHold, asked.checks < Reception.testCaseChecks,
                        instances.count < asked.instances, ledgers.keepsTestCaseObjects(inProcess: index)
                    {
                        testCasesAsked[index] = (asked.checks + 1, instances.count)
                        needed = !testCasesHold(pid, instances, question.modules)
                    }
                }
                channel.answerWalk(of: index, number: request.number, graceNeeded: needed)
            }
        }

        /// Pauses before the next pass, for longer while the target writes little.
        mutating func pause(afterDecoding decodedSlots: UInt64) {
            // A pass that found a backlog goes straight on to the next: pausing while records wait
            // let the reader fall behind a busy target (a million allocations under --census left
            // it about 45 ms behind at the target's end), and a full ring makes the target wait.
            if pollMicroseconds > 0 && decodedSlots < Reception.backlogSlots { target.pause(microseconds: pause) }
            // A pass costs about the same whether it finds one record or a thousand: a target that
            // writes little is read less often, up to `quietPauseFactor` times the poll interval
            // (its end still wakes the reader at once). A process waiting for a heap walk is
            // answered at the poll interval: with --retainers the pause never grows.
            if decodedSlots < Reception.quietSlots && !watch.walksHeaps {
                pause = Swift.min(pause &* 2, pollMicroseconds &* Reception.quietPauseFactor)
            } else if decodedSlots >= Reception.quietSlots &* 4 {
                pause = Swift.max(pause / 2, pollMicroseconds)
            }
        }

        /// Reads every record committed before the target ended, and says what was received and
        /// what contradicted it.
        mutating func finish() -> Reception {
            decoder.decode(channel, targetFinished: true, into: &ledgers)
            let byProcess = ledgers.byProcess
            var summary = ChannelSummary(channel)
            let headerProblems = summary.reconcile(with: byProcess, milliseconds: decoder.clock)
            var reservationProblems: [String] = []
            if unfilledReservations > 0 {
                reservationProblems.append(
                    "\(counted(unfilledReservations, "reservation")) in leak-audit's channel stayed empty for more than ten seconds while the processes that write into it ran on; skipped as never filled"
                )
            }
            if decoder.tornSlots > Reception.mostCutShort {
                reservationProblems.append(
                    "\(decoder.tornSlots) records were cut short, more than the \(Reception.mostCutShort) that writers can leave unwritten when they end: something reserved them and never wrote them"
                )
            }
            return Reception(
                ledgers: byProcess,
                channel: summary, tornSlots: decoder.tornSlots,
                malformedSlots: decoder.damagedSlots,
                overlongStacks: decoder.overlongStacks, cutFrames: decoder.cutFrames, longNames: decoder.longNames,
                unannouncedRecords: ledgers.unannouncedRecords, headerProblems: headerProblems,
                reservationProblems: reservationProblems,
                timedOut: stoppedAt != nil,
                receivedSignal: target.receivedSignal, durationMilliseconds: decoder.clock)
        }
    }
}

extension Reception {
    /// How long the reader waits on an empty reservation before it takes the writer for dead (once
    /// every process that may own it has ended), for stalled (while others wait behind it), or for
    /// gone (whatever happened), in milliseconds of the channel's clock.
    static let deadWriterMilliseconds: UInt64 = 1_000
    static let stalledWriterMilliseconds: UInt64 = 10_000
    static let silentWriterMilliseconds: UInt64 = 30_000
    /// How often, past the first second of a wait, the possible owners of the slot are looked at.
    static let ownerCheckMilliseconds: UInt64 = 100

    /// Slots after `cursor` that are looked at for a committed record (`othersWaitBehind`).
    static let committedLookahead: UInt64 = 64

    /// Whether writers wait behind the uncommitted slot at `cursor`: the ring is full (they wait
    /// for room), or a record reserved after it is committed (within `committedLookahead` slots).
    static func othersWaitBehind(_ cursor: UInt64, in channel: RecordChannel) -> Bool {
        let reserved = channel.reservedSlots
        guard reserved > cursor &+ 1 else { return false }
        if reserved &- cursor >= channel.slotCapacity { return true }
        let end = Swift.min(reserved, cursor &+ 1 &+ Self.committedLookahead)
        return (cursor &+ 1..<end).contains { channel.slot($0).tag & 0xFF != UInt64(LA_SLOT_EMPTY) }
    }
}
