// Substring search over UTF-8 bytes, for the report's hot paths.

extension StringProtocol {
    /// True when `other` occurs in this string, comparing UTF-8 bytes (the same answer as
    /// `contains(_:)` for the ASCII fragments of paths and symbols that reports look for).
    ///
    /// `contains(_:)` from _StringProcessing costs about 15,000 instructions a call, and a report
    /// asks several such questions of every frame of every distinct stack: a report over 1,024
    /// stacks spent most of its time there.
    package func includes(_ other: String) -> Bool {
        var needle = other
        return needle.withUTF8 { needle in
            guard let first = needle.first else { return true }
            let search = { (haystack: UnsafeBufferPointer<UInt8>) -> Bool in
                guard haystack.count >= needle.count else { return false }
                var start = 0
                let last = haystack.count - needle.count
                while start <= last {
                    if haystack[start] == first
                        && UnsafeBufferPointer(rebasing: haystack[start..<(start + needle.count)]).elementsEqual(needle)
                    {
                        return true
                    }
                    start += 1
                }
                return false
            }
            return utf8.withContiguousStorageIfAvailable(search) ?? Array(utf8).withUnsafeBufferPointer(search)
        }
    }
}
