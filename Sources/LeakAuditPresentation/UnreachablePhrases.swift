import LeakAuditModel

// How the unreachable objects (`AuditReport.unreachable`) are put into words: a group's headline as
// macOS `leaks` shows a root cycle (`3 × cycle of 2 objects (96 bytes): PairA.other → PairB.other →
// PairA`), the text report's section, and the sentences of the formats that carry no stack block.

extension ReportPhrases {
    /// `PairA.other → PairB.other → PairA`: the group's path as a retaining path reads, types
    /// without their modules.
    public static func unreachableChain(_ group: UnreachableObjects.Group) -> String {
        retainerChain(Retainer(count: group.count, root: Retainer.Root(kind: .cycle, name: ""), path: group.path))
    }

    /// Objects on one structure of the group as a reader counts them: the cycle's (its last step
    /// is its first object again) without collections' storage, or the object alone.
    public static func objectsPerStructure(_ group: UnreachableObjects.Group) -> Int {
        switch group.shape {
        case .cycle: Swift.max(1, group.path.dropLast().count { !$0.isCollectionStorage })
        case .overRetained: 1
        }
    }

    /// Objects of the group off its structures: those only they hold (Valgrind's "indirectly
    /// lost"), a collection's storage on the cycle not counted.
    static func heldObjects(_ group: UnreachableObjects.Group) -> Int {
        let onPath =
            switch group.shape {
            case .cycle: Swift.max(1, group.path.count - 1)
            case .overRetained: 1
            }
        return Swift.max(0, group.objects - group.count * onPath)
    }

    /// `3 × cycle of 2 objects (96 bytes): PairA.other → PairB.other → PairA`, `1 × over-retained
    /// Token (32 bytes)`; with `holding 4 more` when the structures hold objects off the cycle.
    public static func unreachableHeadline(_ group: UnreachableObjects.Group) -> String {
        let held = heldObjects(group)
        let holding = held > 0 ? ", holding \(held) more" : ""
        let size = "\(holding) (\(byteCount(group.bytes)))"
        switch group.shape {
        case .cycle:
            return "\(group.count) × cycle of \(counted(objectsPerStructure(group), "object"))\(size): \(unreachableChain(group))"
        case .overRetained:
            return "\(group.count) × over-retained \(unreachableChain(group))\(size)"
        }
    }

    /// One sentence for the formats without a stack block (SARIF, JUnit, GitHub): `3 cycles of 2
    /// objects that nothing reaches (96 bytes): PairA.other → PairB.other → PairA.`
    public static func unreachableSentence(_ group: UnreachableObjects.Group) -> String {
        let held = heldObjects(group)
        let holding = held > 0 ? ", holding \(counted(held, "more object")) in all," : ""
        switch group.shape {
        case .cycle:
            let cycles = counted(group.count, "cycle")
            return
                "\(cycles) of \(counted(objectsPerStructure(group), "object"))\(holding) that nothing reaches (\(byteCount(group.bytes))): \(unreachableChain(group))."
        case .overRetained:
            let objects = counted(group.count, "object")
            return
                "\(objects) of type \(unreachableChain(group))\(holding) retained with no reference left, that nothing reaches (\(byteCount(group.bytes)))."
        }
    }

    /// "1 process checked", or "2 processes checked, 1 not checked" when some could not be (each
    /// named, and why, in `unreachableNotes`).
    public static func processesChecked(_ unreachable: UnreachableObjects) -> String {
        let checked = counted(unreachable.processesChecked, "process", plural: "processes") + " checked"
        return unreachable.unavailable.isEmpty ? checked : "\(checked), \(unreachable.unavailable.count) not checked"
    }

    /// Why some processes were not checked, and that no allocation was watched, as notes: what a
    /// reader of any format must know to trust an empty or stackless list.
    public static func unreachableNotes(_ unreachable: UnreachableObjects) -> [String] {
        var notes = unreachable.unavailable.map { "not checked: \(escaped($0))" }
        let findings = unreachable.groups.filter { !$0.isInternal }
        if !findings.isEmpty && findings.allSatisfy({ $0.allocations.isEmpty }) {
            notes.append("where they were allocated is unknown: no allocation was recorded")
        }
        return notes
    }

    /// `unreachable:` and its groups: each failing group with its allocation stacks, the internal
    /// ones folded into one line, what could not be checked; or one line saying nothing was found.
    /// Suppressed and baselined groups are left to the lines of those sections.
    public func unreachableBlock(_ unreachable: UnreachableObjects, baseline: AuditReport.BaselineComparison?) -> [String] {
        let processes = Self.processesChecked(unreachable)
        let failing = unreachable.failingGroups
        let folded = unreachable.groups.filter(\.isInternal)
        let findings = unreachable.groups.count - folded.count
        var lines: [String] = []
        if findings == 0 && unreachable.processesChecked == 0 {
            // No process checked: nothing is known either way (the notes below say why).
            lines += wrapped("unreachable: not checked")
        } else if findings == 0 {
            lines += wrapped("unreachable: no object of the program's types is unreachable (\(processes))")
        } else if failing.isEmpty {
            // Suppressed or baselined, each listed in its section below.
            lines += wrapped(
                "unreachable: \(counted(findings, "group")) of the program's types, none failing (\(processes))")
        } else {
            let structures = failing.reduce(0) { $0 + $1.count }
            let objects = failing.reduce(0) { $0 + $1.objects }
            let bytes = failing.reduce(0) { $0 + $1.bytes }
            lines += wrapped(
                "unreachable: \(counted(objects, "object")) (\(Self.byteCount(bytes))) that nothing reaches, in \(counted(structures, "structure")) (\(processes))"
            )
        }
        if let first = lines.first, first.hasPrefix("unreachable:") {
            lines[0] = emphasized("unreachable:", as: .heading) + first.dropFirst("unreachable:".count)
        }
        for group in failing {
            var headline = wrapped("  UNREACHABLE " + Self.unreachableHeadline(group))
            headline[0] = "  " + emphasized("UNREACHABLE", as: .failure) + headline[0].dropFirst("  UNREACHABLE".count)
            lines += headline
            if let comparison = Self.baselineComparison(group.status, baseline, unit: "") {
                lines += wrapped("    " + comparison)
            }
            if !group.allocations.isEmpty {
                lines += allocationSites(group.allocations, indent: "    ", typeName: group.path.first?.type ?? "")
            }
        }
        if !folded.isEmpty {
            let objects = folded.reduce(0) { $0 + $1.objects }
            let bytes = folded.reduce(0) { $0 + $1.bytes }
            lines += wrapped(
                "  … \(counted(folded.reduce(0) { $0 + $1.count }, "structure")) of runtime and Foundation types (\(counted(objects, "object")), \(Self.byteCount(bytes))) folded; --format json lists them"
            ).map { emphasized($0, as: .library) }
        }
        lines += Self.unreachableNotes(unreachable).flatMap { wrapped("  " + $0) }
        lines.append("")
        return lines
    }
}
