// With FIXTURE_PARCEL_IN_FLIGHT set, a Swift Testing test that leaves a courier and its parcel
// holding each other, the courier also held by work it left in flight. Once that work has run
// (300 ms later), nothing reaches the pair. A process whose last test it is waits for the test's
// grace period at its end, and is copied for the walk at exit after that wait: its unreachable
// check finds the pair (before the wait, work in flight still held it).
import Dispatch
import Foundation
import Testing

final class Courier {
    var parcel: Parcel?
}

final class Parcel {
    var courier: Courier?
}

@Suite struct CourierSwiftTests {
    @Test func handsAParcelToWorkInFlight() {
        guard ProcessInfo.processInfo.environment["FIXTURE_PARCEL_IN_FLIGHT"] != nil else { return }
        let courier = Courier()
        let parcel = Parcel()
        courier.parcel = parcel
        parcel.courier = courier
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { _ = courier.parcel }
    }
}
