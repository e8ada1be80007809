import FoundationEssentials
import LeakAuditModel
import LeakAuditPresentation

/// Turns the paths a process's heap walk found into the report's retainers: roots named by the
/// process's symbols (a global by its variable, a stack slot by its function), steps named as
/// the path read them, and instances with the same path shape grouped.
struct RetainerNaming {
    let symbolizer: any AddressSymbolizer
    let modules: [ModuleImage]
    /// The process's walk at exit.
    let walk: HeapWalks.Outcome?
    /// Paths found when tests settled, for the instances they left.
    var afterTests: [HeapWalks.Instance: RetainerSearch.Path] = [:]
    /// Why instances tests left have no path from when their tests settled.
    var afterTestsUnavailable: [HeapWalks.Instance: String] = [:]
    /// The instances tests left that the walk when their test settled did not find alive.
    var deadWhenTestsSettled: Set<HeapWalks.Instance> = []

    /// True when the walk made when `leak`'s test settled did not find it among the live objects
    /// of its copy: it was released by then.
    func wasDeadWhenItsTestSettled(_ leak: LifetimeLedger.Leak) -> Bool {
        deadWhenTestsSettled.contains(HeapWalks.Instance(object: leak.object, sequence: leak.sequence))
    }

    /// The retainers of the instances a test left: from the walk when it settled, else from the
    /// walk at exit for those still alive then; and why the others have none, with how many.
    func retainers(ofLeaks leaks: [LifetimeLedger.Leak], aliveAtExit: (LifetimeLedger.Leak) -> Bool, typeName: String)
        -> (retainers: [Retainer], unavailable: [String])
    {
        var found: [Retainer] = []
        var atExit: [UInt64] = []
        var reasons: [String: Int] = [:]
        var order: [String] = []
        for leak in leaks {
            let instance = HeapWalks.Instance(object: leak.object, sequence: leak.sequence)
            if let path = afterTests[instance] {
                found.append(retainer(path, typeName: typeName))
            } else if aliveAtExit(leak) {
                atExit.append(leak.object)
            } else {
                let reason =
                    afterTestsUnavailable[instance].map { "when its test settled, \($0)" }
                    ?? "it was not walked when its test settled (its process ended within the grace period, or was not walked), and was released before its process exited"
                if reasons[reason] == nil { order.append(reason) }
                reasons[reason, default: 0] += 1
            }
        }
        let exit = retainers(of: atExit, typeName: typeName)
        let unavailable = order.map { reason in
            let count = reasons[reason] ?? 0
            return "\(count) instance\(count == 1 ? "" : "s"): \(reason)"
        }
        return (Self.grouped(found + exit.retainers), unavailable + exit.unavailable)
    }

    /// True when the path found for `leak` (when its test settled, else at exit if it was alive
    /// then) starts at a test case object that XCTest keeps: see `RetainerSearch.Root.testCase`.
    func isKeptByTestCase(_ leak: LifetimeLedger.Leak, aliveAtExit: (LifetimeLedger.Leak) -> Bool) -> Bool {
        guard case .testCase? = path(of: leak, aliveAtExit: aliveAtExit)?.root else { return false }
        return true
    }

    /// The path found for `leak`: when its test settled, else at exit if it was alive then.
    func path(of leak: LifetimeLedger.Leak, aliveAtExit: (LifetimeLedger.Leak) -> Bool) -> RetainerSearch.Path? {
        if let path = afterTests[HeapWalks.Instance(object: leak.object, sequence: leak.sequence)] { return path }
        guard aliveAtExit(leak), case .searched(let paths)? = walk else { return nil }
        return paths[leak.object]
    }

    /// The retainers of `instances` (of type `typeName`), most instances first, and why some
    /// have none.
    func retainers(of instances: some Sequence<UInt64>, typeName: String) -> (retainers: [Retainer], unavailable: [String]) {
        let instances = Array(instances)
        guard !instances.isEmpty else { return ([], []) }
        switch walk {
        case nil:
            return (
                [],
                [
                    "the process did not exit normally (it crashed, was killed or called _exit), so who held its instances is unknown"
                ]
            )
        case .failed(let reason)?:
            return ([], [reason])
        case .searched(let paths)?:
            var found: [Retainer] = []
            var missing = 0
            for instance in instances {
                guard let path = paths[instance] else {
                    missing += 1
                    continue
                }
                found.append(retainer(path, typeName: typeName))
            }
            let unavailable =
                missing > 0
                ? ["\(missing) instance\(missing == 1 ? " was" : "s were") no longer alive when the heap was walked"] : []
            return (Self.grouped(found), unavailable)
        }
    }

