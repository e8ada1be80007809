// How leak-audit reads the Swift names the runtime and the symbolizer give it: type names made
// comparable across runs, function names without their return types, a type's module. One
// reader for the ledger, the baseline, suppressions and every renderer.

/// Readings of demangled Swift type and function names.
package enum SwiftName {
    /// `App.(unknown context at $55d7f1c0b9dc).Local` as `App.(unknown context).Local`: the runtime
    /// names a type declared inside a function by an address that changes with every run (ASLR),
    /// which would split one type into several across processes and make reports and baselines
    /// impossible to compare.
    package static func stableTypeName(_ name: String) -> String {
        let marker = "(unknown context at $"
        // Most names have none: `includes` answers that without _StringProcessing's search.
        guard name.includes(marker) else { return name }
        var result = ""
        var rest = Substring(name)
        while let range = rest.firstRange(of: marker) {
            result += rest[..<range.lowerBound] + "(unknown context"
            rest = rest[range.upperBound...].drop(while: \.isHexDigit)
        }
        return result + rest
    }

    /// `M.Store.(_cache in _5A3C40C2646077B8D814F0D76D84FE01)` → `M.Store._cache`: a private
    /// declaration's name carries its file's discriminator, which means nothing to a reader.
    package static func withoutPrivateDiscriminators(_ name: String) -> String {
        guard let bytes = PrintableASCIIName.bytes(of: name) else { return withoutPrivateDiscriminatorsByCharacter(name) }
        return PrintableASCIIName.string(PrintableASCIIName.withoutPrivateDiscriminators(bytes))
    }

    /// `withoutPrivateDiscriminators`, a Character at a time: for any name.
    package static func withoutPrivateDiscriminatorsByCharacter(_ name: String) -> String {
        var result = ""
        var rest = Substring(name)
        while let open = rest.firstIndex(of: "(") {
            let inside = rest[rest.index(after: open)...]
            guard let close = inside.firstIndex(of: ")"), let marker = inside[..<close].firstRange(of: " in _"),
                inside[marker.upperBound..<close].allSatisfy(\.isHexDigit)
            else {
                result += rest[...open]
                rest = inside
                continue
            }
            result += rest[..<open] + inside[..<marker.lowerBound]
            rest = inside[inside.index(after: close)...]
        }
        return result + rest
    }

    /// `M.Suite/test()/File.swift:18:6` → `M.Suite/test()`: Swift Testing's test IDs end with the
    /// test's source location, which moves with unrelated edits above it.
    package static func stableTestName(_ name: String) -> String {
        guard let slash = name.lastIndex(of: "/") else { return name }
        let parts = name[name.index(after: slash)...].split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts.suffix(2).allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else { return name }
        return String(name[..<slash])
    }

    /// `A.f(x: Swift.Int) -> Swift.String` without ` -> Swift.String`: only the last arrow at
    /// nesting depth 0 starts the function's return type, so arrows inside parameter lists
    /// (closure parameters) and the signatures of closures and thunks (`closure #1 () -> () in
    /// A.f() -> ()`) are kept up to their enclosing function.
    package static func withoutReturnType(_ function: String) -> String {
        guard let bytes = PrintableASCIIName.bytes(of: function) else { return withoutReturnTypeByCharacter(function) }
        return PrintableASCIIName.string(PrintableASCIIName.withoutReturnType(bytes))
    }

    /// `withoutReturnType`, a Character at a time: for any name.
    package static func withoutReturnTypeByCharacter(_ function: String) -> String {
        var depth = 0
        var lastTopLevelArrow: String.Index?
        var index = function.startIndex
        while index < function.endIndex {
            // An arrow starts with a space: only there is the rest compared with it.
            if function[index] == " " && function[index...].hasPrefix(" -> ") {
                if depth == 0 { lastTopLevelArrow = index }
                index = function.index(index, offsetBy: 4)
                continue
            }
            switch function[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]": depth = max(0, depth - 1)
            default: break
            }
            index = function.index(after: index)
        }
        guard let arrow = lastTopLevelArrow else { return function }
        // The arrow must follow the parameter list of the outermost function, not a closure's
        // signature earlier in the name: `closure #1 () -> () in main.f()` has no return type.
        let tail = function[arrow...]
        if tail.includes(" in ") { return function }
        return String(function[..<arrow])
    }

    /// The module part of a type name (`App` in `App.Box<Swift.Int>`), nil when the name has none.
    package static func moduleName(ofType name: String) -> String? {
        var depth = 0
        for index in name.indices {
            switch name[index] {
            case "(", "<", "[": depth += 1
            case ")", ">", "]": depth = Swift.max(0, depth - 1)
            case "." where depth == 0:
                let module = name[..<index]
                return module.isEmpty || module.contains(where: \.isWhitespace) ? nil : String(module)
            default: break
            }
        }
        return nil
    }
}

extension AuditReport.TrackedType {
    /// Where annotations point: the first source frame of the first (largest) allocation group
    /// that has one.
    package var annotatedFrame: SymbolizedFrame? { allocations.lazy.compactMap { $0.locatedFrame(typeName: name) }.first }

    /// The module part of the name (`App` in `App.Box<Swift.Int>`), nil when the name has none.
    package var moduleName: String? { SwiftName.moduleName(ofType: name) }
}
