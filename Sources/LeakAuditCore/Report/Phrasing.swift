/// `1 test`, `2 tests`, `1 process`, `3 processes`: a count and its noun, in the number that
/// agrees with it. Every report and message that counts something says it this way.
func counted(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}

/// `counted` for unsigned counts (records, slots).
func counted(_ count: UInt64, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
