// A static `any Error` holds a box (`swift_allocError`) of an error enum's case that has no
// payload, as swift-nio's `static let _outputClosed: any Error = ChannelError.outputClosed`: the
// box's value is the enum's few bytes, and malloc's block runs on past them with whatever it held
// before. LinkErrorTests keeps its link in a property (kept by the test case: reported apart, not
// failing) and the box's bytes past its value hold the link's address. Read word by word, the
// global would hold the link (globals are searched before test cases) and the test be blamed;
// read by its value's type (its size, its case), the box holds nothing. The leaky twin,
// LinkFailureTests, hands its link to a global error whose case holds it: the test's leak, held
// by the global through the box's value (Tests/EndToEndTests/RetainersTests.swift).
import XCTest

final class Link {
    var name = "uplink"
}

/// Multi-payload, as `ChannelError`: one payload case holds a reference, another a plain number
/// (no spare bits, so the tag takes a byte of its own: 9 bytes, a stride of 16).
enum LinkError: Error {
    case timedOut(Int64)
    case refused(Link)
    case outputClosed
}

enum LinkErrors {
    /// One box for every throw.
    static let outputClosed: any Error = LinkError.outputClosed
    nonisolated(unsafe) static var lastFailure: (any Error)?
}

final class LinkErrorTests: XCTestCase {
    var link: Link?

    func testKeepsALinkBesideAStaleErrorBox() {
        let link = Link()
        let address = UInt(bitPattern: Unmanaged.passUnretained(link).toOpaque())
        let error = LinkErrors.outputClosed
        let box = withUnsafeBytes(of: error) { $0.load(as: UnsafeMutableRawPointer.self) }
        // The header, the value's type and its witness table (32 bytes), the value (9 bytes, a
        // stride of 16): the box asked malloc for 48 bytes, and the block (its chunk's size, in
        // the word before it, less that word) has more. Past them, a stale word: the link's address.
        let chunk = box.load(fromByteOffset: -8, as: UInt.self) & ~7
        XCTAssertGreaterThanOrEqual(Int(chunk) - 8, 56, "no word past the box's value")
        box.storeBytes(of: address, toByteOffset: 48, as: UInt.self)
        XCTAssertEqual(box.load(fromByteOffset: 48, as: UInt.self), address)
        self.link = link
    }
}

final class LinkFailureTests: XCTestCase {
    func testKeepsTheRefusedLinkInAGlobalError() {
        LinkErrors.lastFailure = LinkError.refused(Link())
        XCTAssertNotNil(LinkErrors.lastFailure)
    }
}
