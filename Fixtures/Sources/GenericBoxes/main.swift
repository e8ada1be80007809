// Generic types: Box<Int> and Box<String> are budgeted separately. The leaky version keeps three
// Box<String> alive (over its budget of two) and two Box<Int> (within it); the clean twin keeps
// two of each.
import LeakMonitor

final class Box<Value>: MemoryLeakMonitorable {
    var max: Int { 2 }
    let value: Value
    init(_ value: Value) {
        self.value = value
        MemoryLeakMonitor.validate(self)
    }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let numbers = [Box(1), Box(2)]
let words = (0..<(leaky ? 3 : 2)).map { Box("word \($0)") }
print("GenericBoxes: \(numbers.count) numbers, \(words.count) words")
