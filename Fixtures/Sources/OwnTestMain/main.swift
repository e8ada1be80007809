// A program that links XCTest but runs its checks itself and never starts XCTest's run, as a test
// bundle with its own LinuxMain.swift does (a Spectre suite): audited as a program, not as a test
// run in which no test ran. It keeps three checks alive at exit; nothing has a budget.
import XCTest

final class Check {
    var passed = true
}

var checks: [Check] = []
for _ in 0..<3 { checks.append(Check()) }
print("OwnTestMain: \(checks.filter(\.passed).count) checks passed")