    /// The steps of an unreachable structure's path (a cycle round from its first object, or an
    /// object alone), named as a retainer's are.
    func unreachablePath(_ path: RetainerSearch.Path) -> (steps: [Retainer.Step], omittedSteps: Int, omittedAfter: Int) {
        var cycle = path
        cycle.root = .cycle
        let named = retainer(cycle, typeName: nil)
        return (named.path, named.omittedSteps, named.omittedAfter)
    }

    /// `path` as a retainer; `leakedType` names its last step (the instance's type), else the
    /// walk's name for it stays.
    private func retainer(_ path: RetainerSearch.Path, typeName leakedType: String?) -> Retainer {
        var steps: [Retainer.Step] = []
        var omittedAfter = 0
        for (index, step) in path.steps.enumerated() {
            // A long path's omitted steps lie before this one: it follows no step shown.
            if path.omittedSteps > 0, index == RetainerSearch.Path.keptAtEachEnd { omittedAfter = steps.count }
            let follows = path.omittedSteps == 0 || index != RetainerSearch.Path.keptAtEachEnd
            // An enum on the way is a step of its own: `state` holds a `LoadState`, whose case
            // `.loading` holds the object.
            var enumCase: RetainerSearch.EnumCase? = nil
            if case .property(_, let found?) = step.hold { enumCase = found }
            if case .element(_, let found?) = step.hold { enumCase = found }
            if index > 0, let enumCase {
                steps.append(Retainer.Step(via: via(step.hold), type: enumCase.type))
                steps.append(Retainer.Step(via: "." + enumCase.name, type: typeName(of: step)))
                continue
            }
            var how = index == 0 ? "" : via(step.hold)
            if step.hold == .capture, index > 0, follows, let closure = path.steps[index - 1].closure,
                let variable = capturedVariable(closure: closure, holding: step.type)
            {
                how = "captured " + variable
            }
            if index > 0, step.type != "closure context", let closure = step.closure, let name = closureName(closure),
                !name.includes("thunk")
            {
                // The object is a closure's whole context: the closure is a step of its own.
                steps.append(Retainer.Step(via: how, type: ReadableStack.readableFunction(Self.withoutPartialApply(name))))
                let variable = capturedVariable(closure: closure, holding: step.type)
                how = variable.map { "captured " + $0 } ?? "captured"
            }
            steps.append(Retainer.Step(via: how, type: typeName(of: step), isCollectionStorage: step.isCollectionStorage))
        }
        if !steps.isEmpty, let leakedType { steps[steps.count - 1].type = leakedType }
        let root: Retainer.Root
        switch path.root {
        case .global(let slot):
            root = Retainer.Root(kind: .global, name: variableName(at: slot))
        case .threadLocal(_, let thread):
            root = Retainer.Root(kind: .threadLocal, name: "thread-local storage", thread: thread)
        case .stack(_, let thread, let function, let innermost):
            root = Retainer.Root(kind: .stack, name: functionName(function, innermost: innermost), thread: thread)
        case .register(_, let thread, let function):
            root = Retainer.Root(kind: .register, name: functionName(function, innermost: true), thread: thread)
        case .task(let functions):
            // Else by the first closure it holds that has a name of the program's.
            let held = path.steps.lazy.compactMap(\.closure).compactMap(closureName).first { !$0.includes("thunk") }
            let name = taskName(functions)
            root = Retainer.Root(
                kind: .task,
                name: name.isEmpty ? held.map { ReadableStack.readableFunction(Self.withoutPartialApply($0)) } ?? "" : name)
        case .testCase:
            root = Retainer.Root(kind: .testCase, name: path.steps.first?.type ?? "")
        case .heldByCycle(let members):
            root = Retainer.Root(
                kind: .cycle,
                name:
                    "a cycle of \(members) object\(members == 1 ? "" : "s") that nothing else holds\(Self.untypedWord(path)), through"
            )
        case .cycle:
            let objects = Swift.max(1, path.steps.count + path.omittedSteps - 1)
            root = Retainer.Root(
                kind: .cycle,
                name: "a cycle of \(objects) object\(objects == 1 ? "" : "s") that nothing else holds\(Self.untypedWord(path))")
        case .memory(let bytes, let isMallocBlock):
            root = Retainer.Root(kind: .memory, name: Self.untypedMemory(bytes: bytes, isMallocBlock: isMallocBlock))
        case .unreferenced:
            root = Retainer.Root(
                kind: .unknown,
                name:
                    "nothing: unreachable (no global, stack, register, task, cycle or untyped memory holds it), over-retained or retained without a reference (Unmanaged.passRetained)"
            )
        case .unknown:
            root = Retainer.Root(
                kind: .unknown,
                name:
                    "nothing the walk could find (no global, stack, thread-local storage, task or cycle), and memory that is not a Swift object could not be read (malloc's heap was not walked: another allocator)"
            )
        }
        if !steps.isEmpty, path.root != .cycle { steps[0].via = root.name }
        return Retainer(
            count: 1, root: root, path: steps, retainedBytes: path.insideAnotherInstance ? 0 : path.retainedBytes,
            omittedSteps: path.omittedSteps, omittedAfter: omittedAfter)
    }

