package metawatch

// PageSize is pageSize, for the tests to lower.
var PageSize = &pageSize

// CompareAlternating is compareAlternating, for the benchmarks against
// an API server.
var CompareAlternating = compareAlternating
