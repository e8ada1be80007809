import XCTest

@testable import LeakAuditModel
@testable import LeakAuditPresentation

/// The byte readings of printable ASCII names (PrintableASCIIName) give what the Character
/// readings give: on real names, and on many names made of the pieces the readings look for.
final class PrintableASCIINameTests: XCTestCase {
    /// Names from real reports (Swinject's, swift-log's) and from ReadableTextTests.
    private let realNames = [
        "implicit closure #4 () -> () in implicit closure #3 (SwinjectTests.ContainerTests_CustomStringConvertible) -> () -> () in variable initialization expression of static (extension in SwinjectPackageDiscoveredTests):SwinjectTests.ContainerTests_CustomStringConvertible.(__allTests__ContainerTests_CustomStringConvertible in _1E5C4B2B6A6A2D1F7B0E8D1D6F2C3A4B) : Swift.Array<(Swift.String, (XCTest.XCTestCase) throws -> ())>",
        "reabstraction thunk helper <A, B> from @escaping @callee_guaranteed (@guaranteed @escaping @callee_guaranteed @substituted <A where A: ~Swift.Copyable, A: ~Swift.Escapable> (@in_guaranteed A) -> (@out Any) for <B>) -> (@out Any) to @escaping @callee_guaranteed (@in_guaranteed @escaping @callee_guaranteed @substituted <A, B where A: ~Swift.Copyable, A: ~Swift.Escapable, B: ~Swift.Copyable, B: ~Swift.Escapable> (@in_guaranteed A) -> (@out B) for <BAny>) -> (@out Any)",
        "implicit closure #1 @Sendable () -> Swinject.WeakStorage in variable initialization expression of static Swinject.ObjectScope.weak : Swinject.ObjectScope",
        "closure #1 @Sendable () -> () in closure #3 (() -> ()) -> () in SwinjectTests.SynchronizedResolverTests.testSynchronizedResolverCanMakeItWithoutDeadlock() -> ()",
        "Swinject.Lazy.(makeInstance in _1322F45C1F3F29907E29DDCF5D1D776F)() -> Swift.Optional<A>",
        "Swinject.Assembler.(run in _6BC9021A14E6F9B4DEC5F8BF06E74773)(assemblies: Swift.Array<Swinject.Assembly>) -> ()",
        "Swinject.Lazy.instance.getter : A",
        "partial apply forwarder for reabstraction thunk helper from @escaping @callee_guaranteed () -> (@out ()) to @escaping @callee_guaranteed () -> ()",
        "(3) suspend resume partial function for LoggingTests.LocalLoggerTest.errorAndAbove() async throws -> ()",
        "(1) await resume partial function for App.Loader.load(url: Foundation.URL) async -> ()",
        "Logging.LoggingSystem.(_metadataProviderFactory in _D650F6EB1B9EADA39E73492B4BECA56B).unsafeMutableAddressor : Logging.Box",
        "closure #1 (Swift.String) -> Logging.LogHandler in App.Tests.errorAndAbove() throws -> ()",
        "App.Screen.init(title: Swift.String, onClose: @escaping () -> ()) -> App.Screen",
        "App.(unknown context at $55d7f1c0b9dc).Local.run() -> ()",
        "Logging.(WarnOnceBox in _D650F6EB1B9EADA39E73492B4BECA56B).init() -> Logging.(WarnOnceBox in _D650F6EB1B9EADA39E73492B4BECA56B)",
    ]

    /// The pieces the readings look for, and some that resemble them.
    private let pieces = [
        "(", ")", "<", ">", "[", "]", "->", " -> ", " in _", "D650F6EB", "0a9Z", " in ", " in", "closure #1 ", "closure #",
        "closure ", "#", "12", " @Sendable", " @", "@", "x", "App.f", ",", ", ", ":", " : ", " throws", " async", " async throws",
        "(unknown context at $55d7f1c0b9dc)", "(unknown context at $", "suspend resume partial function for ",
        "await resume partial function for ", " ", "_", ".", "-", "Swift.Int", "label: ",
    ]

    /// A SplitMix64 generator: the same names on every run.
    private struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }

    private func names() -> [String] {
        var generator = SeededGenerator(state: 41)
        var names = realNames
        for _ in 0..<20_000 {
            let count = Int.random(in: 1...14, using: &generator)
            names.append((0..<count).map { _ in pieces.randomElement(using: &generator)! }.joined())
        }
        return names
    }

    func testByteReadingsOfPrintableASCIINamesAreTheCharacterReadings() throws {
        for name in names() {
            let bytes = try XCTUnwrap(PrintableASCIIName.bytes(of: name), name)
            XCTAssertEqual(
                PrintableASCIIName.string(PrintableASCIIName.withoutReturnType(bytes)),
                SwiftName.withoutReturnTypeByCharacter(name), name)
            XCTAssertEqual(
                PrintableASCIIName.string(PrintableASCIIName.withoutPrivateDiscriminators(bytes)),
                SwiftName.withoutPrivateDiscriminatorsByCharacter(name), name)
            XCTAssertEqual(
                PrintableASCIIName.string(PrintableASCIIName.compactSignatures(bytes)), ReadableStack.compactSignatures(name),
                name)
            XCTAssertEqual(ReadableStack.makeReadable(name), ReadableStack.makeReadableByCharacter(name), name)
        }
    }

    func testANameWithAnyOtherCharacterIsReadACharacterAtATime() {
        XCTAssertNil(PrintableASCIIName.bytes(of: "App.caf\u{E9}() -> ()"))
        XCTAssertNil(PrintableASCIIName.bytes(of: "App.f(\u{301}x: Swift.Int) -> ()"))
        XCTAssertNil(PrintableASCIIName.bytes(of: "App.f()\r\n -> ()"))
        // A combining mark after a parenthesis makes one Character of both, which is no
        // parenthesis: the name is read as it always was.
        XCTAssertEqual(ReadableStack.readableFunction("App.f(\u{301}x: Swift.Int) -> ()"), "App.f(\u{301}x: Swift.Int)")
        XCTAssertEqual(SwiftName.withoutReturnType("App.caf\u{E9}(x: Swift.Int) -> ()"), "App.caf\u{E9}(x: Swift.Int)")
    }
}