    /// ` but a word in untyped memory (a malloc block of 40 bytes)` for a cycle that only untyped
    /// memory also reaches, whose word may be stale: the cycle keeps it whatever that word is.
    private static func untypedWord(_ path: RetainerSearch.Path) -> String {
        guard case .memory(let bytes, let isMallocBlock)? = path.alsoPointedAtFrom else { return "" }
        return " but a word in untyped memory (\(untypedMemory(bytes: bytes, isMallocBlock: isMallocBlock)))"
    }

    /// `a malloc block of 40 bytes`, or `a mapping of 8388608 bytes outside malloc's heap`.
    private static func untypedMemory(bytes: Int, isMallocBlock: Bool) -> String {
        isMallocBlock ? "a malloc block of \(bytes) bytes" : "a mapping of \(bytes) bytes outside malloc's heap"
    }

    /// The variable a closure captured that holds an object of type `type`: the closure's one
    /// parameter of that type in its debug information (a closure's captures are its trailing
    /// parameters), or its only parameter; nil when that is not one name.
    private func capturedVariable(closure: UInt64, holding type: String) -> String? {
        let parameters = symbolizer.closureParameters(at: closure)
        let simpleName = type.split(separator: ".").last.map(String.init) ?? type
        let matching = parameters.filter { parameter in
            guard let parameterType = parameter.type else { return false }
            return parameterType == type || parameterType == simpleName || parameterType.hasSuffix("." + simpleName)
        }
        if matching.count == 1 { return matching[0].name }
        return parameters.count == 1 ? parameters[0].name : nil
    }

    /// The closure whose code (or, for an async closure, whose async function pointer) is at
    /// `address`. Any other variable there is no closure's: the word beside a context that the
    /// walk took for its code was some other constant (an empty array's storage), and the context
    /// stays unnamed.
    private func closureName(_ address: UInt64) -> String? {
        if let function = symbolizer.symbolize(address + 1).last?.function { return function }
        let prefix = "async function pointer to "
        guard let variable = symbolizer.variable(at: address), variable.hasPrefix(prefix) else { return nil }
        return String(variable.dropFirst(prefix.count))
    }

    /// A task by the closure it runs: the first of its code addresses that names a function of
    /// the program rather than a thunk, without the resume-point prefix.
    private func taskName(_ functions: [UInt64]) -> String {
        // Where the task resumes (an async function's partial function) names what it runs. A
        // closure's code found before that may be a value it holds and did not start with: the
        // task-local values a task copies from the task that made it lie before its own frames
        // (Swift Testing's runner's closures, in every task a test makes).
        var first: String? = nil
        for address in functions {
            guard let name = symbolizer.symbolize(address + 1).last?.function, !name.includes("thunk") else { continue }
            let parts = name.components(separatedBy: "partial function for ")
            if parts.count > 1 {
                return ReadableStack.readableFunction(
                    Self.withoutPartialApply(parts.dropFirst().joined(separator: "partial function for ")))
            }
            if first == nil { first = name }
        }
        return first.map { ReadableStack.readableFunction(Self.withoutPartialApply($0)) } ?? ""
    }

