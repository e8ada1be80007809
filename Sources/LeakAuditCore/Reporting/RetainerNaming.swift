import LeakAuditModel

/// Turns the paths a process's heap walk found into the report's retainers: roots named by the
/// process's symbols (a global by its variable, a stack slot by its function), steps named as
/// the path read them, and instances with the same path shape grouped.
struct RetainerNaming {
    let symbolizer: any AddressSymbolizer
    let modules: [ModuleImage]
    let walk: HeapWalk.Outcome?

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

    private func retainer(_ path: RetainerSearch.Path, typeName leakedType: String) -> Retainer {
        var steps = path.steps.enumerated().map { index, step in
            Retainer.Step(
                via: index == 0 ? "" : via(step.hold), type: typeName(of: step), isCollectionStorage: step.isCollectionStorage)
        }
        if !steps.isEmpty { steps[steps.count - 1].type = leakedType }
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
        case .cycle:
            let objects = Swift.max(1, path.steps.count - 1)
            root = Retainer.Root(
                kind: .cycle, name: "a cycle of \(objects) object\(objects == 1 ? "" : "s") that nothing else holds")
        case .unknown:
            root = Retainer.Root(
                kind: .unknown,
                name:
                    "no global, stack, thread-local or cycle holds it: held from memory that is not a Swift object, or retained without a reference (Unmanaged.passRetained)"
            )
        }
        if !steps.isEmpty, path.root != .cycle { steps[0].via = root.name }
        return Retainer(count: 1, root: root, path: steps)
    }

    private func via(_ hold: RetainerSearch.Hold) -> String {
        switch hold {
        case .property(let name): name
        case .element(let index): "[\(index)]"
        case .value(let key): key.map { "[\($0)]" } ?? "[key]"
        case .member: "[member]"
        case .capture: "captured"
        case .boxedValue: "captured var"
        case .word: "(memory)"
        }
    }

    private func typeName(of step: RetainerSearch.Step) -> String {
        guard step.type == "closure context", let closure = step.closure,
            let function = symbolizer.symbolize(closure + 1).last?.function
        else { return step.type }
        let name = function.hasPrefix("partial apply for ") ? String(function.dropFirst(18)) : function
        return "context of \(SwiftName.withoutReturnType(name))"
    }

    /// `App.router` for the variable whose storage holds `slot`, else the image and offset.
    private func variableName(at slot: UInt64) -> String {
        if let name = symbolizer.variable(at: slot) {
            // `App.router : App.AppRouter` names the variable and then its type.
            let variable = name.components(separatedBy: " : ").first ?? name
            // `static App.Store.shared` is still a global: its storage outlives every instance.
            return variable.hasPrefix("static ") ? String(variable.dropFirst(7)) : variable
        }
        guard let module = modules.first(where: { $0.contains(slot) }) else { return "0x" + String(slot, radix: 16) }
        let file = module.path.split(separator: "/").last.map(String.init) ?? module.path
        return "\(file)+0x\(String(slot &- module.loadBias, radix: 16))"
    }

    private func functionName(_ address: UInt64, innermost: Bool) -> String {
        // symbolize takes a return address and looks up the call before it.
        let frames = symbolizer.symbolize(innermost ? address + 1 : address)
        guard let function = frames.last?.function else { return "0x" + String(address, radix: 16) }
        return SwiftName.withoutReturnType(function)
    }

    /// Retainers with the same root and steps (array indexes and dictionary keys aside) as one,
    /// counts added; most instances first. A step whose index or key differs within a group
    /// reads `[i]` or `[key]`.
    static func grouped(_ retainers: [Retainer]) -> [Retainer] {
        struct Shape: Hashable {
            var root: Retainer.Root
            var path: [Retainer.Step]
        }
        func shape(_ retainer: Retainer) -> Shape {
            Shape(
                root: retainer.root,
                path: retainer.path.map { step in
                    var step = step
                    if step.via.hasPrefix("[") && step.via.hasSuffix("]") {
                        step.via = step.via.dropFirst().first.map { $0.isNumber } == true ? "[i]" : "[key]"
                    }
                    return step
                })
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
}
