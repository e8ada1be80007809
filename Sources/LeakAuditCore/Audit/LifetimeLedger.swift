/// Replays allocation and deallocation events, in stream order, into exact per-type counts.
///
/// For each type it keeps the instances alive now and remembers which were alive at the type's
/// peak without copying the live set at every new peak: an instance alive at the peak is either
/// still alive (allocated at or before the peak's sequence number) or died since, and those that
/// died since the peak are kept aside until the next peak. Memory stays proportional to the
/// instances alive, and each event costs O(1).
struct LifetimeLedger {
    struct Instance {
        var stackID: UInt32
        var sequence: UInt64
    }

    struct TypeLedger {
        var name: String
        var max: Int
        var budget: WireBudget = .code
        var live: [UInt64: Instance] = [:]
        var peak = 0
        var peakSequence: UInt64 = 0
        var diedSincePeak: [UInt32] = []
        var allocated = 0

        mutating func allocate(_ object: UInt64, _ instance: Instance) {
            allocated += 1
            live[object] = instance
            if live.count > peak {
                peak = live.count
                peakSequence = instance.sequence
                diedSincePeak.removeAll(keepingCapacity: true)
            }
        }

        /// Returns false when `object` was not alive.
        mutating func deallocate(_ object: UInt64) -> Bool {
            guard let instance = live.removeValue(forKey: object) else { return false }
            if instance.sequence <= peakSequence {
                diedSincePeak.append(instance.stackID)
            }
            return true
        }
    }

    private(set) var types: [UInt32: TypeLedger] = [:]
    private(set) var stacks: [UInt32: [UInt64]] = [:]
    private(set) var truncatedStacks: Set<UInt32> = []
    private(set) var modules: [ModuleImage] = []
    /// Events naming a type, stack or object never defined (a damaged stream).
    private(set) var inconsistentEvents = 0
    /// The type of every live object, to retire an object whose address a new allocation reuses.
    private var owners: [UInt64: UInt32] = [:]
    /// Objects whose deallocation was never seen, found when their address was allocated again.
    private(set) var unseenDeallocations = 0

    mutating func apply(_ event: WireEvent) {
        switch event {
        case .typeDefined(let id, let rawName, let max, let budget):
            let name = Self.stableTypeName(rawName)
            if types[id] == nil {
                types[id] = TypeLedger(name: name, max: max, budget: budget)
            } else {
                types[id]?.name = name
                types[id]?.max = max
                types[id]?.budget = budget
            }
        case .stackDefined(let id, let returnAddresses, let truncated):
            stacks[id] = returnAddresses
            if truncated { truncatedStacks.insert(id) }
        case .moduleLoaded(let module):
            modules.append(module)
        case .allocated(let typeID, let object, let stackID, let sequence):
            allocate(typeID: typeID, object: object, instance: Instance(stackID: stackID, sequence: sequence))
        case .deallocated(let typeID, let object, _):
            deallocate(typeID: typeID, object: object)
        }
    }

    private mutating func allocate(typeID: UInt32, object: UInt64, instance: Instance) {
        if types[typeID] == nil {
            inconsistentEvents += 1
        }
        // An address allocated again while its object still counts as alive: that object was
        // freed where no hook saw it. It dies now, or it would hide the new one.
        if let previous = owners.updateValue(typeID, forKey: object) {
            unseenDeallocations += 1
            _ = types[previous]?.deallocate(object)
        }
        types[typeID, default: TypeLedger(name: "<type \(typeID)>", max: Int.max)].allocate(object, instance)
    }

    private mutating func deallocate(typeID: UInt32, object: UInt64) {
        if owners[object] == typeID { owners[object] = nil }
        if types[typeID]?.deallocate(object) != true {
            inconsistentEvents += 1
        }
    }

    /// `App.(unknown context at $55d7f1c0b9dc).Local` as `App.(unknown context).Local`: the runtime
    /// names a type declared inside a function by an address that changes with every run (ASLR),
    /// which would split one type into several across processes and make reports impossible to
    /// compare.
    static func stableTypeName(_ name: String) -> String {
        guard name.contains("(unknown context at $") else { return name }
        var result = ""
        var rest = Substring(name)
        while let range = rest.range(of: "(unknown context at $") {
            result += rest[..<range.lowerBound] + "(unknown context)"
            rest = rest[range.upperBound...]
            rest = rest.drop { $0 != ")" }.dropFirst()
        }
        return result + rest
    }

    /// The stack ids of the instances alive at `type`'s peak, one per instance.
    static func stacksAliveAtPeak(of type: TypeLedger) -> [UInt32] {
        type.live.values.filter { $0.sequence <= type.peakSequence }.map(\.stackID) + type.diedSincePeak
    }
}