    private func via(_ hold: RetainerSearch.Hold) -> String {
        switch hold {
        // A `lazy var`'s storage is named after the property the code declares.
        case .property(let name, _): name.hasPrefix("$__lazy_storage_$_") ? String(name.dropFirst(18)) : name
        // -1: indexes that differ among the structures of an unreachable group.
        case .element(let index, _): index < 0 ? "[i]" : "[\(index)]"
        case .value(let key): key.map { "[\($0)]" } ?? "[key]"
        case .member: "[member]"
        case .capture: "captured"
        case .boxedValue: "captured var"
        case .word: "(in its memory)"
        }
    }

    private func typeName(of step: RetainerSearch.Step) -> String {
        guard step.type == "closure context", let closure = step.closure, let function = closureName(closure)
        else { return step.type }
        // The code beside a context is often a thunk the compiler made, not the closure itself.
        guard !function.includes("thunk") else { return step.type }
        return "context of \(ReadableStack.readableFunction(Self.withoutPartialApply(function)))"
    }

    /// A closure's name without the compiler's `partial apply forwarder for`.
    private static func withoutPartialApply(_ function: String) -> String {
        var name = function
        for prefix in ["partial apply forwarder for ", "partial apply for "] where name.hasPrefix(prefix) {
            name = String(name.dropFirst(prefix.count))
        }
        return name
    }

    /// The name of the global `path` starts at; nil when it starts elsewhere.
    func globalName(of path: RetainerSearch.Path) -> String? {
        guard case .global(let slot) = path.root else { return nil }
        return variableName(at: slot)
    }

    /// `App.router` for the variable whose storage holds `slot`, else the image and offset.
    private func variableName(at slot: UInt64) -> String {
        if let name = symbolizer.variable(at: slot) {
            // `App.router : App.AppRouter` names the variable and then its type.
            let variable = name.components(separatedBy: " : ").first ?? name
            // `static App.Store.shared` is still a global: its storage outlives every instance.
            return SwiftName.withoutPrivateDiscriminators(
                variable.hasPrefix("static ") ? String(variable.dropFirst(7)) : variable)
        }
        guard let module = modules.first(where: { $0.contains(slot) }) else { return "0x" + String(slot, radix: 16) }
        let file = module.path.split(separator: "/").last.map(String.init) ?? module.path
        return "\(file)+0x\(String(slot &- module.loadBias, radix: 16))"
    }

    private func functionName(_ address: UInt64, innermost: Bool) -> String {
        // symbolize takes a return address and looks up the call before it. A stopped thread's
        // instruction pointer is the target's: the last address has no instruction after it.
        let frames = symbolizer.symbolize(innermost ? address &+ 1 : address)
        guard let function = frames.last?.function else { return "0x" + String(address, radix: 16) }
        return ReadableStack.readableFunction(function)
    }

    /// Retainers with the same root and steps (array indexes and dictionary keys aside) as one,
    /// counts added; most instances first. A step whose index or key differs within a group
    /// reads `[i]` or `[key]`.
    static func grouped(_ retainers: [Retainer]) -> [Retainer] {
        struct Shape: Hashable {
            var root: Retainer.Root
            var path: [Retainer.Step]
            var omittedSteps: Int
            var omittedAfter: Int
        }
        func shape(_ retainer: Retainer) -> Shape {
            Shape(
                root: retainer.root, path: anyIndexOrKey(retainer.path), omittedSteps: retainer.omittedSteps,
                omittedAfter: retainer.omittedAfter)
        }
        var groups: [Shape: Retainer] = [:]
        var order: [Shape] = []
        for retainer in retainers {
            let key = shape(retainer)
            guard var group = groups[key] else {
                groups[key] = retainer
                order.append(key)
                continue
            }
            group.count += retainer.count
            group.retainedBytes += retainer.retainedBytes
            for index in group.path.indices where group.path[index].via != retainer.path[index].via {
                group.path[index].via = key.path[index].via
            }
            groups[key] = group
        }
        return order.compactMap { groups[$0] }.enumerated().sorted {
            ($1.element.count, $0.offset) < ($0.element.count, $1.offset)
        }
        .map(\.element)
    }

    /// `path` with its array indexes read `[i]` and its dictionary keys `[key]`: the shape that
    /// groups are made by.
    static func anyIndexOrKey(_ path: [Retainer.Step]) -> [Retainer.Step] {
        path.map { step in
            var step = step
            if step.via.hasPrefix("[") && step.via.hasSuffix("]") {
                step.via = step.via.dropFirst().first.map { $0.isNumber } == true || step.via == "[i]" ? "[i]" : "[key]"
            }
            return step
        }
    }
}
