import LeakAuditWire

/// The heap walk of one process (`--retainers`): when the process waits at exit, leak-audit copies
/// it (the platform's `copyProcess`), lets it go on, and searches the copy for who holds each
/// instance the report will show: those of types over budget, and those tests left alive.
enum HeapWalk {
    /// What the walk of one process found.
    enum Outcome {
        /// The path found for each instance, by address.
        case searched([UInt64: RetainerSearch.Path])
        /// Why the process could not be walked, for the report.
        case failed(String)
    }

    /// Whether a process waits at exit for a walk not yet taken.
    static func hasPendingRequest(on channel: RecordChannel, walked: [UInt8: Outcome]) -> Bool {
        (0..<Swift.min(channel.attachedProcesses, Int(LA_WIRE_MAX_PROCESSES))).contains { index in
            walked[UInt8(index)] == nil && channel.walkRequested(by: index)
        }
    }

    /// Walks every process that now waits at exit and has not been walked, answering each.
    static func answerRequests(
        on channel: RecordChannel, ledgers: [LifetimeLedger?], walked: inout [UInt8: Outcome],
        copyProcess: (Int32) -> Result<ProcessSnapshot, SnapshotFailure>
    ) {
        let processes = Swift.min(channel.attachedProcesses, ledgers.count)
        for index in 0..<processes where walked[UInt8(index)] == nil && channel.walkRequested(by: index) {
            guard let ledger = ledgers[index], let pid = ledger.process?.pid else {
                walked[UInt8(index)] = .failed("the process did not say who it was")
                channel.answerWalk(of: index, copied: false)
                continue
            }
            let copied = copyProcess(pid)
            // The process goes on exiting while its copy is searched.
            channel.answerWalk(of: index, copied: (try? copied.get()) != nil)
            switch copied {
            case .success(let snapshot):
                walked[UInt8(index)] = .searched(
                    RetainerSearch.paths(of: instancesToExplain(ledger), in: snapshot, modules: ledger.modules))
            case .failure(let failure):
                walked[UInt8(index)] = .failed(failure.message)
            }
        }
    }

    /// The live instances a report can show: of types over budget, and those tests left alive.
    static func instancesToExplain(_ ledger: LifetimeLedger) -> [UInt64] {
        var instances: [UInt64] = []
        for type in ledger.types.values where type.peak > type.max {
            instances.append(contentsOf: type.live.keys)
        }
        for test in ledger.tests.values {
            for leak in test.leaked ?? [] where ledger.isAlive(leak) { instances.append(leak.object) }
        }
        return Array(Set(instances))
    }
}
